"""Run the golden once in a child process: ``_validate()`` and ``golden_cases(P0 cases)``.

The child imports ``<op>_golden`` from the operator directory (no bytecode written), calls
``_validate()`` and ``golden_cases`` with the SPEC P0 cases in manifest form, and prints one JSON
line: the case ids it built, or the error. A module that is neither in the operator directory nor
installed (torch_npu on a machine without an NPU) is an environment problem, never a FAIL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 120.0
_CHILD = r"""
import importlib, json, sys
op_dir, op, cases = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, op_dir)
def say(**kw):
    print("GOLDEN_PROBE " + json.dumps(kw)); sys.exit(0)
try:
    mod = importlib.import_module(op + "_golden")
except ImportError as exc:
    say(import_error=exc.name or str(exc), text=f"{type(exc).__name__}: {exc}")
except Exception as exc:
    say(error=f"import: {type(exc).__name__}: {exc}")
try:
    ok = mod._validate()
except Exception as exc:
    say(error=f"_validate(): {type(exc).__name__}: {exc}")
if ok is False:
    say(error="_validate() returned False")
try:
    built = mod.golden_cases([dict(c) for c in cases])
except Exception as exc:
    say(error=f"golden_cases(): {type(exc).__name__}: {exc}")
if not isinstance(built, (list, tuple)):
    say(error="golden_cases() did not return a list")
ids = []
for item in built:
    if not (isinstance(item, (list, tuple)) and len(item) == 3 and isinstance(item[0], str)
            and isinstance(item[1], (list, tuple)) and isinstance(item[2], dict)):
        say(error="golden_cases() entry is not (case_id, args, kwargs)")
    ids.append(item[0])
say(ids=ids)
"""


@dataclass(frozen=True)
class ProbeResult:
    ids: tuple[str, ...] | None
    error: str | None
    env_error: str | None


def run(op_dir: Path, op: str, cases: list[dict[str, Any]], timeout_s: float = DEFAULT_TIMEOUT_S) -> ProbeResult:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(op_dir.resolve()), op, json.dumps(cases)],
                              cwd=op_dir, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return ProbeResult(None, f"the golden did not finish within {timeout_s:.0f} s", None)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("GOLDEN_PROBE ")), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return ProbeResult(None, f"the golden exited {proc.returncode} without a result: {tail}", None)
    obj = json.loads(line[len("GOLDEN_PROBE "):])
    if "import_error" in obj:
        local = (op_dir / f"{obj['import_error'].split('.')[0]}.py").exists()
        if local or obj["import_error"].startswith(op):
            return ProbeResult(None, obj["text"], None)
        return ProbeResult(None, None, obj["text"])
    if "error" in obj:
        return ProbeResult(None, obj["error"], None)
    return ProbeResult(tuple(obj["ids"]), None, None)
