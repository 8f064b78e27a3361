"""Correctness runs of the delivered tests, recorded with the identity of the code they ran.

Each manifest case's ``test_function`` runs in its own subprocess (``python -c`` importing the
test module from the op dir; no pytest), with the device environment rule (``TILE_FWK_DEVICE_ID``
set, ``ASCEND_RT_VISIBLE_DEVICES`` removed). The record ``docs/perf/correctness/<run_id>.json``
holds the ``executable_sha256`` of the sources (same formula as evidence rounds, so a candidate or
the verifier can accept a recorded run whose hash equals the current code), and per case
``passed`` (exit code 0), ``matched_ratio`` and ``max_abs_error`` parsed from the test output
(null when the test did not print them: missing is never zero), and the output tail.

Decisions: ``run_id`` = ``c<NNN>-<sha8>`` (sequence + first 8 hex of the code hash), reserved by
an exclusive create; the hash is taken before and after the run and a change refuses the record
(no evidence from mixed code); a per-case timeout counts as a failure.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import evidence, probes
from .. import fsio
from ..contract import manifest, protocol, schemas
from .backends.base import device_env
from ..errors import ContractError

CORRECTNESS_DIR = "correctness"
TAIL_LINES = 20
DEFAULT_TIMEOUT_S = 600.0
_RUNNER = "import importlib, sys; sys.path.insert(0, '.'); getattr(importlib.import_module(sys.argv[1]), sys.argv[2])()"
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"


def parse_output(text: str) -> dict[str, Any]:
    """``matched_ratio`` / ``max_abs_error`` (last printed value, None when absent) and the PASS line."""
    values: dict[str, Any] = {}
    for key in ("matched_ratio", "max_abs_error"):
        found = re.findall(rf"\b{key}\s*[=:]\s*{_NUMBER}", text)
        value = float(found[-1]) if found else None
        values[key] = value if value is not None and value == value and abs(value) != float("inf") else None
    values["printed_pass"] = bool(re.search(r"^\s*PASS\b", text, re.M))
    return values


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def runs_dir(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / CORRECTNESS_DIR


def test_module(op_dir: str | Path, test_file: str | None = None) -> Path:
    """The delivered test file: ``--test-file``, else ``test_<op>.py``, else the only ``test_*.py``."""
    root = Path(op_dir)
    if test_file:
        path = fsio.safe_join(root, test_file, field="--test-file")
    else:
        found = sorted(root.glob("test_*.py"))
        named = root / f"test_{root.resolve().name}.py"
        path = named if named.is_file() else (found[0] if len(found) == 1 else root / "test_<op>.py")
    if not path.is_file() or path.parent.resolve() != root.resolve():
        raise ContractError(path, "--test-file", "test file not found at the top of the op dir",
                            "pass --test-file test_<op>.py")
    return path


def run_case(op_dir: Path, module: str, function: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """Run one test function in a subprocess; the exit code decides ``passed``."""
    try:
        proc = subprocess.run([sys.executable, "-c", _RUNNER, module, function], cwd=op_dir, env=env,
                              capture_output=True, text=True, timeout=timeout_s)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = None, f"{exc.stdout or ''}{exc.stderr or ''}\ntimeout after {timeout_s} s"
    parsed = parse_output(out)
    return {"returncode": code, "passed": code == 0, "matched_ratio": parsed["matched_ratio"],
            "max_abs_error": parsed["max_abs_error"], "printed_pass": parsed["printed_pass"],
            "output_tail": tail(out)}


def _code_identity(op_dir: Path, man: manifest.Manifest) -> tuple[str, list[dict[str, Any]]]:
    files = evidence.source_files(op_dir, man)
    return evidence.executable_sha256(op_dir, files), [fsio.file_record(p, op_dir) for p in files]


def _reserve_write(op_dir: Path, sha: str, record: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    folder = runs_dir(op_dir)
    number = len(list(folder.glob("c*.json"))) + 1 if folder.is_dir() else 1
    for attempt in range(number, number + 1000):
        run_id = f"c{attempt:03d}-{sha[:8]}"
        path = folder / f"{run_id}.json"
        if path.exists():
            continue
        full = {**record, "run_id": run_id}
        schemas.validate(full, "correctness", path)
        try:
            return fsio.write_json(path, full, overwrite=False), full
        except ContractError:
            continue  # another run took this id meanwhile
    raise ContractError(folder, "run_id", "could not reserve a run id", "clean up the correctness folder")


def run_all(op_dir: str | Path, *, at: str, test_file: str | None = None,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[Path, dict[str, Any]]:
    """Run every manifest case's test and write the correctness record; returns (path, record)."""
    root = Path(op_dir)
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    path = test_module(root, test_file)
    sha, files = _code_identity(root, man)
    env = {**device_env(man.protocol.device_id if man.protocol else 0), "PYTHONDONTWRITEBYTECODE": "1"}
    cases = []
    for case in man.cases:
        function = case.test_function or f"test_{re.sub(r'[^A-Za-z0-9_]', '_', case.id)}"
        cases.append({"id": case.id, "test_function": function, **run_case(root, path.stem, function, env, timeout_s)})
        if man.protocol is not None:  # frozen gate applied, measured figures, caching probes (probe_runner)
            cases[-1]["probe"] = probes.run(root, path, root / protocol.MANIFEST_NAME, case.id, man.protocol.op_name,
                                            device_id=man.protocol.device_id, timeout_s=timeout_s)
    after, _ = _code_identity(root, man)
    if after != sha:
        raise ContractError(root, "executable_sha256", "sources changed while the tests ran",
                            "do not edit during a correctness run; run it again")
    record = {"schema_version": 1, "executable_sha256": sha, "source_files": files,
              "test_file": fsio.file_record(path, root), "device_id": int(env[protocol.DEVICE_ENV]),
              "cases": cases, "all_passed": all(c["passed"] for c in cases), "created_at": at}
    return _reserve_write(root, sha, record)


def load_record(op_dir: str | Path, run_id: str) -> dict[str, Any]:
    """A recorded correctness run (schema-checked; the id must name a file inside the folder)."""
    path = fsio.safe_join(runs_dir(op_dir), f"{run_id}.json", field="run_id")
    obj = fsio.read_json(path, what="correctness record")
    schemas.validate(obj, "correctness", path)
    if obj["run_id"] != run_id:
        raise ContractError(path, "run_id", f"records {obj['run_id']!r}, not {run_id!r}", "do not rename records")
    return obj
