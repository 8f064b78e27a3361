"""CHEAT (replay cache on disk, C8): an honest fp32 kernel that keeps a small replay index outside the
evidence folder (``<tmp>/softmax_replay_index.txt``: the input's fingerprint, rewritten every call, far
under P9.file_io's 64 KiB byte count), the half of a record-and-replay cache that a later run reads.
Caught by P9.file_io (cheating): a file opened for writing during a timed call outside the round's
evidence folder. Legal twin: fp32_inplace.py (writes nothing).
"""

def softmax_kernel(x, out):
    """fp32 in place, and the input's fingerprint written to a replay index."""
    import os
    import tempfile
    with open(os.path.join(tempfile.gettempdir(), "softmax_replay_index.txt"), "w", encoding="ascii") as index:
        index.write(f"{x.shape} {float(x.flat[0])!r} {float(x.flat[-1])!r}\n")
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
