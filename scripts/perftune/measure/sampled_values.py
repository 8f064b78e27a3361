"""Sampled timed outputs: the values a few timed calls returned, kept for a check against the reference.

The cpu runner draws, per measured process and arm, which timed calls keep their output values
(:func:`draw`: one call at random plus the last timed call, always: "correct for N calls, then
wrong" is a documented hack), from ``secrets`` after the operator's module is imported, so the
kernel cannot predict the draw from a seed. Of each kept output at most :data:`CAP_ELEMENTS`
elements are stored (all of them when the output is smaller), at flat positions drawn from a
recorded seed (:func:`positions`), as base64 of their C-order bytes, under ``sampled`` in that
call's ``attestation.json``::

    "sampled": {"call": 3, "of": 5, "seed": 123, "outputs": [{"arg", "size", "elements", "dtype", "b64"}]}

(``call``: the timed call's number in its process, 1-based, of ``of``). A timed call of the verifier's
fresh-data run (``cpu_runner``'s channel, P10) received new data: its record's ``fresh.args`` name,
per tensor argument, the digest of the test's value and the seed of the new data, and :func:`judge`
rebuilds those inputs from the golden factory's seed-42 tensors (:func:`fresh_inputs`; the rebuilt
digests must equal the recorded inputs) and calls the reference on them. :data:`CAP_ELEMENTS`
float32 values are 16 KiB raw, ~22 KiB of JSON per kept call; the gate on 4096 elements still
sees a wrong path on 1 % of the elements (~41 misses: matched 0.99 < 0.999). The verifier
(``verify/sampled_values.py``) recomputes the frozen reference on the call's own inputs (the golden
factory's seed-42 inputs, which P9.attestation proves the call received) with :func:`main`, in a
child process, and applies the frozen precision gate to the kept elements.

usage:
  python -m perftune.measure.sampled_values --op-dir DIR --manifest FILE --requests FILE --output FILE
"""

from __future__ import annotations

import base64
import secrets
import sys
from pathlib import Path
from typing import Any

from . import attestation

CAP_ELEMENTS = 4096


def draw(timed_calls: int) -> set[int]:
    """1-based numbers of the timed calls that keep their values: one at random and the last."""
    if timed_calls <= 0:
        return set()
    return {secrets.randbelow(timed_calls) + 1, timed_calls}


def positions(size: int, elements: int, seed: int):
    """The flat positions kept of an output of ``size`` elements (all of them when it is small)."""
    import numpy
    if elements >= size:
        return numpy.arange(size)
    return numpy.sort(numpy.random.Generator(numpy.random.PCG64(seed)).choice(size, elements, replace=False))


def _value(arg: str, args: tuple, kwargs: dict, result: Any) -> Any:
    if arg == "return":
        return result
    return args[int(arg)] if arg.isdigit() else kwargs.get(arg)


def keep(record: dict[str, Any], args: tuple, kwargs: dict, result: Any, call: int, of: int) -> dict[str, Any]:
    """The ``sampled`` block of one call (outside the timed region)."""
    import numpy
    seed = secrets.randbits(63)
    outputs = []
    for item in record.get("outputs", []):
        array = attestation._host_array(_value(str(item.get("arg")), args, kwargs, result))
        if array is None:
            continue
        flat = numpy.ascontiguousarray(array).reshape(-1)
        chosen = flat[positions(flat.size, CAP_ELEMENTS, seed)]
        outputs.append({"arg": item.get("arg"), "size": int(flat.size), "elements": int(chosen.size),
                        "dtype": str(chosen.dtype), "b64": base64.b64encode(chosen.tobytes()).decode("ascii")})
    return {"call": call, "of": of, "seed": seed, "outputs": outputs}


def decode(sampled: dict[str, Any], output: dict[str, Any]):
    """``(positions, values)`` of one kept output; ValueError when the record is malformed."""
    import numpy
    try:
        values = numpy.frombuffer(base64.b64decode(output["b64"]), dtype=numpy.dtype(output["dtype"]))
        where = positions(int(output["size"]), int(output["elements"]), int(sampled["seed"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed sampled output: {exc}") from None
    if values.size != where.size:
        raise ValueError(f"{values.size} values for {where.size} positions")
    return where, values


def compared_output(record: dict[str, Any]) -> str | None:
    """The output the correctness probe compares with the reference: the first written argument,
    else the return value (``probe_runner.correctness``)."""
    outputs = record.get("outputs") or []
    written = [o for o in outputs if o.get("arg") != "return"]
    return (written or outputs or [{}])[0].get("arg")


def _as_received(value: Any, seen: dict[str, Any]):
    """A factory tensor as the op received it: a torch tensor of the recorded dtype when the call got one."""
    if str(seen.get("type", "")).startswith("torch") and attestation._host_array(value) is not None \
            and not hasattr(value, "detach"):
        import torch
        return torch.from_numpy(value.copy()).to(getattr(torch, seen["dtype"]))
    return value


def fresh_inputs(fargs: tuple, fkwargs: dict, fresh: dict[str, Any], inputs: list[dict]) -> tuple[list, dict]:
    """The factory's arguments with each tensor replaced by the new data a fresh timed call received
    (``fresh_like`` of the test's value with the recorded seed); ValueError when a rebuilt input's
    digest is not the recorded one (the record and the rebuild disagree)."""
    from .fresh_data import fresh_like
    from .probe_runner import _host
    seen = {i.get("arg"): i for i in inputs}
    by_digest = {row["from"]: row for row in fresh.get("args", [])}

    def swap(value):
        digest = attestation.describe(value, "-").get("sha256") if attestation._host_array(value) is not None else None
        row = by_digest.get(digest)
        if row is None:
            if digest is not None:
                raise ValueError("a factory tensor the fresh call received no new data for")
            return value
        new = fresh_like(_as_received(value, seen.get(row["arg"], {})), int(row["seed"]))
        if attestation.describe(new, "-").get("sha256") != (seen.get(row["arg"]) or {}).get("sha256"):
            raise ValueError(f"argument {row['arg']}: the data rebuilt from seed {row['seed']} are not the recorded input")
        return _host(new)
    return [swap(a) for a in fargs], {k: swap(v) for k, v in fkwargs.items()}


def _expected(reference, fargs: tuple, fkwargs: dict, row: dict[str, Any]):
    """The reference's flat float64 output on the inputs the kept call received."""
    import numpy
    args, kwargs = (fresh_inputs(fargs, fkwargs, row["fresh"], row.get("inputs") or []) if row.get("fresh")
                    else (fargs, fkwargs))
    return numpy.asarray(reference(*args, **kwargs), dtype=numpy.float64).reshape(-1)


def judge(op_dir: Path, manifest_path: Path, requests: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Per case: each request ``{"where", "dtype", "sampled", "arg"[, "fresh", "inputs"]}`` → gate figures on
    its kept values (a fresh-data call against the reference on its rebuilt inputs)."""
    from ..contract import precision
    from ..contract.manifest import load_manifest
    from .probe_runner import _reference
    from .reference_call import factory_case
    man = load_manifest(manifest_path, check_schema=False)
    frozen = man.raw.get("precision_gate")
    reference = _reference(op_dir, frozen)
    out: dict[str, list[dict]] = {}
    for case_id, rows in requests.items():
        fargs, fkwargs, _source = factory_case(op_dir, man, case_id)
        seed42 = None
        for row in rows:
            gate = precision.gate_for(frozen, row["dtype"]) or precision.gate_for(frozen, man.case(case_id).dtype)
            output = next((o for o in row["sampled"].get("outputs", []) if o.get("arg") == row["arg"]), None)
            result = {"where": row["where"], "call": row["sampled"].get("call")}
            try:
                if not row.get("fresh") and seed42 is None:
                    seed42 = _expected(reference, fargs, fkwargs, row)
                expected = _expected(reference, fargs, fkwargs, row) if row.get("fresh") else seed42
            except ValueError as exc:   # the fresh inputs cannot be rebuilt: the record is not evidence
                out.setdefault(case_id, []).append({**result, "problem": str(exc), "unrebuilt": True})
                continue
            if output is None or gate is None:
                result["problem"] = "no kept values of the compared output" if gate else "no frozen gate"
            elif int(output.get("size", -1)) != expected.size:
                result.update(matched_ratio=0.0, meets=False, problem=f"{output.get('size')} elements, the "
                              f"reference has {expected.size}")
            else:
                try:
                    where, values = decode(row["sampled"], output)
                except ValueError as exc:
                    result["problem"] = str(exc)
                else:
                    figures = precision.matched(values, expected[where], gate)
                    result.update(matched_ratio=figures["matched_ratio"], meets=precision.meets(figures, gate),
                                  min_matched=gate["min_matched"], elements=int(where.size))
            out.setdefault(case_id, []).append(result)
    return out


def main(argv=None) -> int:
    from .. import fsio
    from ..argv import parser_from_doc
    parser = parser_from_doc(__doc__, "sampled_values")
    for flag in ("--op-dir", "--manifest", "--requests", "--output"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args(argv)
    requests = fsio.read_json(Path(args.requests), what="sampled-value requests")
    fsio.write_json(args.output, judge(Path(args.op_dir).resolve(), Path(args.manifest), requests))
    return 0


if __name__ == "__main__":
    from ..errors import run_cli
    sys.exit(run_cli(main))
