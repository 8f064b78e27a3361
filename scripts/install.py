#!/usr/bin/env python3
"""Install the plugin into another agent host's config root (CANNBot style), or remove it again.

Copies agents, skills, commands, references, hooks, scripts and schemas (as listed in the root
plugin.json) to <config root>/pypto-pro-op-orchestrator/, plus the agents, skills, commands and
references into the host's own discovery folders; renders ${CLAUDE_PLUGIN_ROOT} in .md/.json to
that install root; moves any different existing file to <file>.bak.<stamp> instead of
overwriting it; records everything in <config root>/cannbot-manifest.json. --uninstall removes
unchanged installed files, restores the backups and keeps files you edited after installing.
Config roots: claude .claude | opencode .opencode (global ~/.config/opencode) | cursor .cursor |
trae .trae | copilot .github (global ~/.copilot) | codearts .codeartsdoer. Claude Code users
should prefer the native plugin (claude --plugin-dir / marketplace): only that registers the hooks.

usage:
  install.py --host HOST [--level project|global] [--dest DIR] [--json]
  install.py --host HOST [--level project|global] [--dest DIR] --uninstall [--json]

example:
  python3 scripts/install.py --host opencode --level project --dest ~/work/my-ops

exit codes: 0 done, 2 usage/contract error (unknown host, nothing to uninstall, foreign manifest).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

from perftune import fsio
from perftune.orchestrate import install as installer
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import run_cli

PLUGIN_ROOT = Path(__file__).resolve().parent.parent


def build_parser():
    parser = parser_from_doc(__doc__, "install.py")
    parser.add_argument("--host", required=True, choices=sorted(installer.HOSTS))
    parser.add_argument("--level", choices=installer.LEVELS, default="project",
                        help="project: <dest>/<host folder>; global: <home>/<host folder> (default project)")
    parser.add_argument("--dest", type=path_arg, help="project directory (project) or home directory (global); "
                                       "default: the current directory / your home")
    parser.add_argument("--uninstall", action="store_true", help="remove a previous install and restore backups")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    dest = Path(args.dest).expanduser().resolve() if args.dest else (
        Path.cwd() if args.level == "project" else Path.home())
    if args.uninstall:
        result = installer.uninstall(host=args.host, level=args.level, dest=dest)
        summary = (f"uninstalled from {result['config_root']}: {result['removed']} files removed, "
                   f"{len(result['restored'])} backups restored, {len(result['kept_modified'])} edited files kept")
    else:
        meta = fsio.read_json(PLUGIN_ROOT / "plugin.json", what="CANNBot manifest")
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        result = installer.install(PLUGIN_ROOT, meta, host=args.host, level=args.level, dest=dest, stamp=stamp)
        backups = sum(1 for f in result["files"] if f["backup"])
        summary = (f"installed {meta['name']} {meta['version']} for {args.host} into {result['brand_dir']}: "
                   f"{len(result['files'])} files, {backups} existing files backed up")
    print(fsio.dumps(result) if args.json else summary, end="" if args.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
