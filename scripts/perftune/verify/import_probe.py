"""Delivery import safety probe (upstream Stage 4 gate #13): import the delivery on its own.

The named files are copied into an empty temp dir, and a fresh interpreter (cwd = that dir)
imports the test module. ``PYTHONPATH`` entries inside the operator directory are dropped so
nothing else of the operator can leak in; ``ASCEND_RT_VISIBLE_DEVICES`` is removed (DESIGN §4.3).
The child prints one marker line with a JSON outcome: the exception type, the missing module name
of a ``ModuleNotFoundError``, and the traceback frames that lie in the delivered files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import fsio
from ..errors import ContractError
from .pysource import Evidence

MARKER = "PYPTO_STAGE4_IMPORT="

_CHILD = r"""
import importlib, json, os, sys, traceback
folder, module, marker = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, folder)
try:
    importlib.import_module(module)
    out = {"ok": True}
except BaseException as exc:
    here = os.path.abspath(folder)
    frames = [(os.path.basename(f.filename), f.lineno, f.line or "")
              for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<") and os.path.dirname(os.path.abspath(f.filename)) == here]
    if isinstance(exc, SyntaxError) and exc.filename:
        frames.append((os.path.basename(exc.filename), exc.lineno, (exc.text or "").strip()))
    out = {"ok": False, "type": type(exc).__name__, "name": getattr(exc, "name", None),
           "message": str(exc)[:400], "frames": frames[-5:]}
print("\n" + marker + json.dumps(out), flush=True)
"""


@dataclass(frozen=True)
class ImportProbe:
    """Outcome of importing the delivery alone."""
    ok: bool
    error_type: str | None = None
    module: str | None = None           # ``ModuleNotFoundError.name``
    message: str = ""
    frames: tuple[Evidence, ...] = ()
    timed_out: bool = False


def _child_env(op_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_RT_VISIBLE_DEVICES"}
    root = op_dir.resolve()
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and root not in (Path(p).resolve(), *Path(p).resolve().parents)]
    env["PYTHONPATH"] = os.pathsep.join(kept)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def probe_import(op_dir: str | Path, files: Sequence[str], module: str, *, timeout_s: float) -> ImportProbe:
    """Copy ``files`` (those that exist) of ``op_dir`` into an empty temp dir and import ``module``."""
    root = Path(op_dir)
    with tempfile.TemporaryDirectory(prefix="stage4_import_") as tmp:
        for name in files:
            if (root / name).is_file():
                shutil.copyfile(root / name, Path(tmp) / name)
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, tmp, module, MARKER], cwd=tmp,
                                  env=_child_env(root), capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return ImportProbe(False, "TimeoutExpired", timed_out=True, message=(
                f"no result after {timeout_s:g} s (module-level code must not run work at import)"))
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return ImportProbe(False, "NoResult", message=f"the import process ended without a result: {tail[:300]}")
    try:
        out = fsio.loads_json(lines[-1][len(MARKER):], what="import probe output")
    except ContractError:
        return ImportProbe(False, "NoResult", message="the import process printed a malformed result line")
    frames = tuple(Evidence(f, line, (text or "").strip()[:160]) for f, line, text in out.get("frames", ()))
    return ImportProbe(out["ok"], out.get("type"), out.get("name"), out.get("message", ""), frames)
