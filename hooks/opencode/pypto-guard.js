// OpenCode plugin: the hard gates of hooks/hooks.json for OpenCode (installed by scripts/install.py
// into .opencode/plugins/, auto-loaded from there). It calls the very same hook scripts:
// - tool.execute.before -> hooks/guard_frozen_inputs.py; exit 0 allows, anything else blocks
//   (the thrown error's message is what the model sees). Fails closed: no interpreter, a crash or a
//   timeout blocks the call.
// - tool.execute.after -> hooks/stage4_gates_after_edit.py after an edit; a failing Stage 4 gate
//   is appended to the tool output (the edit has happened; nothing is undone).
// Tool arguments are translated to the Claude Code hook event the scripts read.
// Interpreter: python3, or the PYPTO_PYTHON environment variable (docs/hosts.md).
import { spawnSync } from "node:child_process";

const ROOT = "${CLAUDE_PLUGIN_ROOT}";
const GUARD = `${ROOT}/hooks/guard_frozen_inputs.py`;
const AFTER = `${ROOT}/hooks/stage4_gates_after_edit.py`;
const EDITS = { edit: "Edit", write: "Write", multiedit: "MultiEdit" };
const PATCHES = new Set(["patch", "apply_patch"]);
const PATCH_FILE = /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm;

export function hookEvents(tool, args, cwd) {
  const name = String(tool || "").toLowerCase();
  const a = args || {};
  if (name === "bash") return [{ tool_name: "Bash", tool_input: { command: String(a.command ?? "") } }];
  if (EDITS[name]) {
    const path = a.filePath ?? a.file_path ?? a.path;
    return [{ tool_name: EDITS[name], tool_input: { file_path: path == null ? "" : String(path) } }];
  }
  if (PATCHES.has(name)) {
    const text = String(a.patchText ?? a.patch ?? a.input ?? "");
    return [...text.matchAll(PATCH_FILE)].map((m) => ({ tool_name: "Edit", tool_input: { file_path: m[1].trim() } }));
  }
  return [];
}

export function runHook(script, event, timeoutMs = 15000) {
  const interpreter = process.env.PYPTO_PYTHON || "python3";
  const proc = spawnSync(interpreter, [script], { input: JSON.stringify(event), encoding: "utf8", timeout: timeoutMs });
  if (proc.error) {
    return { code: 2, message: `blocked: the guard could not run (${interpreter}: ${proc.error.code || proc.error.message}); ` +
      "install Python 3 or set PYPTO_PYTHON" };
  }
  const message = (proc.stderr || "").trim();
  return { code: proc.status === null ? 2 : proc.status, message: message || `blocked: guard exit ${proc.status}` };
}

async function isSubagent(client, sessionID) {
  try {
    const res = await client.session.get({ path: { id: sessionID } });
    return Boolean((res && (res.data || res)).parentID);
  } catch {
    return false;
  }
}

export default async function PyptoGuard({ directory, client }) {
  return {
    "tool.execute.before": async (input, output) => {
      const events = hookEvents(input.tool, output.args, directory);
      if (!events.length) return;
      const agent = client && input.sessionID && (await isSubagent(client, input.sessionID)) ? input.sessionID : undefined;
      for (const event of events) {
        const result = runHook(GUARD, { ...event, hook_event_name: "PreToolUse", cwd: directory, agent_id: agent });
        if (result.code !== 0) throw new Error(result.message);
      }
    },
    "tool.execute.after": async (input, output) => {
      for (const event of hookEvents(input.tool, input.args, directory)) {
        if (event.tool_name === "Bash") continue;
        const result = runHook(AFTER, { ...event, hook_event_name: "PostToolUse", cwd: directory }, 180000);
        if (result.code !== 0) output.output = `${output.output ?? ""}\n\n${result.message}`;
      }
    },
  };
}
