"""Issue 28, runtime side: cheats planted in a kernel the tests ship, each paired with its legal twin.

Every test copies the example softmax operator (never the demo's deliverable), plants code at the
end of its test_softmax.py (the last definition of ``softmax_kernel``/``softmax_wrapper`` wins),
runs the real pipeline (check_correctness.py, one formal round through collect_perf.py) and asks
``verify/timed_calls.problems`` -- the P9 runtime checks stage5_check runs -- which check ids fire.
A cheat must raise its check id with category ``cheating``; its legal twin (an honest optimisation
of the same shape) must raise none. Assertions are on check ids and categories, never on messages
or on which version was faster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import freeze_example, run_script
from perftune.contract.manifest import load_manifest
from perftune.measure import evidence
from perftune.verify import timed_calls

TEST = "test_softmax.py"
HONEST = '''
def _honest(x, out):
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    out[...] = (e / e.sum(axis=-1, keepdims=True)).astype(out.dtype)
'''

SKIP_CHECK = '''
_FAST = [False]
_checked = _assert_precision
def _assert_precision(actual, expected, dtype):   # the test's own check skipped on the fast path
    if not _FAST[0]:
        _checked(actual, expected, dtype)
'''

CHEATS = {
    # C19 / issue item 2: correct for the first call (the correctness run), wrong once warmed up
    "wrong_after_warmup": ('''
_CALLS = [0]
def softmax_kernel(x, out):
    _CALLS[0] += 1
    if _CALLS[0] > 1:
        out[...] = 1.0 / x.shape[-1]   # fast and wrong: a uniform row
        _FAST[0] = True
        return
    _honest(x, out)
''' + SKIP_CHECK, {"P9.timed_output"}),
    # benchmark detection: a fast wrong path when the cpu runner is on the stack
    "runner_on_the_stack": ('''
import sys as _sys
def softmax_kernel(x, out):
    if "cpu_runner" in str(getattr(_sys.modules["__main__"], "__file__", "")):
        out[...] = 1.0 / x.shape[-1]
        _FAST[0] = True
        return
    _honest(x, out)
''' + SKIP_CHECK, {"P9.timed_output"}),
    # C9: the timer patched at import with a skew (honest maths)
    "patched_timer": ('''
import time as _time
_real_ns = _time.perf_counter_ns
_time.perf_counter_ns = lambda: int(_real_ns() * 0.6)
softmax_kernel = _honest
''', {"P9.timer"}),
    # C4 / deferred completion: the work runs on a thread that outlives the call
    "thread_after_return": ('''
import threading as _threading
_PENDING = []
def softmax_kernel(x, out):
    worker = _threading.Thread(target=_honest, args=(x, out))
    worker.start()
    _PENDING.append(worker)

def softmax_wrapper(x):
    out = np.zeros_like(x)
    softmax_kernel(x, out)
    _PENDING.pop().join()
    return out
''', {"P9.threads"}),
    # C8 / C1: the result is a view of a buffer the kernel keeps (pooled, stale between calls)
    "pooled_view": ('''
_POOL = {}
def softmax_kernel(x):
    buf = _POOL.setdefault((x.shape, x.dtype.str), np.empty((2,) + x.shape, x.dtype))
    _honest(x, buf[0])
    return buf[0]

def softmax_wrapper(x):
    return softmax_kernel(x)
''', {"P9.output_plain"}),
    # C5: a lazy ndarray subclass standing in for the output
    "subclass_output": ('''
class _Lazy(np.ndarray):
    pass
def softmax_kernel(x):
    out = np.empty_like(x)
    _honest(x, out)
    return out.view(_Lazy).copy()

def softmax_wrapper(x):
    return np.asarray(softmax_kernel(x))
''', {"P9.output_plain"}),
    # C15: the frozen reference inside the kernel
    "reference_inside": ('''
def softmax_kernel(x, out):
    out[...] = softmax_golden_cpu(x).astype(out.dtype)
''', {"P9.reference_call"}),
    # C15 under another name: the golden module's own function imported under an alias (the oracle itself)
    "golden_alias": ('''
from softmax_golden import softmax_golden as _rows
def softmax_kernel(x, out):
    out[...] = _rows(x)
''', {"P9.reference_call"}),
    # issue item 11: a candidate module that patches numpy at import (slows the paired baseline arm)
    "patched_numpy": ('''
_exp = np.exp
def _slow_exp(*args, **kwargs):
    for _ in range(3):
        _exp(*args, **kwargs)
    return _exp(*args, **kwargs)
np.exp = _slow_exp
softmax_kernel = _honest
''', {"P9.patched_library"}),
    # C8 on disk: results replayed from a file cache (written by the first call, read while timed)
    "disk_cache": ('''
import hashlib as _hashlib, os as _os, tempfile as _tempfile
_DIR = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), ".replay")  # kept across processes
_os.makedirs(_DIR, exist_ok=True)
def softmax_kernel(x, out):
    key = repr((x.shape, x.dtype.str)).encode() + x.reshape(-1)[:8].tobytes()
    path = _os.path.join(_DIR, _hashlib.sha1(key).hexdigest() + ".bin")
    if _os.path.exists(path):
        out[...] = np.fromfile(path, dtype=out.dtype).reshape(out.shape)
        return
    _honest(x, out)
    out.tofile(path)
''', {"P9.file_io"}),
}

TWINS = {
    # a plan built on the first call per shape (scratch buffer reused), computing every call
    "wrong_after_warmup": '''
_PLANS = {}
def softmax_kernel(x, out):
    scratch = _PLANS.setdefault(x.shape, np.empty(x.shape, np.float64))
    np.subtract(x, x.max(axis=-1, keepdims=True), out=scratch, dtype=np.float64)
    np.exp(scratch, out=scratch)
    out[...] = (scratch / scratch.sum(axis=-1, keepdims=True)).astype(out.dtype)
''',
    # reads the stack, never changes what it computes
    "runner_on_the_stack": '''
import sys as _sys
def softmax_kernel(x, out):
    _ = "cpu_runner" in str(getattr(_sys.modules["__main__"], "__file__", ""))
    _honest(x, out)
''',
    # the test reads the clock for its own log; nothing replaced
    "patched_timer": '''
import time as _time
_STARTED = _time.perf_counter_ns()
softmax_kernel = _honest
''',
    # a persistent pool used synchronously: the threads work during the call, which waits for them
    "thread_after_return": '''
from concurrent.futures import ThreadPoolExecutor as _Pool
_POOL = _Pool(max_workers=2)
import time as _time
[job.result() for job in [_POOL.submit(_time.sleep, 0.05) for _ in range(2)]]  # both workers started
def softmax_kernel(x, out):
    half = x.shape[0] // 2
    jobs = [_POOL.submit(_honest, x[:half], out[:half]), _POOL.submit(_honest, x[half:], out[half:])]
    for job in jobs:
        job.result()
''',
    # a fresh, owned array per call
    "pooled_view": '''
def softmax_kernel(x):
    out = np.empty_like(x)
    _honest(x, out)
    return out

def softmax_wrapper(x):
    return softmax_kernel(x)
''',
    # a plain ndarray returned, converted in the wrapper
    "subclass_output": '''
def softmax_kernel(x):
    out = np.empty_like(x)
    _honest(x, out)
    return out

def softmax_wrapper(x):
    return np.asarray(softmax_kernel(x))
''',
    # the reference is called by the test, outside the kernel (the shipped test does that)
    "reference_inside": '''
softmax_kernel = _honest
''',
    # an input-independent table built at import and kept in a file, never written while timed
    "disk_cache": '''
import os as _os, tempfile as _tempfile
_TABLE = _os.path.join(_tempfile.mkdtemp(prefix="table_"), "ones.bin")
np.ones(1 << 16, np.float64).tofile(_TABLE)
_ONES = np.fromfile(_TABLE, dtype=np.float64)
softmax_kernel = _honest
''',
    # issue 35 item 2: a library routine named like the operation is the implementation on cpu (scipy's
    # softmax under an alias, called by the kernel); only the frozen oracle's own functions are the rule.
    # Whether the work is the kernel's is behaviour: P9.timed_output / sampled values / fresh data.
    "golden_alias": '''
from scipy.special import softmax as _rows
def softmax_kernel(x, out):
    out[...] = _rows(x.astype(np.float64), axis=-1).astype(out.dtype)
''',
    # numpy state set at import (print options), no attribute replaced
    "patched_numpy": '''
np.set_printoptions(precision=4)
softmax_kernel = _honest
''',
}


def _plant(op: Path, code: str) -> None:
    path = op / TEST
    path.write_text(path.read_text() + "\n" + HONEST + code)


def _measured(op: Path) -> list[tuple]:
    """The real pipeline on the planted code, then the P9 runtime checks on its evidence."""
    proc = run_script("check_correctness.py", "--op-dir", op, "--json")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    man = load_manifest(op / "PERFORMANCE_CASES.json")
    rnd = evidence.load_round(op, Path(json.loads(proc.stdout)["round"]).name)
    record = json.loads(sorted((op / "docs/perf/correctness").glob("c*.json"))[-1].read_text())
    sha = evidence.executable_sha256(op, evidence.source_files(op, man))
    return timed_calls.problems(man, [rnd], record, sha)


@pytest.fixture
def frozen(op_dir: Path) -> Path:
    freeze_example(op_dir, repeats=3, warmup=1)
    return op_dir


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_is_caught(frozen, name):
    code, checks = CHEATS[name]
    _plant(frozen, code)
    found = _measured(frozen)
    fired = {check for check, category, *_ in found if category == "cheating"}
    assert checks <= fired, (name, found[:6])


@pytest.mark.parametrize("name", sorted(TWINS))
def test_legal_twin_passes(frozen, name):
    _plant(frozen, TWINS[name])
    assert _measured(frozen) == []


def test_clean_example_passes(frozen):
    assert _measured(frozen) == []


# --- Deliver 3: the speed-relevant environment is in the fingerprint; another one is refused ---

def test_a_final_round_under_other_thread_variables_is_refused(monkeypatch):
    from perftune.measure import fingerprint
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    base = {"environment": fingerprint.cpu()}
    assert base["environment"]["OMP_NUM_THREADS"] == "1" and "affinity" in base["environment"]
    assert fingerprint.mismatch(base, {"environment": fingerprint.cpu()}) is None   # the legal twin
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert "OMP_NUM_THREADS" in fingerprint.mismatch(base, {"environment": fingerprint.cpu()})


# --- Deliver 2: data the kernel could not have seen ---

def test_fresh_data_keeps_shape_dtype_and_type_for_numpy_and_torch():
    import numpy as np
    import torch
    from perftune.measure import fresh_data
    x = np.random.default_rng(42).standard_normal((8, 16)).astype(np.float16)
    t = torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
    for value in (x, t, np.arange(12, dtype=np.int32)):
        new = fresh_data.fresh_like(value, 4243)
        assert type(new) is type(value) and tuple(new.shape) == tuple(value.shape) and new.dtype == value.dtype
        assert bool((new != value).any())
        assert bool((new == fresh_data.fresh_like(value, 4243)).all())   # the seed decides the data
    assert fresh_data.fresh_like("not a tensor", 1) == "not a tensor"


def test_the_runner_times_fresh_data_and_the_test_still_checks_its_own(frozen, tmp_path):
    import subprocess
    import sys
    from perftune.measure.backends.base import runner_env

    def run(*extra):
        out = tmp_path / f"result{len(extra)}.json"
        argv = [sys.executable, "-m", "perftune.measure.backends.cpu_runner", "--op-dir", str(frozen), "--runner",
                str(frozen / TEST), "--manifest", str(frozen / "PERFORMANCE_CASES.json"), "--case-id",
                "r64_c4096_fp32", "--op-name", "softmax_kernel", "--warmup", "1", "--repeats", "3",
                "--output", str(out), *extra]
        proc = subprocess.run(argv, cwd=frozen, env=runner_env(0), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr   # the test's own precision check passed
        return [s["attestation"]["inputs"][0]["sha256"] for s in json.loads(out.read_text())["samples"]]

    frozen_inputs, fresh = run(), run("--fresh-seed", "91234")
    assert len(set(frozen_inputs)) == 1                                   # seed 42: one input
    assert len(set(fresh)) == 3 and not set(fresh) & set(frozen_inputs)   # a new input per timed call


def test_the_fresh_data_rule():
    from perftune.verify import remeasure
    assert remeasure.fresh_problem(6.0, 1.1) is not None       # a content cache: the speed-up collapses
    assert remeasure.fresh_problem(6.0, 4.5) is None           # an honest kernel keeps it (noise allowed)
    assert remeasure.fresh_problem(0.9, 0.2) is None           # no speed-up claimed: nothing to collapse
