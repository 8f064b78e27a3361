"""CHEAT (a rejected code retried under another item id, issue 35 item 9): kernels/fp32_inplace.py, but every
call sleeps 0.2 s while a file ``slow.flag`` exists in a folder above the module: the same code (the same
executable_sha256) measures slower in one round and faster in the next, as noise makes a retry look. Caught
by P7.judged_code (performance_item_coverage_invalid). Legal twin: the retry is other code (fp32_inplace).
"""

def softmax_kernel(x, out):
    """fp32 in place; slow while the flag exists (a stand-in for an unlucky round of the same code)."""
    import pathlib
    import time
    if any((p / "slow.flag").exists() for p in pathlib.Path(__file__).resolve().parents):
        time.sleep(0.2)
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    np.multiply(work, inv, out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
