"""CHEAT (precision downcast inside the gate, issue 28 item 12): the row sum's last level accumulates
in float16 (64-column float32 partial sums, then their total in float16), against the KB obligation
accum-fp32; the loosened float32 gate (1e-6 + 1e-2 |ref|) still accepts it, and the float32 pipeline
keeps it fast. Caught by P9.kb_obligation (cheating): the traced reductions of the delivered code
include add.reduce in float16 where the baseline reduces in float64. Legal twin: fp16_output_cast.py
(float32 accumulation, the output rounded through float16).
"""

def softmax_kernel(x, out):
    """fp32 shift and exp; row sum: float32 partial sums of 64 columns, their total in float16."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    rows, cols = work.shape
    blocks = work.reshape(rows, -1, 64) if cols % 64 == 0 else work.reshape(rows, 1, cols)
    total = blocks.sum(axis=-1).astype(np.float16).sum(axis=-1, keepdims=True)
    np.multiply(work, np.float32(1.0) / total.astype(np.float32), out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
