"""The shipped pypto-sim helper: side files kept out at import, the version guard, bf16 conversions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import importlib.metadata, json, os, sys
from perftune.measure.backends import pypto_sim_support as sim
real = importlib.metadata.version
importlib.metadata.version = lambda name: "0.3.0" if name == "pypto" else real(name)
try:
    sim.require_supported()
    guard = None
except RuntimeError as exc:
    guard = str(exc)
print(json.dumps({"env": {k: os.environ.get(k) for k in sim.SIDE_FILES}, "guard": guard}))
"""


def child(env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(ROOT / "scripts")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_side_files_go_to_a_removed_temporary_folder_unless_a_runner_placed_them(tmp_path):
    base = {k: v for k, v in os.environ.items() if k not in ("TILE_FWK_OUTPUT_DIR", "PYPTO_HOME",
                                                             "ASCEND_PROCESS_LOG_PATH")}
    out = child({**base, "TMPDIR": str(tmp_path)})
    folders = {Path(p).parent for p in out["env"].values()}
    assert len(folders) == 1 and folders.pop().parent == tmp_path
    assert not list(tmp_path.glob("pypto_sim_op_*")), "the temporary folder outlived the process"
    assert not list(tmp_path.glob("pypto_sim_bin_*")), "the helper-script folder outlived the process"
    placed = {"TILE_FWK_OUTPUT_DIR": "/x/out", "PYPTO_HOME": "/x/home", "ASCEND_PROCESS_LOG_PATH": "/x/log"}
    assert child({**base, **placed})["env"] == placed


def test_another_pypto_version_is_refused_in_one_line_naming_both(tmp_path):
    guard = child(dict(os.environ))["guard"]
    assert guard is not None and "pypto 0.3.0" in guard and "0.2.0" in guard and "\n" not in guard


def test_bfloat16_round_trips_exactly_through_the_helper(monkeypatch):
    import numpy as np
    for name in ("TILE_FWK_OUTPUT_DIR", "PYPTO_HOME", "ASCEND_PROCESS_LOG_PATH"):   # undone after the test
        monkeypatch.setenv(name, os.environ.get(name, str(Path("/nonexistent") / name)))
    from perftune.measure.backends import pypto_sim_support as sim
    values = np.array([1.0, -2.5, 0.15625, 3.0e-3], dtype=np.float32)
    bf = sim.to_torch(values, "bfloat16")
    assert str(bf.dtype) == "torch.bfloat16"
    back = sim.to_numpy(bf)
    assert back.dtype == np.float32 and np.allclose(back, values, rtol=1e-2)
    exact = sim.to_numpy(sim.to_torch(back, "bfloat16"))
    assert np.array_equal(exact, back)                  # bfloat16 numbers survive unchanged
    assert np.array_equal(sim.to_numpy(sim.to_torch(values, "float32")), values)
