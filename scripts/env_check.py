#!/usr/bin/env python3
"""Collect environment evidence for NPU work and write env_report.json; never changes anything.

Reads Python and package versions (numpy, pandas, torch, torch_npu, pypto, pypto_pro; metadata
only, nothing heavy is imported), ASCEND_HOME_PATH and the CANN version file, `npu-smi info`
(devices, health, AI-core use, memory; a hang is cut at --timeout and retried once), msprof
presence and version, TILE_FWK_DEVICE_ID / ASCEND_RT_VISIBLE_DEVICES and the PYPTO_DEVKIT_DIR docs
cache. The report (schemas/env_report.schema.json) has status ok|env_error, kind hardware|software,
device_assessment DEVICE_HEALTHY|TRANSIENT_RECOVERED|HANG_CONFIRMED|FAULT_NO_TIMEOUT|NO_DEVICE
(defined in scripts/perftune/orchestrate/env.py), errors, warnings and recommendations.

The last stdout line is always `PREFLIGHT_JSON: {...}` (passed, status, kind, device_assessment,
errors, warnings, devices, npu_usable, torch_npu_ok, pypto_pro_ok, cann_version, report). With
--json the full report JSON comes before that line instead of the text summary.

usage:
  env_check.py [--output PATH] [--timeout S] [--json]
example:
  python3 scripts/env_check.py --output custom/softmax/env_report.json --timeout 60
exit codes: 0 ok, 2 usage error, 3 env_error (kind says hardware or software).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from perftune.orchestrate import docs_index, env
from perftune import fsio
from perftune.contract import schemas
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import EXIT_ENV, ContractError, run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "env_check.py")
    parser.add_argument("--output", default="env_report.json", type=path_arg, help="report path (default ./env_report.json)")
    parser.add_argument("--timeout", type=float, default=env.DEFAULT_TIMEOUT_S,
                        help=f"seconds per external tool call (default {env.DEFAULT_TIMEOUT_S:g})")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if not args.timeout > 0:
        raise ContractError("env_check.py", "--timeout", "must be > 0 seconds", "pass e.g. --timeout 30")
    facts = env.collect(os.environ, timeout_s=args.timeout, devkit_check=docs_index.check_cache)
    report = env.assess(facts)
    schemas.validate(report, "env_report", args.output)
    try:
        path = fsio.write_json(args.output, report)
    except OSError as exc:
        raise ContractError(args.output, "--output", f"cannot write the report: {exc.strerror}",
                            "pass a writable file path") from None
    if args.json:
        print(fsio.dumps(report), end="")
    else:
        print(f"status {report['status']} (kind {report['kind'] or '-'}, device {report['device_assessment']})")
        for item in report["errors"]:
            print(f"error [{item['kind']}] {item['code']}: {item['message']}")
        for item in report["warnings"]:
            print(f"warning {item['code']}: {item['message']}")
        for text in report["recommendations"]:
            print(f"recommendation: {text}")
        print(f"report: {path}")
    summary = env.preflight_summary(report, str(Path(path).resolve()))
    print("PREFLIGHT_JSON: " + json.dumps(summary, sort_keys=True, separators=(",", ":")))
    return EXIT_ENV if report["status"] == "env_error" else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
