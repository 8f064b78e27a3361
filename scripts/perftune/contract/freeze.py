"""Writing ``PERFORMANCE_CASES.json``: freeze, and re-freeze while no evidence depends on it.

- ``freeze`` builds the manifest from SPEC.md and the ``test_*`` functions of test_<op>.py
  (:mod:`.manifest`, ``ast``, nothing imported), freezes SPEC.md's necessary-work section as
  ``work_model`` (:mod:`.work_model`, evaluated for every case so a bad expression is refused now),
  checks the cpu Op Name (:mod:`.op_name`; on msprof it freezes the runner function that launches the
  device op as ``launcher``) and writes the file once.
- A frozen manifest is replaced only with ``replace`` (a reason) and only while **no round** exists
  (``docs/perf/round_*`` or ``docs/perf/quick/quick_*``: every round binds to the manifest hash).
  The replaced manifest, and a golden report bound to it, move to
  ``docs/perf/manifest_history/NNN/``; ``docs/perf/manifest_history.json`` lists every replacement
  (the replaced file record, the new sha256, the reason, the time). Nothing is overwritten.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import fsio
from . import manifest, null_outputs, op_name, precision, protocol, support_range, work_model
from ..errors import ContractError

HISTORY_DIR = "manifest_history"
HISTORY_NAME = "manifest_history.json"


def _utf8(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError(path, f"byte {exc.start}", f"{what} is not UTF-8", "save it as UTF-8") from None


def measured_rounds(root: Path) -> list[str]:
    """Round folders (formal or quick) under ``docs/perf``: evidence bound to the manifest hash."""
    perf = root / protocol.PERF_DIR
    found = sorted(p for p in perf.glob(f"{protocol.ROUND_PREFIX}*") if p.is_dir())
    found += sorted(p for p in (perf / "quick").glob("quick_*") if p.is_dir())
    return [fsio.display_path(p, root) for p in found]


def build(root: Path, *, target_case_ids: list[str], selection_mode: str, proto: manifest.Protocol,
          test_name: str | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The manifest dict and, on cpu, the Op Name facts; refuses every problem before any write."""
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "is not a directory", "pass the operator directory")
    spec_path, test_path = root / "SPEC.md", root / (test_name or f"test_{root.resolve().name}.py")
    for path, what in ((spec_path, "SPEC.md"), (test_path, "test file")):
        if not path.is_file():
            raise ContractError(path, "-", f"{what} is missing", "complete Stages 1-4 first")
    spec_text, test_text = _utf8(spec_path, "SPEC.md"), _utf8(test_path, "test file")
    spec = manifest.parse_spec(spec_text, str(spec_path))
    tests = manifest.find_test_functions(test_text, str(test_path))
    obj = manifest.build_manifest(spec, tests, target_case_ids=target_case_ids, selection_mode=selection_mode,
                                  proto=proto, spec_source=str(spec_path), test_source=str(test_path))
    model = work_model.parse_section(spec_text, str(spec_path))
    if model is not None:
        for case in obj["cases"]:
            work_model.case_work(model, case["id"], case["shape"], case["dtype"], str(spec_path))
        obj["work_model"] = model
        manifest.parse_manifest(obj, str(spec_path))
    gate = precision.from_spec(spec_text, root, manifest.canonical_dtype, str(spec_path))
    if gate is not None:  # the frozen precision gate (contract/precision.py, #16)
        obj["precision_gate"] = gate
        manifest.parse_manifest(obj, str(spec_path))
    support = support_range.from_spec(spec_text, str(spec_path), [c["shape"] for c in obj["cases"] if c.get("p0", True)],
                                      manifest.canonical_dtype)
    if support is not None:  # shapes and dtypes beyond the P0 cases (P9's beyond-P0 probes, issue 28)
        obj["support_range"] = support
        manifest.parse_manifest(obj, str(spec_path))
    facts = None
    tests, wrapper = [c["test_function"] for c in obj["cases"]], op_name.declared_wrapper(spec_text, str(spec_path))
    if proto.backend == "cpu":
        facts = op_name.check_cpu_op_name(test_text, str(test_path), proto.op_name, tests, wrapper)
    elif proto.backend == "msprof":  # the runner function that launches the device op (P9 wraps it)
        facts = op_name.msprof_launcher(test_text, str(test_path), proto.op_name, tests, wrapper)
        obj["launcher"] = {"function": facts["function"], "rule": facts["rule"]}
        manifest.parse_manifest(obj, str(spec_path))
    return obj, facts


def _archive(root: Path, reason: str, new_sha: str, at: str) -> dict[str, Any]:
    """Move the frozen manifest (and a golden report bound to it) into the next history folder."""
    perf = root / protocol.PERF_DIR
    history_path = perf / HISTORY_NAME
    history = fsio.read_json(history_path, what="manifest history") if history_path.exists() else \
        {"schema_version": 1, "entries": []}
    number = len(history["entries"]) + 1
    folder = perf / HISTORY_DIR / f"{number:03d}"
    if folder.exists():
        raise ContractError(folder, "-", "history folder already exists", "restore manifest_history.json")
    old = root / protocol.MANIFEST_NAME
    moved = [old] + [p for p in (root / protocol.GOLDEN_REPORT_NAME, root / protocol.GOLDEN_REPORT_MD) if p.exists()]
    records = [fsio.file_record(p, root) for p in moved]
    folder.mkdir(parents=True)
    for path in moved:
        os.replace(path, folder / path.name)
    entry = {"number": number, "replaced": records[0], "archived": [
        {**r, "moved_to": fsio.display_path(folder / Path(r["path"]).name, root)} for r in records],
        "replaced_by_sha256": new_sha, "reason": reason, "replaced_at": at}
    history["entries"].append(entry)
    fsio.write_json(history_path, history)
    return entry


def freeze(op_dir: str | Path, *, target_case_ids: list[str], selection_mode: str, proto: manifest.Protocol,
           test_name: str | None = None, replace: str | None = None, at: str = "-"
           ) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Write the manifest; returns (path, manifest, report with ``op_name_check`` and ``replaced``)."""
    root = Path(op_dir)
    out = root / protocol.MANIFEST_NAME
    exists = out.exists()
    if exists and replace is None:
        raise ContractError(out, "-", "a frozen manifest already exists and is never overwritten",
                            "re-freeze with --replace REASON while no round exists, or validate it")
    if exists:
        rounds = measured_rounds(root)
        if rounds:
            raise ContractError(out, "--replace", f"rounds already measured under this manifest ({rounds[0]}, "
                                f"{len(rounds)} in all)", "the contract is final once a round exists; "
                                "start from a new op dir")
        manifest.load_manifest(out, check_schema=False)  # a corrupt one is reported, never archived blindly
    elif replace is not None:
        raise ContractError(out, "--replace", "there is no frozen manifest to replace", "drop --replace")
    obj, facts = build(root, target_case_ids=target_case_ids, selection_mode=selection_mode, proto=proto,
                       test_name=test_name)
    null_outputs.refuse(root, obj)   # the precision gate must be able to fail (issue 28 item 8)
    replaced = _archive(root, replace, fsio.sha256_bytes(fsio.dumps(obj).encode()), at) if exists else None
    fsio.write_json(out, obj, overwrite=False)
    return out, obj, {"op_name_check": facts, "replaced": replaced}


def p0_case_ids(op_dir: str | Path) -> list[str]:
    """Every P0 case id of the operator's SPEC.md, in table order (``--target-case-ids all_p0``)."""
    path = Path(op_dir) / "SPEC.md"
    return [c.id for c in manifest.parse_spec(path.read_text(encoding="utf-8") if path.is_file() else "", str(path)).cases if c.p0]
