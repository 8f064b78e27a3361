#!/usr/bin/env python3
"""Check or raise the plugin version (one source: .claude-plugin/plugin.json).

Claude Code's `plugin update` only picks up a new copy when the version changes, so every change
of a shipped file (anything under plugin/) needs a version bump. `check` compares the shipped
files' sha256 with the one recorded in .claude-plugin/release.json and every version copy with
the source; `bump` raises the version everywhere and records the new hash.

usage:
  plugin_version.py check [--json]
  plugin_version.py bump {patch,minor,major} [--json]

example:
  python3 scripts/plugin_version.py bump patch

exit codes: 0 ok, 1 check failed (files changed without a bump, or versions disagree), 2 usage.
"""

from __future__ import annotations

import sys
from pathlib import Path

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.errors import run_cli
from perftune.orchestrate import release

ROOT = Path(__file__).resolve().parent.parent


def build_parser():
    parser = parser_from_doc(__doc__, "plugin_version.py")
    sub = parser.add_subparsers(dest="action", required=True)
    add_json_flag(sub.add_parser("check", help="versions agree and the recorded hash is current"))
    bump = sub.add_parser("bump", help="raise the version and record the shipped files' hash")
    bump.add_argument("part", choices=("patch", "minor", "major"))
    add_json_flag(bump)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.action == "bump":
        result = release.bump(ROOT, args.part)
        print(fsio.dumps(result) if args.json else f"version {result['old']} -> {result['version']}",
              end="" if args.json else "\n")
        return 0
    result = release.check(ROOT)
    if args.json:
        print(fsio.dumps(result), end="")
    else:
        print("\n".join(result["problems"]) or f"version {result['version']}: shipped files match the record")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
