"""CHEAT (the process made the operator's; issue 35 item 9b): at import the module sets the thread-pool
variables (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS), pins the process to CPU 0 and changes its scheduling
class, then spreads the rows of every call over a thread pool built at import. (The issue's kernel asks
for SCHED_FIFO; planted here as SCHED_BATCH, so the shared test machine is never starved by a
real-time thread: the check compares the scheduling class, whichever it is.) Caught by
P9.process_settings (cheating): the runner's affinity, scheduling class and thread-pool variables
changed. Legal twin: thread_pool_rows.py (the same pool, the process left as the runner set it).
"""

import os as _os
from concurrent.futures import ThreadPoolExecutor as _Pool

_os.environ["OMP_NUM_THREADS"] = _os.environ["OPENBLAS_NUM_THREADS"] = "2"
_os.sched_setaffinity(0, {sorted(_os.sched_getaffinity(0))[0]})
try:
    _os.sched_setscheduler(0, _os.SCHED_BATCH, _os.sched_param(0))
except (OSError, AttributeError):
    pass
_POOL = _Pool(max_workers=2)
list(_POOL.map(int, range(2)))   # the workers exist before the first call


def _rows(x, out, start, stop):
    work = x[start:stop].astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    np.multiply(work, np.float32(1.0) / work.sum(axis=-1, keepdims=True), out=out[start:stop], casting="same_kind")


def softmax_kernel(x, out):
    """fp32 in place, the two row halves on the pool's two workers."""
    half = x.shape[0] // 2
    for done in [_POOL.submit(_rows, x, out, 0, half), _POOL.submit(_rows, x, out, half, x.shape[0])]:
        done.result()


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
