"""Every `${CLAUDE_PLUGIN_ROOT}/scripts/X.py ...` shown in the prompts exists with exactly those flags.

The invocations are extracted from every .md under agents/, commands/, skills/ and references/.
Two checks: (1) against the interface list agreed for the agent layer (offline, catches typos in
the prompts), (2) against the real parsers, by running `python scripts/X.py [sub] --help` and reading
the flags of its options section (fails until the script exists: that is the point).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import ROOT, SCRIPTS

PROMPT_DIRS = ("agents", "commands", "skills", "references")
INVOCATION = re.compile(r"\$\{CLAUDE_PLUGIN_ROOT\}/scripts/([A-Za-z0-9_]+\.py)([^`\n]*)")
PLACEHOLDER = "<any>"

# The agreed interface (brief of issue 7 + the real ledger/select_best parsers): script -> sub -> flags.
# Scripts without sub-commands use the key None.
AGREED: dict[str, dict[str | None, set[str]]] = {
    "freeze_cases.py": {
        "freeze": {"--op-dir", "--target-case-ids", "--selection-mode", "--backend", "--op-name",
                   "--device", "--warmup", "--repeats", "--noise-band", "--replace", "--remeasure-budget-s",
                   "--json"},
        "validate": {"--op-dir", "--json"}, "show": {"--op-dir", "--json"}},
    "collect_golden_reference.py": {None: {"--function", "--factory", "--case-manifest", "--output-dir",
                                           "--device", "--warmup", "--repeats", "--seed", "--backend", "--json"}},
    "collect_perf.py": {"preflight": {"--op-dir", "--json"}, "list-op-names": {"--op-dir", "--case-id", "--backend", "--device", "--json"},
                        "formal": {"--op-dir", "--retry", "--paired-with", "--json"}, "quick": {"--op-dir", "--paired-with", "--json"}},
    "compare_perf.py": {"formal": {"--op-dir", "--baseline", "--candidate", "--json"},
                        "quick": {"--op-dir", "--baseline", "--quick", "--json"}},
    "check_correctness.py": {None: {"--op-dir", "--json"}},
    "tune.py": {"run": {"--op-dir", "--item", "--json"},
                "declare": {"--op-dir", "--item", "--param", "--sampler", "--seed", "--budget", "--batch",
                            "--hypothesis", "--metric", "--actor", "--json"}},
    "ledger.py": {
        "init": {"--op-dir", "--sources-dir", "--json"}, "show": {"--op-dir", "--json"},
        "close-gated": {"--op-dir", "--json"},
        "add": {"--op-dir", "--item-id", "--title", "--evidence-file", "--expected-metric", "--hypothesis", "--json"},
        "update": {"--op-dir", "--item", "--status", "--reason-code", "--quick", "--correctness",
                   "--restore-point", "--note", "--hypothesis", "--expected-metric", "--applicability",
                   "--grounds", "--code-ref", "--formal", "--mechanism", "--relation", "--json"},
        "reopen": {"--op-dir", "--item", "--by", "--note", "--json"},
        "sweep": {"--op-dir", "--scope", "--examined", "--json"}},
    "ledger_check.py": {None: {"--op-dir", "--json"}},
    "select_best.py": {"record": {"--op-dir", "--version-id", "--round", "--items", "--correctness", "--compliance",
                                  "--json"},
                       "choose": {"--op-dir", "--json"}, "confirm": {"--op-dir", "--final-round", "--json"},
                       "restore": {"--op-dir", "--version", "--json"}},
    "perf_next.py": {None: {"--op-dir", "--overlap", "--json"}},
    "perf_report.py": {None: {"--op-dir", "--json"}},
    "stage4_gates.py": {None: {"--op-dir", "--json"}},
    "stage5_check.py": {None: {"--op-dir", "--target-case-ids", "--selection-mode", "--remeasure", "--no-remeasure",
                               "--json"}},
    "orchestrator_state.py": {PLACEHOLDER: {"--op-dir", "--actor"}, "show": {"--op-dir", "--json"},
                              "confirm_stage5_entry": {"--op-dir", "--actor", "--authorization", "--evidence",
                                                       "--target-case-ids", "--selection-mode"}},
    "validate_stage.py": {None: {"--op-dir", "--op", "--json"}},
    "new_operator.py": {None: {"--op", "--dir", "--json"}},
    "env_check.py": {None: {"--json"}},
    "docs_search.py": {None: {"--json", "--check"}},
    "demo.py": {None: {"--workdir", "--json", "--keep", "--op-dir", "--example"}},
    "terminal_evidence.py": {"build": {"--op-dir", "--round", "--platform", "--output", "--json"},
                             "probe": {"--output", "--json"}},
    "cases.py": {None: {"--op-type", "--bound", "--json"}},
    "instruction_timeline.py": {"collect": {"--op-dir", "--round", "--source", "--json"}},
}


def prompt_files() -> list[Path]:
    return sorted(p for d in PROMPT_DIRS for p in (ROOT / d).rglob("*.md"))


def extract(text: str) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """(script, sub-command or None/PLACEHOLDER, flags) for each invocation in ``text``."""
    text = re.sub(r"\\\n\s*", " ", text)                 # join shell line continuations
    found = []
    for script, rest in INVOCATION.findall(text):
        tokens = shlex.split(rest.replace("`", " "))
        subs = AGREED.get(script, {})
        sub = None
        if tokens and not tokens[0].startswith("-") and None not in subs:
            sub = PLACEHOLDER if tokens[0].startswith("<") else tokens[0]
        flags = tuple(t.split("=", 1)[0] for t in tokens if t.startswith("--"))
        found.append((script, sub, flags))
    return found


INVOCATIONS = [(path.relative_to(ROOT).as_posix(), *inv) for path in prompt_files()
               for inv in extract(path.read_text(encoding="utf-8"))]


def test_the_prompts_show_a_small_exact_set_of_invocations():
    assert 25 <= len(INVOCATIONS) <= 70, len(INVOCATIONS)  # five skills, six agents, five commands
    scripts = {script for _, script, _, _ in INVOCATIONS}
    assert scripts == set(AGREED), scripts ^ set(AGREED)


@pytest.mark.parametrize("where,script,sub,flags", INVOCATIONS,
                         ids=[f"{w}:{s}:{c}" for w, s, c, _ in INVOCATIONS])
def test_invocation_matches_the_agreed_interface(where, script, sub, flags):
    assert script in AGREED, f"{where}: unknown script {script}"
    assert sub in AGREED[script], f"{where}: {script} has no sub-command {sub!r}"
    unknown = set(flags) - AGREED[script][sub]
    assert not unknown, f"{where}: {script} {sub or ''} does not take {sorted(unknown)}"


@lru_cache(maxsize=None)
def help_text(script: str, *sub: str) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPTS / script), *sub, "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} {' '.join(sub)} --help failed: {proc.stderr.strip()[-300:]}"
    return proc.stdout


def subcommands(help_out: str) -> set[str]:
    """The sub-parser choices: a ``{a,b}`` positional in the usage line (option choices follow a flag)."""
    usage = help_out.split("\n\n", 1)[0]
    match = re.search(r"(?:^usage: \S+|\])\s+\{([A-Za-z0-9_,-]+)\}", usage)
    return set(match.group(1).split(",")) if match else set()


def option_flags(help_out: str) -> set[str]:
    """Flags defined in the options section(s), not flags mentioned in the description."""
    sections = re.split(r"^(?:options|optional arguments):\s*$", help_out, flags=re.M)[1:]
    return set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", "\n".join(sections)))


def grouped() -> dict[tuple[str, str | None], set[str]]:
    groups: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for _, script, sub, flags in INVOCATIONS:
        groups[(script, sub)].update(flags)
    return groups


GROUPS = sorted(grouped().items(), key=lambda kv: (kv[0][0], str(kv[0][1])))


@pytest.mark.parametrize("key,flags", GROUPS, ids=[f"{s}:{c}" for (s, c), _ in GROUPS])
def test_invocation_is_accepted_by_the_real_parser(key, flags):
    script, sub = key
    assert (SCRIPTS / script).is_file(), f"scripts/{script} does not exist (yet)"
    top = help_text(script)
    if sub is None:
        accepted = option_flags(top)
    else:
        subs = subcommands(top)
        targets = sorted(subs - {"show"}) if sub == PLACEHOLDER else [sub]
        assert targets and set(targets) <= subs, f"{script}: sub-command {sub} not in {sorted(subs)}"
        with ThreadPoolExecutor(max_workers=4) as pool:
            helps = list(pool.map(lambda t: help_text(script, t), targets))
        accepted = set.intersection(*map(option_flags, helps))
    assert set(flags) <= accepted, f"{script} {sub or ''}: flags {sorted(set(flags) - accepted)} not accepted"


def test_extractor_reads_continuations_placeholders_and_quotes():
    text = ("```bash\npython ${CLAUDE_PLUGIN_ROOT}/scripts/ledger.py sweep --op-dir D \\\n"
            "    --scope \"a b\" --examined x y\n```\n"
            "`python ${CLAUDE_PLUGIN_ROOT}/scripts/orchestrator_state.py <action> --op-dir D --actor A` and "
            "`${CLAUDE_PLUGIN_ROOT}/scripts/docs_search.py \"vf exp\" --json`")
    assert extract(text) == [("ledger.py", "sweep", ("--op-dir", "--scope", "--examined")),
                             ("orchestrator_state.py", PLACEHOLDER, ("--op-dir", "--actor")),
                             ("docs_search.py", None, ("--json",))]


REAL_SCRIPTS = sorted(p.name for p in SCRIPTS.glob("*.py"))
DOC_INVOCATION = re.compile(rf"(?<![\w/.-])(?:scripts/([A-Za-z0-9_]+\.py)|({'|'.join(map(re.escape, REAL_SCRIPTS))}))"
                            r"([^`\n|;]*)")


def doc_invocations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(where, script, tokens) for every ``scripts/<x>.py ...`` in a code span or block of the docs a
    user copies commands from: the READMEs and docs/*.md."""
    found = []
    for path in sorted([*ROOT.glob("README*.md"), *(ROOT / "docs").glob("*.md")]):
        text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
        code = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S) + re.findall(r"`([^`\n]+)`", text)
        for span in code:
            for prefixed, bare, rest in DOC_INVOCATION.findall(span):
                try:
                    tokens = shlex.split(rest)
                except ValueError:
                    tokens = rest.split()
                tokens = tuple(t.strip("[]") for t in tokens if t.strip("[]"))
                found.append((path.relative_to(ROOT).as_posix(), prefixed or bare, tokens))
    return found


DOC_INVOCATIONS = doc_invocations()


def test_docs_show_commands():
    assert len(DOC_INVOCATIONS) >= 30 and {w for w, _, _ in DOC_INVOCATIONS} >= {"README.md", "README.zh-CN.md"}


@pytest.mark.parametrize("where,script,tokens", DOC_INVOCATIONS,
                         ids=[f"{w}:{s}:{' '.join(t)[:40]}" for w, s, t in DOC_INVOCATIONS])
def test_doc_invocation_names_a_real_script_subcommand_and_flags(where, script, tokens):
    assert (SCRIPTS / script).is_file(), f"{where}: scripts/{script} does not exist"
    top = help_text(script)
    subs = subcommands(top)
    words = [t for t in tokens if not t.startswith("-")]
    if subs and words and not words[0].startswith(("<", "[")) and tokens[0] == words[0]:
        named = words[0].split("/")  # `select_best.py record/choose/confirm` names three
        assert set(named) <= subs, f"{where}: {script} has no sub-command {words[0]!r} ({sorted(subs)})"
        accepted = set.intersection(*(option_flags(help_text(script, n)) for n in named))
    elif subs:
        accepted = set.union(*(option_flags(help_text(script, s)) for s in subs)) | option_flags(top)
    else:
        accepted = option_flags(top)
    flags = {t.split("=", 1)[0] for t in tokens if re.fullmatch(r"--[a-z0-9][a-z0-9-]*(=.*)?", t)}
    assert flags <= accepted | {"--help"}, f"{where}: {script} does not take {sorted(flags - accepted)}"
