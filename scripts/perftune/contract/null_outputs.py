"""The precision gate must be able to fail (issue 28 item 8; KernelBench#165: zeros pass 4 of 60).

For every P0 case the golden factory's seed-42 inputs go through the frozen reference
(``precision_gate.reference``, called with the factory's arguments), and three outputs that do no
work are measured against the case's gate (``precision.matched``/``meets``):

- ``zeros``: all zeros of the reference's shape;
- ``constant``: the mean of the reference output everywhere (the best single constant for a mean
  error);
- ``input``: the first factory tensor of the reference's shape, returned as it is.

A gate that accepts one of them checks nothing: ``freeze_cases.py freeze`` refuses it (exit 2, the
SPEC.md precision gate named) and stage5-check reports ``P2.precision_gate_null``
(``stage5_contract_blocked``) for a manifest frozen without the check. The operator's modules run in
a child process (``python3 -m perftune.contract.null_outputs``). The factory: the golden report's
``golden_source`` when it resolves (:mod:`.golden_source`), else ``<op>_golden.py:golden_cases``; a
case without a factory, a gate or a reference is not checked (nothing to run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import fsio
from ..errors import ContractError, PerftuneError
from . import precision

NULLS = ("zeros", "constant", "input")
_SCRIPTS = Path(__file__).resolve().parents[2]


def _array(value: Any):
    import numpy
    if hasattr(value, "detach"):   # torch
        value = value.detach().cpu().float().numpy() if str(getattr(value, "dtype", "")).endswith("bfloat16") \
            else value.detach().cpu().numpy()
    return numpy.asarray(value)


def accepted(reference: Any, tensors: list[Any], gate: dict[str, float]) -> list[str]:
    """Which null outputs ``gate`` accepts against ``reference`` (pure apart from numpy)."""
    import numpy
    ref = _array(reference).astype(numpy.float64)
    if ref.size == 0 or not numpy.issubdtype(ref.dtype, numpy.number):
        return []
    same = [t for t in (_array(t) for t in tensors) if t.shape == ref.shape]
    nulls = {"zeros": numpy.zeros_like(ref), "constant": numpy.full_like(ref, float(numpy.nanmean(ref)))}
    if same:
        nulls["input"] = same[0].astype(numpy.float64)
    return [name for name in NULLS if name in nulls and precision.meets(precision.matched(nulls[name], ref, gate), gate)]


def _factory(op_dir: Path) -> tuple[Path, str] | None:
    from . import golden_source
    try:
        source = golden_source.resolve(op_dir)
        return source.path, source.factory
    except PerftuneError:
        path = op_dir / f"{op_dir.resolve().name}_golden.py"
        return (path, golden_source.DEFAULT_FACTORY) if path.is_file() else None


def check_manifest(op_dir: Path, raw: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(case id, dtype, accepted nulls) per P0 case whose gate accepts one (run in the child process)."""
    from . import golden_source as golden
    gate, found = raw.get("precision_gate") or {}, _factory(op_dir)
    ref = gate.get("reference") or {}
    if not found or not ref.get("function") or not ref.get("path"):
        return []
    reference = golden.load_callable(op_dir / ref["path"], ref["function"], "precision_gate.reference")
    factory = golden.load_callable(found[0], found[1], "golden_cases")
    golden.seed_all()
    dtypes = {c["id"]: c["dtype"] for c in raw.get("cases", [])}
    out = []
    for case_id, args, kwargs in factory([dict(c) for c in raw.get("cases", [])]):
        thresholds = precision.gate_for(gate, dtypes.get(str(case_id), ""))
        if thresholds is None:
            continue
        result = reference(*args, **kwargs)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        tensors = [a for a in list(args) + list(kwargs.values()) if hasattr(a, "shape")]
        per_output = [accepted(r, tensors, thresholds) for r in results]
        common = [n for n in NULLS if all(n in names for names in per_output)] if per_output else []
        if common:
            out.append((str(case_id), dtypes[str(case_id)], common))
    return out


def run(op_dir: str | Path, man: Any) -> list[tuple[str, str, list[str]]]:
    """:func:`check_manifest` of the manifest ``man`` (a Manifest or its raw dict) in a child process;
    a child that cannot run (the golden's modules missing, a broken factory) yields no finding here:
    P9 reports an untrustworthy factory or reference."""
    root = Path(op_dir)
    raw = getattr(man, "raw", man)
    if not (raw.get("precision_gate") or {}).get("reference"):
        return []
    with tempfile.TemporaryDirectory(prefix="perftune_null_outputs_") as scratch:
        manifest_file, out = Path(scratch) / "manifest.json", Path(scratch) / "out.json"
        manifest_file.write_text(json.dumps(raw), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_SCRIPTS), os.environ.get("PYTHONPATH", "")]),
               "PYTHONHASHSEED": "42"}
        argv = [sys.executable, "-m", "perftune.contract.null_outputs", "--op-dir", str(root), "--manifest",
                str(manifest_file), "--output", str(out)]
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not out.is_file():
            return []
        return [(c, d, list(a)) for c, d, a in json.loads(out.read_text(encoding="utf-8"))]


def refuse(op_dir: str | Path, raw: dict[str, Any], source: str = "SPEC.md") -> None:
    """Raise the freeze's ContractError when the gate to be frozen accepts a null output."""
    found = run(op_dir, raw)
    if found:
        case_id, dtype, names = found[0]
        raise ContractError(source, f"precision gate {dtype}", f"accepts {', '.join(names)} as the output of case "
                            f"{case_id} ({len(found)} case(s) in all): a gate that cannot fail checks nothing",
                            "tighten the SPEC.md precision gate (atol/rtol/matched fraction) so a null output fails")


def main(argv=None) -> int:
    from ..argv import parser_from_doc
    parser = parser_from_doc(__doc__, "null_outputs")
    for flag in ("--op-dir", "--manifest", "--output"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args(argv)
    raw = fsio.read_json(args.manifest, what="manifest")
    fsio.write_json(args.output, check_manifest(Path(args.op_dir), raw))
    return 0


if __name__ == "__main__":
    from ..errors import run_cli
    sys.exit(run_cli(main))
