"""CHEAT (host work on the simulator, issue 28 item 7): the op function launches the jit kernel on the
first 16 rows only and computes the other rows with torch on the host after the launch, where the
simulator does not time them; the output is right. Caught by P9.host_compute, P9.launch_output and
P9.launch_work (cheating). Legal twin: sim_wrapper_reshape.py (an op function that only allocates,
reshapes and copies around one whole launch).
"""

HEAD = 16


def rms_kernel(x, gamma, out):
    """One simulated launch on the first HEAD rows; the rest finished on the host (untimed)."""
    head = min(HEAD, x.shape[0])
    key = (_key((x[:head], gamma)), _key((out[:head],)))   # the scaffold's (shape, dtype) pairs
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key)
    _KERNELS[key](x[:head], gamma, out[:head])
    out[head:] = x[head:] * 2.0


def rms_wrapper(x, gamma):
    """Host boundary: allocate the output, launch the kernel once."""
    out = torch.zeros_like(x)
    rms_kernel(x, gamma, out)
    return out


