"""pypto-sim: the work is in the simulated launch (issue 28 item 7): the guard's record, the bytes the
recorded simulator files say a launch moved, and the P9 checks that judge both."""

from __future__ import annotations

import importlib.util
import json
import sys
import types

import pytest

from conftest import ROOT
from perftune.contract import work_model
from perftune.measure import attestation
from perftune.measure.backends import pypto_sim, sim_guard
from perftune.profiler import pypto_sim_files as files
from perftune.verify import sim_launch

HAVE_TORCH = importlib.util.find_spec("torch") is not None   # comes with the pypto-sim extra
RECORDED = ROOT / "tests" / "fixtures" / "pypto_sim" / "recorded"
SOFTMAX_MODEL = work_model.parse_section((ROOT / "examples" / "pypto_softmax" / "SPEC.md").read_text())


def test_the_recorded_launches_moved_every_byte_the_work_model_needs():
    """vector_softmax: 64x1024 fp32 in 8 tiles of [8,1024] (32768 B) per direction = x read once, y written
    once; cube_matmul: 128x128 fp16 operands in [64,64] tiles, each loaded twice, the fp32 result once."""
    moved = files.moved_bytes(json.loads((RECORDED / "vector_softmax" / files.PIPE_SWIM_JSON).read_text()))
    need = work_model.case_work(SOFTMAX_MODEL, "c", "[64,1024]", "float32")
    assert moved == {"read": 262144, "write": 262144, "transfers": 16}
    assert (need["read_bytes"], need["write_bytes"]) == (262144, 262144)
    cube = files.moved_bytes(json.loads((RECORDED / "cube_matmul" / files.PIPE_SWIM_JSON).read_text()))
    assert cube == {"read": 2 * 2 * 128 * 128 * 2, "write": 128 * 128 * 4, "transfers": 20}


def _repeat(root, keep_cores=None):
    folder = root / "repeat_001"
    folder.mkdir(parents=True)
    pipes = json.loads((RECORDED / "vector_softmax" / files.PIPE_SWIM_JSON).read_text())
    if keep_cores is not None:   # a planted variant of the real file: the other cores' transfers never ran
        busy = [c for c in pipes if c.get("pipeLogs")]
        for core in busy[keep_cores:]:
            core["pipeLogs"] = {}
    (folder / files.PIPE_SWIM_JSON).write_text(json.dumps(pipes))
    return folder


def test_a_launch_that_moved_a_fraction_of_the_data_is_cheating(tmp_path):
    need = work_model.case_work(SOFTMAX_MODEL, "c", "[64,1024]", "float32")
    assert sim_launch.work_problems("r/c repeat 1", _repeat(tmp_path / "a"), need) == []
    found = sim_launch.work_problems("r/c repeat 1", _repeat(tmp_path / "b", keep_cores=1), need)
    assert [(p[0], p[1], p[4]) for p in found] == [("P9.launch_work", "cheating", "32768 bytes")] * 2
    # the same launch against a model that needs 8x the data (a bigger case the launch pretends to be)
    bigger = work_model.case_work(SOFTMAX_MODEL, "c", "[512,1024]", "float32")
    assert {p[0] for p in sim_launch.work_problems("w", tmp_path / "a" / "repeat_001", bigger)} == {"P9.launch_work"}


def test_an_unreadable_pipe_file_is_invalid_evidence_not_a_traceback(tmp_path):
    (tmp_path / files.PIPE_SWIM_JSON).write_text("{not json")
    [(check, category, *_rest)] = sim_launch.work_problems("w", tmp_path, {"read_bytes": 1, "write_bytes": 1})
    assert (check, category) == ("P9.launch_work", "performance_evidence_invalid")
    with pytest.raises(Exception, match="malformed JSON"):
        pypto_sim.moved_bytes(tmp_path)


def _call(sim=None, outputs=("d1",)):
    record = {"inputs": [], "outputs": [{"arg": "2", "kind": "tensor", "sha256": d} for d in outputs]}
    return record | ({"sim": sim} if sim is not None else {})


@pytest.mark.parametrize("sim, outputs, want", [
    ({"launches": 1, "host_torch": {}, "launch_outputs": ["d1"]}, ("d1",), []),
    ({"launches": 1, "host_torch": {"torch.softmax": 1}, "launch_outputs": ["d1"]}, ("d1",),
     [("P9.host_compute", "cheating")]),
    ({"launches": 1, "host_torch": {}, "launch_outputs": ["d0"]}, ("d1",), [("P9.launch_output", "cheating")]),
    ({"launches": 0, "host_torch": {}, "launch_outputs": []}, ("d1",), [("P9.launch_output", "cheating")]),
    (None, ("d1",), [("P9.launch_output", "performance_evidence_invalid")]),
])
def test_the_launch_record_of_a_timed_call_is_judged(sim, outputs, want):
    assert [(p[0], p[1]) for p in sim_launch.record_problems("r/c repeat 1", _call(sim, outputs))] == want


def test_the_guard_counts_host_torch_outside_the_launch_and_the_launch_outputs(monkeypatch):
    """A stand-in for pypto's jit wrapper (its torch calls are the launch's): the op's own torch maths
    after the launch is counted, allocation/views/copies are allowed, the launch's written tensor is
    recorded with the attestation's digest."""
    if not HAVE_TORCH:   # without the extra no op can call torch: nothing is traced
        monkeypatch.setattr(sim_guard, "ACTIVE", True)
        with sim_guard.watch() as sim:
            assert sim is None
        return
    import torch

    class JitCallableWrapper:
        def __call__(self, x, out):
            out.copy_(torch.exp(x))     # inside the launch: not the op's host work

    entry = types.ModuleType(sim_guard.JIT_MODULE)
    entry.JitCallableWrapper = JitCallableWrapper
    monkeypatch.setitem(sys.modules, sim_guard.JIT_MODULE, entry)
    monkeypatch.setattr(sim_guard, "ACTIVE", True)
    launch, x = JitCallableWrapper(), torch.arange(8.0).reshape(2, 4)

    def op(x, out, finish):
        scratch = torch.empty_like(out)
        launch(x.contiguous().reshape(2, 4), scratch)
        out.copy_(scratch)
        if finish:
            out[1:] = torch.softmax(x[1:], -1)

    for finish in (False, True):
        out = torch.zeros(2, 4)
        with sim_guard.watch() as sim:
            op(x, out, finish)
        record = sim.record()
        assert record["launches"] == 1
        assert {"torch.empty_like", "Tensor.copy_", "Tensor.reshape"} <= set(record["allowed_torch"])
        assert ("torch.softmax" in record["host_torch"]) is finish and "torch.exp" not in record["host_torch"]
        matched = attestation.describe(out, "1")["sha256"] in record["launch_outputs"]
        assert matched is not finish
    assert JitCallableWrapper.__call__.__name__ == "__call__"   # restored after the call
    monkeypatch.setattr(sim_guard, "ACTIVE", False)
    with sim_guard.watch() as sim:    # cpu and msprof: nothing traced
        assert sim is None
