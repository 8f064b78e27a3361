"""Parent side of :mod:`perftune.measure.probe_runner`: run one probe process, return its JSON.

A probe that cannot run (the runner crashed, timed out or wrote nothing) returns
``{"problem": "<one line>"}``: missing evidence is recorded as missing, never as a pass. A correctness
probe with the beyond-P0 step whose process did not survive runs again without that step: the P0 probe
is kept and ``beyond`` records the problem (a kernel that ends its process on the tail inputs does not
lose its P0 evidence; ``verify/beyond_p0.judge`` decides what the unrun step means).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import fsio
from ..errors import PerftuneError
from . import slots
from .backends.base import runner_env

DEFAULT_TIMEOUT_S = 600.0


def run(op_dir: Path, runner: Path, manifest_path: Path, case_id: str, op_name: str, *, mode: str = "correctness",
        paired_runner: Path | None = None, calls: int = 5, device_id: int = 0,
        timeout_s: float = DEFAULT_TIMEOUT_S, extra: tuple[str, ...] | None = None,
        printed: list[str] | None = None, beyond_seed: int | None = None) -> dict[str, Any]:
    """``extra``: the arguments of :mod:`.beyond_probe` (run instead of the probe runner, no mode);
    ``printed``: the process's stdout + stderr is appended to it (the test's own output);
    ``beyond_seed``: the correctness probe with the beyond-P0 probes (``correctness_probe --beyond-seed``)."""
    with tempfile.TemporaryDirectory(prefix="perftune_probe_") as scratch:
        output = Path(scratch) / "probe.json"
        module = "beyond_probe" if extra is not None else "probe_runner" if beyond_seed is None else "correctness_probe"
        argv = [sys.executable, "-m", f"perftune.measure.{module}",
                "--op-dir", str(op_dir), "--runner", str(runner), "--manifest", str(manifest_path), "--case-id",
                case_id, "--op-name", op_name, "--output", str(output),
                *(("--mode", mode, "--calls", str(calls)) if extra is None else extra)]
        if paired_runner is not None:
            argv += ["--paired-runner", str(paired_runner)]
        if beyond_seed is not None:
            argv += ["--beyond-seed", str(beyond_seed)]
        env = {**runner_env(device_id), "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            proc = slots.run(argv, cwd=op_dir, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"problem": f"probe timed out after {timeout_s} s"}
        if printed is not None:
            printed.append(proc.stdout + proc.stderr)
        if proc.returncode != 0 or not output.is_file():
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            problem = f"probe runner exited {proc.returncode}: {tail}"
            if beyond_seed is None:
                return {"problem": problem}
            if printed is not None:   # the test's own output comes from the run below
                printed.pop()
            again = run(op_dir, runner, manifest_path, case_id, op_name, device_id=device_id, timeout_s=timeout_s,
                        printed=printed)
            return again if again.get("problem") else {**again, "beyond": {"problem": problem}}
        try:
            return fsio.read_json(output, what="probe result")
        except PerftuneError as exc:
            return {"problem": exc.line()}
