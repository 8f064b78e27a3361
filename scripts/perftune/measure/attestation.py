"""Input attestation: what the timed call of the op actually received and returned.

A runner (cpu ``cpu_runner``, the msprof ``case_adapter``, the correctness probe) wraps the frozen
op with :class:`Recorder` logic: :func:`before` describes every argument right before the call
(outside any timed region), :func:`after` describes them again plus the return value. An argument
whose digest changed was written by the op (an output buffer); every other argument is an input.
The record of one call is::

    {"inputs": [{"arg", "kind", "shape", "dtype", "contiguous", "sha256", "type"}, ...],
     "outputs": [...same, for written arguments and the return value...], "caller": "<function>"}

The returned value also carries ``owned`` (it owns its memory, or is a caller's buffer returned as
given), ``aliases`` (arguments it shares memory with) and ``returned_argument`` (:func:`ownership`).

``caller`` is the function that called the op (the wrapper; ``stage5_check`` times it beside the
kernel). Tensors are numpy arrays or objects with ``detach``/``cpu`` (torch): their bytes are
copied to the host only here, never inside a timed region. ``sha256`` is over the C-order bytes;
a bfloat16 tensor (numpy has none) is digested as its exact float32 widening, and the golden
factory's float32 arrays of a case frozen as bfloat16 are described as bfloat16 when every value
is a bfloat16 number (:func:`rebuild_golden_inputs`): the numpy golden's way to express bfloat16.
The verifier compares these records with the manifest and with inputs it rebuilds from the golden
factory (``python -m perftune.measure.attestation``, docs/stage5-check.md).

usage:
  python -m perftune.measure.attestation --golden FILE --factory NAME --manifest FILE --output FILE
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

ATTESTATION_JSON = "attestation.json"


def _host_array(value: Any):
    """A numpy view of ``value`` when it is a tensor, else None (never imports numpy or torch itself:
    an array exists only once its library is loaded, and a runner without numpy must not pay for it)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu") and hasattr(value, "shape"):
        tensor = value.detach().cpu()
        if str(tensor.dtype) == "torch.bfloat16":  # exact widening: comparable with the numpy golden
            return tensor.float().numpy()
        try:
            return tensor.numpy()
        except (TypeError, RuntimeError):  # bfloat16 and friends: keep the bits, name the dtype
            import torch
            return tensor.contiguous().view(torch.uint8).numpy()
    return None


def _dtype_name(value: Any, array) -> str:
    text = str(getattr(value, "dtype", array.dtype))
    return text.split(".")[-1]


def describe(value: Any, arg: str) -> dict[str, Any]:
    """Shape, dtype, contiguity and content digest of a tensor; kind and repr of anything else."""
    array = _host_array(value)
    if array is None:
        if isinstance(value, (bool, int, float, str)) or value is None:
            return {"arg": arg, "kind": "scalar", "value": repr(value)}
        return {"arg": arg, "kind": type(value).__name__}
    import numpy
    contiguous = bool(value.is_contiguous()) if hasattr(value, "is_contiguous") else bool(array.flags.c_contiguous)
    data = numpy.ascontiguousarray(array)
    digest = hashlib.sha256(memoryview(data).cast("B")).hexdigest() if data.size else hashlib.sha256().hexdigest()
    return {"arg": arg, "kind": "tensor", "shape": [int(d) for d in getattr(value, "shape", array.shape)],
            "dtype": _dtype_name(value, array), "contiguous": contiguous, "sha256": digest,
            "type": f"{type(value).__module__}.{type(value).__qualname__}"}


PLAIN_TYPES = ("numpy.ndarray", "torch.Tensor", "torch.nn.parameter.Parameter")


def ownership(result: Any, args: tuple, kwargs: dict, inputs: list[str]) -> dict[str, Any]:
    """Whether the returned tensor owns its memory (or is one of the caller's buffers, returned as
    given) and which arguments it shares memory with (a view or an alias of an input)."""
    array = _host_array(result) if result is not None else None
    if array is None:
        return {}
    named = _named(args, kwargs)
    given = [name for name, value in named if value is result]
    numpy = sys.modules["numpy"]
    aliases = [name for name, value in named if name in inputs and _host_array(value) is not None
               and numpy.may_share_memory(array, _host_array(value))]
    if isinstance(result, numpy.ndarray):
        owned = bool(result.flags.owndata) or bool(given)
    else:
        owned = getattr(result, "_base", None) is None or bool(given)
    return {"owned": owned, "aliases": aliases, "returned_argument": given[0] if given else None}


def _named(args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    return [(str(i), a) for i, a in enumerate(args)] + [(k, kwargs[k]) for k in sorted(kwargs)]


def before(args: tuple, kwargs: dict) -> list[dict[str, Any]]:
    """Describe every argument right before the op call."""
    return [describe(value, name) for name, value in _named(args, kwargs)]


def after(pre: list[dict[str, Any]], args: tuple, kwargs: dict, result: Any, caller: str) -> dict[str, Any]:
    """The call's record: unchanged arguments are inputs; written ones and the result are outputs."""
    record = split(pre, before(args, kwargs), result, caller)
    if result is not None and record["outputs"]:
        record["outputs"][-1].update(ownership(result, args, kwargs, [i["arg"] for i in record["inputs"]]))
    return record


def split(pre: list[dict[str, Any]], post: list[dict[str, Any]], result: Any, caller: str) -> dict[str, Any]:
    """:func:`after` from the two descriptions of the arguments (before and after the call)."""
    inputs, outputs = [], []
    for was, now in zip(pre, post):
        (outputs if was.get("sha256") != now.get("sha256") else inputs).append(now)
    if result is not None:
        outputs.append(describe(result, "return"))
    return {"inputs": inputs, "outputs": outputs, "caller": caller}


def caller_name(depth: int = 2) -> str:
    """Name of the function ``depth`` frames up (the op's caller when called from a shim)."""
    frame = sys._getframe(depth)
    return frame.f_code.co_name


def input_key(record: dict[str, Any]) -> list[tuple]:
    """The comparable identity of a call's inputs: (shape, dtype, sha256) of each tensor input."""
    return [(tuple(i["shape"]), i["dtype"], i["sha256"]) for i in record.get("inputs", []) if i.get("kind") == "tensor"]


def rebuild_golden_inputs(golden: Path, factory: str, manifest_path: Path) -> dict[str, list[dict[str, Any]]]:
    """Inputs the golden factory builds with seed 42, described per case (run in a subprocess)."""
    from ..contract import golden_source as golden_mod
    from ..contract.manifest import load_manifest
    manifest = load_manifest(manifest_path, check_schema=False)
    golden_mod.seed_all()
    built = golden_mod.load_callable(golden, factory, "--factory")([dict(c) for c in manifest.raw["cases"]])
    out = {}
    dtypes = {c["id"]: [d.split(":")[-1] for d in str(c.get("dtype", "")).split(",")] for c in manifest.raw["cases"]}
    for case_id, args, kwargs in built:
        described = before(tuple(args), dict(kwargs))
        tensors = [(d, v) for d, v in zip(described, [*args, *kwargs.values()]) if d.get("kind") == "tensor"]
        frozen = dtypes.get(str(case_id), [])
        for index, (record, value) in enumerate(tensors):
            want = frozen[index] if index < len(frozen) else (frozen[0] if len(frozen) == 1 else None)
            if want == "bfloat16" and record["dtype"] == "float32" and _is_bfloat16_valued(value):
                record["dtype"] = "bfloat16"
        out[str(case_id)] = described
    return out


def _is_bfloat16_valued(array) -> bool:
    import numpy
    bits = numpy.ascontiguousarray(array, dtype=numpy.float32).view(numpy.uint32)
    return not bool((bits & 0xFFFF).any())


def main(argv=None) -> int:
    from .. import fsio
    from ..argv import parser_from_doc
    parser = parser_from_doc(__doc__, "attestation")
    for flag in ("--golden", "--factory", "--manifest", "--output"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args(argv)
    fsio.write_json(args.output, rebuild_golden_inputs(Path(args.golden), args.factory, Path(args.manifest)))
    return 0


if __name__ == "__main__":
    from ..errors import run_cli
    sys.exit(run_cli(main))
