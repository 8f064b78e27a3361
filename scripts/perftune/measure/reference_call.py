"""The precision reference's call, built the way the golden case factory defines the case.

The frozen reference (``precision_gate.reference``, e.g. ``linear_golden_cpu(x, w, b, act)``) takes
the golden's arguments: the factory's ``(args, kwargs)`` of the case (``contract/golden_source.py``),
tensors and non-tensor arguments alike (an activation name, a scale, a mode string, ...). The
probe runner calls it with every factory tensor replaced by the data the op (or its wrapper)
actually received, and every other argument exactly as the factory gives it; the test's own
non-tensor arguments are never used, so a test that passes another mode or scale is measured
against the frozen one. Nothing here is keyed by operator.

Which received value stands for which factory tensor is decided once, on the first (seed-42) call:
the received tensor with the same content digest (the test builds the golden inputs, P9 checks
that); factory tensors left without one take the remaining received tensors in order. The probes'
new data then goes to the same places.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contract import golden_source

from ..errors import ContractError
from . import attestation

Slot = tuple[str, Any]  # ("arg", index) or ("kw", name)


def factory_case(op_dir: Path, manifest, case_id: str) -> tuple[tuple, dict, dict[str, str]]:
    """The factory's ``(args, kwargs)`` of ``case_id`` (seeded with 42, all manifest cases in one
    call, as the golden collector and the verifier's rebuild do) and where the factory came from.
    Call before the test module runs. Raises a ContractError when no factory can be trusted."""
    source = golden_source.resolve(op_dir)
    factory = golden_source.load_callable(source.path, source.factory, "golden_source.factory")
    golden_source.seed_all()
    for cid, args, kwargs in factory([dict(c) for c in manifest.raw["cases"]]):
        if str(cid) == case_id:
            return tuple(args), dict(kwargs), source.as_dict(op_dir)
    raise ContractError(source.path, source.factory, f"returns no case {case_id!r}",
                        "the factory returns (case_id, args, kwargs) for every manifest case")


def _slots(args: tuple, kwargs: dict) -> list[tuple[Slot, Any]]:
    return [(("arg", i), a) for i, a in enumerate(args)] + [(("kw", k), kwargs[k]) for k in sorted(kwargs)]


def _digest(value: Any) -> str | None:
    return attestation.describe(value, "-").get("sha256")


def plan(args: tuple, kwargs: dict, received: list) -> dict[Slot, int]:
    """For each tensor of the factory call, the index in ``received`` of the value standing for it."""
    tensors = [(slot, _digest(v)) for slot, v in _slots(args, kwargs) if attestation._host_array(v) is not None]
    free = [i for i, v in enumerate(received) if attestation._host_array(v) is not None]
    digests = {i: _digest(received[i]) for i in free}
    out: dict[Slot, int] = {}
    for slot, digest in tensors:
        match = next((i for i in free if digests[i] == digest), None)
        if match is not None:
            out[slot] = match
            free.remove(match)
    for slot, _ in tensors:
        if slot not in out and free:
            out[slot] = free.pop(0)
    missing = [s for s, _ in tensors if s not in out]
    if missing:
        raise ValueError(f"the call received {len(received)} values, too few tensors for the factory's {missing}")
    return out


def arguments(args: tuple, kwargs: dict, where: dict[Slot, int], received: list) -> tuple[list, dict]:
    """The reference's ``(args, kwargs)``: factory values with the planned tensors replaced."""
    call_args = [received[where[("arg", i)]] if ("arg", i) in where else a for i, a in enumerate(args)]
    call_kwargs = {k: received[where[("kw", k)]] if ("kw", k) in where else v for k, v in kwargs.items()}
    return call_args, call_kwargs


def describe(args: list, kwargs: dict) -> list[dict[str, Any]]:
    """What the reference was called with (tensors by shape/dtype/digest, other values by repr)."""
    return attestation.before(tuple(args), kwargs)
