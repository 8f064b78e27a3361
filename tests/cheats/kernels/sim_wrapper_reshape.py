"""LEGAL (twin of sim_host_finish.py): the op function only allocates, reshapes and copies around one
whole launch: it flattens the rows into a contiguous 2-D view, launches the kernel into a scratch
buffer it allocates, and copies the launch's result into the caller's output. Must PASS P9 and P10.
"""


def rms_kernel(x, gamma, out):
    """One simulated launch on every row; allocation, views and a copy around it."""
    rows = x.contiguous().reshape(x.shape[0], x.shape[1])
    scratch = torch.empty_like(out)
    key = (_key((rows, gamma)), _key((scratch,)))   # the scaffold's (shape, dtype) pairs
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key)
    _KERNELS[key](rows, gamma, scratch)
    out.copy_(scratch)


def rms_wrapper(x, gamma):
    """Host boundary: allocate the output, launch the kernel once."""
    out = torch.zeros_like(x)
    rms_kernel(x, gamma, out)
    return out


