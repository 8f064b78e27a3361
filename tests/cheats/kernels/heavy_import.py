"""LEGAL (twin of arm_sabotage): the fp32 in-place kernel of fp32_inplace.py, in a module that imports
heavy libraries at import (``scipy.special``, ``decimal``, ``sqlite3``, ``xml.dom.minidom``) and builds an
input-independent table, without touching numpy or the other arm: the paired baseline arm keeps its
speed, so P9.baseline_arm must PASS.
"""

import decimal as _decimal
import sqlite3 as _sqlite3
import xml.dom.minidom as _minidom

import scipy.special as _special

_TABLE = np.arange(4096, dtype=np.float32) / np.float32(4096.0)   # input-independent, unused by the maths


def softmax_kernel(x, out):
    """fp32 in place: shift, exp and scale in one float32 buffer."""
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
