"""Synthetic but realistic msprof evidence rounds for the scale benchmark.

``build_op_dir(root, Shape(...))`` writes an operator directory the way ``collect_perf.py
formal`` (msprof backend) leaves it after two formal rounds, plus a two-version candidate
register, so compare_perf, select_best and stage5_check's evidence loading run on it unchanged:

    <op>/PERFORMANCE_CASES.json           v2 manifest, backend msprof, n cases (all P0, all target)
    <op>/test_<op>.py, <op>/<op>_kernel.py  the "sources" hashed into executable_sha256
    <op>/docs/perf/round_001 (baseline), round_002 (candidate, true speed-up ``speedup``):
        collection.json (complete, evidence_seal of every raw file), case_<id>_<sha8>/measurement.json,
        case_<...>/repeat_NNN/op_summary_<Metric>.csv x 7, collection.log, evidence_status.json
    <op>/docs/perf/candidates.json, correctness/<run>.json, versions/<v>/ (saved copies)

Each op_summary has the real msprof header (``Device_id`` ... ``Context ID`` + the metric
group's ``aic_*``/``aiv_*`` columns), ``rows`` rows: the frozen target kernel once, in the
middle, among other kernels (MatMul, Add, Cast, MemSet, TransData, AI_CPU rows with ``N/A``
cells, and a ``<target>_tail`` near-name that must never match). ``big_rows`` replaces the
PipeUtilization table of round_002 / first case / repeat_001 by a table of that many rows.

Target durations are drawn once from a seeded log-normal (2 % noise) and written with 3
decimals, so the value ``read_repeat`` re-derives is exactly the one in measurement.json.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perftune.measure import evidence, routing
from perftune import fsio
from perftune.contract import protocol, schemas
from perftune.measure.backends.base import EVIDENCE_STATUS, RepeatResult
from perftune.measure.backends.msprof import TIMING_FILE, metric_file
from perftune.contract.manifest import make_protocol, parse_manifest

TARGET = "pypto_scaleop_kernel_mix_aic_0"
OP = "scaleop"
LAYOUT = json.loads((Path(__file__).resolve().parents[2] / "tests/fixtures/msprof/op_summary_layout.json")
                    .read_text(encoding="utf-8"))  # the one recorded msprof layout, shared with fake msprof
BASE, METRICS, TARGET_PIPE = LAYOUT["base_columns"], LAYOUT["metric_columns"], LAYOUT["target_pipe_ratios"]
# (Op Name, OP Type, Task Type, duration us, input shapes) of the kernels around the target
NEIGHBOURS = [("aclnnMatmul_MatMulV3_{i}", "MatMulV3", "AI_CORE", 212.4, "4096,4096;4096,4096"),
              ("aclnnAdd_AddAiCore_Add_{i}", "Add", "AI_VECTOR_CORE", 9.81, "64,4096;64,4096"),
              ("aclnnCast_Cast_{i}", "Cast", "AI_VECTOR_CORE", 6.78, "64,4096"),
              ("MemSet", "MemSet", "AI_VECTOR_CORE", 1.46, "1024"),
              ("TransData_{i}", "TransData", "AI_VECTOR_CORE", 14.02, "64,4096"),
              ("aclnnFlashAttentionScore_{i}", "FlashAttentionScore", "MIX_AIC", 388.7, "8,2048,128"),
              ("aclnnNonzero_NonZero_{i}", "NonZero", "AI_CPU", 52.3, "4096"),
              (f"{TARGET}_tail", "scaleop_kernel", "MIX_AIC", 131.5, "64,4096")]


@dataclass(frozen=True)
class Shape:
    cases: int
    repeats: int
    rows: int
    big_rows: int | None = None
    speedup: float = 1.05
    noise: float = 0.02
    seed: int = 42


def _cells(metric: str, task_type: str, duration: float, target: bool, salt: int) -> list[str]:
    out = []
    for column in METRICS[metric]:
        if column.startswith("aic") and task_type in ("AI_VECTOR_CORE", "AI_CPU"):
            out.append("N/A")
        elif column in ("aicore_time(us)", "aiv_time(us)"):
            out.append(f"{duration * TARGET_PIPE[column]:.3f}")
        elif target and column in TARGET_PIPE:
            out.append(str(TARGET_PIPE[column]))
        elif column.endswith("cycles") or column.endswith("fops"):
            out.append(str(int(duration * 1850) + salt))
        else:
            out.append(f"{0.05 + (salt * 7 + len(column)) % 40 / 100:.3f}")
    return out


def _line(metric: str, task_id: int, name: str, op_type: str, task_type: str, duration: float,
          shapes: str, target: bool = False) -> str:
    mix = "0" if task_type in ("AI_VECTOR_CORE", "AI_CPU") else "48"
    head = ["0", "N/A", "4294967295", str(task_id), "2", "N/A", name, op_type, "dynamic", task_type,
            f"{1718000000000 + task_id * 250.0:.3f}\t", f"{duration:.3f}", "0", "24", mix, "NO",
            f'"{shapes}"', "FLOAT", "ND", f'"{shapes}"', "FLOAT", "ND", "N/A"]
    return ",".join(head + _cells(metric, task_type, duration, target, task_id % 13)) + "\n"


def neighbour_block(metric: str, count: int, start_id: int = 1) -> str:
    """``count`` non-target rows (a cycle over NEIGHBOURS, kernel names made unique per cycle)."""
    templates = [(n.format(i=k) if "{i}" in n else n, t, tt, d, s)
                 for k, (n, t, tt, d, s) in enumerate(NEIGHBOURS)]
    pieces = {}
    for k, tpl in enumerate(templates):
        cells = _line(metric, 0, *tpl).split(",", 11)     # no comma before the quoted shapes
        pieces[k] = (",".join(cells[4:10]), cells[11])      # around Task ID and start time
    parts = []
    for task_id in range(start_id, start_id + count):
        pre, post = pieces[task_id % len(templates)]
        parts.append(f"0,N/A,4294967295,{task_id},{pre},{1718000000000 + task_id * 250.0:.3f}\t,{post}")
    return "".join(parts)


def table_text(metric: str, rows: int, duration: float, blocks: dict) -> str:
    """One op_summary text: header, rows//2 neighbours, the target row, the remaining neighbours."""
    before = (rows - 1) // 2
    key = (metric, rows)
    if key not in blocks:
        blocks[key] = (neighbour_block(metric, before, 1), neighbour_block(metric, rows - 1 - before, before + 2))
    head, rest = blocks[key]
    target = _line(metric, before + 1, TARGET, "scaleop_kernel", "MIX_AIC", duration, "64,4096", target=True)
    return ",".join(BASE + METRICS[metric]) + "\n" + head + target + rest


def true_durations(shape: Shape) -> dict[str, np.ndarray]:
    """Per round: a (cases, repeats) array of target durations (us), 3 decimals."""
    rng = np.random.default_rng(shape.seed)
    centre = 100.0 + 20.0 * np.arange(shape.cases)[:, None]
    noise = lambda: rng.lognormal(0.0, shape.noise, (shape.cases, shape.repeats))  # noqa: E731
    return {"round_001": np.round(centre * noise(), 3), "round_002": np.round(centre / shape.speedup * noise(), 3)}


def case_ids(n: int) -> list[str]:
    return [f"r{64 * (k + 1)}_c4096_fp16" for k in range(n)]


def _sources(op: Path, ids: list[str]) -> None:
    tests = "".join(f"\n\ndef test_{cid}():\n    run_case({cid!r})\n" for cid in ids)
    fsio.write_text(op / f"{OP}_kernel.py", "def scaleop_kernel(x):\n    return x\n")
    fsio.write_text(op / f"test_{OP}.py", f"from {OP}_kernel import scaleop_kernel\n\n\n"
                    "def run_case(case_id):\n    print('PASS', case_id)\n" + tests)


def _manifest(op: Path, shape: Shape, ids: list[str]) -> None:
    proto = make_protocol(backend="msprof", device_id=0, warmup=1, repeats=shape.repeats, op_name=TARGET)
    obj = {"schema_version": protocol.MANIFEST_SCHEMA_VERSION,
           "cases": [{"id": c, "shape": f"[{64 * (k + 1)},4096]", "dtype": "float16", "p0": True,
                      "test_function": f"test_{c}"} for k, c in enumerate(ids)],
           "optimization_target": {"case_ids": ids, "selection_mode": "all_p0_no_questions"},
           "protocol": proto.as_dict()}
    parse_manifest(obj)
    fsio.write_json(op / protocol.MANIFEST_NAME, obj)


def _log(argv_tail: str) -> str:
    runs = [f"argv: ['msprof', '--ai-core=on', '--aic-metrics={m}', '--task-time=on', '--ascendcl=on', "
            f"'--output=<scratch>/{m}', {argv_tail}]\nreturncode: 0\n--- stdout ---\n"
            f"PYPTO_PERF_SELECTED_CASE=<id>\n--- stderr ---\n\n" for m in METRICS]
    return "\n".join(runs)


def _write_json(path: Path, schema: str, obj: dict) -> None:
    """Validated, same bytes as fsio.write_json, but without one fsync per file (generation speed)."""
    schemas.validate(obj, schema, path)
    path.write_text(fsio.dumps(obj), encoding="utf-8")


def _route(rows: int, source: str) -> dict:
    """The bound route ``read_repeat`` derives from the target row of a ``rows``-row PipeUtilization."""
    header = BASE + METRICS[protocol.CANONICAL_METRIC]
    line = _line(protocol.CANONICAL_METRIC, 1, TARGET, "scaleop_kernel", "MIX_AIC", 100.0, "64,4096", target=True)
    cells = line.rstrip("\n").split(",")
    cells = cells[:16] + ["64,4096", cells[18], cells[19], "64,4096"] + cells[22:]   # re-join quoted shapes
    values = {}
    for column, cell in zip(header, cells):
        text = cell.strip()
        try:
            values[column] = None if text in ("N/A", "") else float(text)
        except ValueError:
            values[column] = text
    return {**routing.route(values, source), "source_file": TIMING_FILE, "source_row": (rows - 1) // 2 + 1}


def _repeat(repeat_dir: Path, shape: Shape, case_id: str, index: int, duration: float, rows: int,
            blocks: dict) -> RepeatResult:
    repeat_dir.mkdir(parents=True)
    for metric in METRICS:   # only the timing table may be the big one
        count = rows if metric == protocol.CANONICAL_METRIC else shape.rows
        (repeat_dir / metric_file(metric)).write_text(table_text(metric, count, duration, blocks))
    (repeat_dir / "collection.log").write_text(_log("'python', '-m', 'perftune.measure.backends.case_adapter'"))
    route = _route(rows, str(repeat_dir / TIMING_FILE))
    files = tuple(metric_file(m) for m in METRICS)
    _write_json(repeat_dir / EVIDENCE_STATUS, "evidence_status", {
        "format_version": protocol.EVIDENCE_FORMAT_VERSION, "backend": "msprof", "case": case_id, "target_op_name": TARGET, "status": "complete",
        "timing_source_file": TIMING_FILE, "repeat": index, "duration_us": duration, "calls": 1,
        "bound_diagnosis": route, "seven_metric_status": "complete", "per_core_claim_allowed": False,
        "per_core_status": "unavailable:no_aicore_db"})
    return RepeatResult(duration, 1, route, files)


def write_round(op: Path, name: str, shape: Shape, durations: np.ndarray, blocks: dict, ident: dict,
                big: bool) -> Path:
    """One complete formal round, laid out and sealed as collect_perf.py formal leaves it."""
    round_dir = evidence.perf_dir(op) / name
    round_dir.mkdir(parents=True)
    man = parse_manifest(fsio.read_json(op / protocol.MANIFEST_NAME))
    collection = {"format_version": protocol.EVIDENCE_FORMAT_VERSION, "collection_id": f"compare_20250101T00000{name[-1]}Z_{name}", "operator_dir": op.as_posix(),
                  "backend": "msprof", "target_op_name": TARGET, "device_id": 0, "seed": protocol.SEED,
                  "warmup": 1, "repeats": shape.repeats, "expected_cases": list(man.case_ids),
                  "performance_cases": ident["performance_cases"], "executable_sha256": ident["executable_sha256"],
                  "created_at": "2025-01-01T00:00:00Z", "mode": "compare", "status": "in_progress",
                  "source_files": ident["source_files"], "source_revision": None,
                  "protocol": man.protocol.as_dict(), "selector": {"kind": "function_adapter",
                                                                   "name": "perftune.measure.backends.case_adapter"},
                  "case_attempts": {}}
    for k, case_id in enumerate(man.case_ids):
        case_dir = round_dir / evidence.case_dir_name(case_id)
        results = []
        for index in range(1, shape.repeats + 1):
            rows = shape.big_rows if (big and k == 0 and index == 1) else shape.rows
            results.append(_repeat(case_dir / f"repeat_{index:03d}", shape, case_id, index,
                                   float(durations[k, index - 1]), rows, blocks))
        rel = [fsio.display_path(case_dir / f"repeat_{i:03d}", op) for i in range(1, shape.repeats + 1)]
        _write_json(case_dir / evidence.MEASUREMENT_JSON, "measurement", evidence.measurement_record(
            collection_id=collection["collection_id"], case_id=case_id, op_name=TARGET, backend="msprof",
            method=man.protocol.aggregation, repeat_dirs=rel, timing_file=TIMING_FILE, results=results))
        collection["case_attempts"][case_id] = 1
    collection.update(status="complete", completed_cases=len(man.case_ids), completed_at="2025-01-01T01:00:00Z",
                      evidence_seal=evidence.evidence_seal(round_dir))
    evidence.write_collection(round_dir, collection)
    return round_dir


def _identity(op: Path) -> dict:
    files = evidence.source_files(op)
    return {"executable_sha256": evidence.executable_sha256(op, files),
            "source_files": [fsio.file_record(p, op) for p in files],
            "performance_cases": {**fsio.file_record(op / protocol.MANIFEST_NAME, op), "schema_version": 2}}


def _candidates(op: Path, ident: dict, ids: list[str]) -> None:
    """A baseline (v0, round_001) and one candidate (v1, round_002), both eligible."""
    perf, sha = evidence.perf_dir(op), ident["executable_sha256"]
    run_id = f"c001-{sha[:8]}"
    fsio.write_json(perf / "correctness" / f"{run_id}.json", {
        "schema_version": 1, "run_id": run_id, "executable_sha256": sha, "source_files": ident["source_files"],
        "test_file": fsio.file_record(op / f"test_{OP}.py", op), "device_id": 0, "all_passed": True,
        "created_at": "2025-01-01T00:00:00Z",
        "cases": [{"id": c, "test_function": f"test_{c}", "returncode": 0, "passed": True, "matched_ratio": 1.0,
                   "max_abs_error": 0.0, "printed_pass": True, "output_tail": "PASS"} for c in ids]})
    entries = []
    for order, (version, round_name) in enumerate((("v0", "round_001"), ("v1", "round_002"))):
        for record in ident["source_files"]:
            target = perf / "versions" / version / record["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(op / record["path"], target)
        collection = fsio.read_json(perf / round_name / evidence.COLLECTION_JSON)
        entries.append({"version_id": version, "evaluation_order": order, "executable_sha256": sha,
                        "source_files": ident["source_files"], "saved_copy": f"{protocol.PERF_DIR}/versions/{version}",
                        "items": [] if order == 0 else ["general_method:double_buffer"],
                        "correctness": {"run_id": run_id, "executable_sha256": sha}, "compliance": "stage4_gates pass",
                        "formal_collection_id": collection["collection_id"], "round": round_name,
                        "kb_gaps_open": False, "recorded_at": "2025-01-01T02:00:00Z"})
    fsio.write_json(perf / protocol.CANDIDATES_NAME, {"schema_version": 1, "candidates": entries})


def build_op_dir(root: Path, shape: Shape) -> Path:
    """Write the whole synthetic operator directory under ``root/scaleop`` (must not exist)."""
    op = Path(root) / OP
    op.mkdir(parents=True)
    ids = case_ids(shape.cases)
    _sources(op, ids)
    _manifest(op, shape, ids)
    ident, blocks = _identity(op), {}
    durations = true_durations(shape)
    for name in ("round_001", "round_002"):
        write_round(op, name, shape, durations[name], blocks, ident, big=shape.big_rows is not None
                    and name == "round_002")
    _candidates(op, ident, ids)
    return op


def csv_files(op: Path) -> list[Path]:
    """Every op_summary CSV of the two rounds (what the pandas floor reads)."""
    return sorted(evidence.perf_dir(op).glob("round_*/case_*/repeat_*/op_summary_*.csv"))
