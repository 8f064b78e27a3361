"""LEGAL (twin of precision_downcast): max and sum accumulate in float32; only the result is rounded
to float16's 11-bit significand (round half up on the float32 bits, which numpy does far faster than
an astype(float16) round trip): a storage precision the loosened gate allows, not an accumulation.
"""

def softmax_kernel(x, out):
    """fp32 accumulation, the output rounded to a float16 significand."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    work *= np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    bits = work.view(np.uint32)
    bits += np.uint32(0x1000)
    bits &= np.uint32(0xFFFFE000)
    np.copyto(out, work, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
