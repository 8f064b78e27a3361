"""LEGAL (twin of process_takeover): the rows of every call spread over a thread pool built at import,
the process's affinity, scheduling class and thread-pool variables left as the runner set them; the
workers compute only inside the call (docs/cpu-backend.md, "The process is the harness's").
"""

from concurrent.futures import ThreadPoolExecutor as _Pool

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
