"""The end-to-end Stage 5 demo (DESIGN §11): drive the REAL scripts on a copy of the example.

Every step is a subprocess ``python scripts/<name>.py ...`` exactly as a user types it; the demo
computes nothing itself except the plan decisions of :mod:`perftune.demo.plan`, and reads results
only from the scripts' ``--json`` output and the files they wrote. Each step's argv, exit code,
stdout and stderr go to ``<workdir>/demo_logs/NN_<step>.log``. A missing script stops the demo
with exit 2 naming the step. Protocol of the demo (chosen for < 2 min on 2 cores): all 4 P0 cases,
``all_p0_no_questions``, backend cpu, op ``softmax_kernel``, warm-up 1, repeats 10, noise band
0.05 (frozen before any result: unpaired cpu rounds on a shared machine drift by a few per cent, so
the default 1 % band would call equal-speed cases slower or faster by chance).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import plan as demo_plan
from .. import fsio
from ..errors import CheckFailed, ContractError

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = ROOT / "scripts"
EXAMPLE = ROOT / "examples" / "softmax"
TEST_FILE = "test_softmax.py"
CASES = ("r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16")
SELECTION_MODE = "all_p0_no_questions"
WARMUP, REPEATS = 1, 10
NOISE_BAND = 0.05   # cpu timing on a shared 2-core VM drifts by a few % between unpaired rounds
BOTTLENECK_DIR = "docs/perf/bottleneck"
MARKER = ".stage5_demo_run"
DEFAULT_WORKDIR = ROOT / "demo_work"


STEP_TIMEOUT_S = 600


class CaseBar:
    """A one-line bar of finished cases for long steps, redrawn in place on a terminal.

    ``update`` takes one stderr line of ``collect_perf.py`` (it prints ``  <case id>: ...`` when a
    case is done); ``close`` erases the bar so the step's progress line follows cleanly.
    """

    WIDTH = 24

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream, self.total, self.done = stream, total, 0

    def update(self, line: str) -> None:
        case = line.strip().split(":", 1)[0]
        if not line.startswith("  ") or case not in CASES:
            return
        self.done = min(self.done + 1, self.total)
        filled = round(self.WIDTH * self.done / self.total)
        text = f"     [{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} cases  {case}"
        self.stream.write("\r" + text[:79].ljust(79))
        self.stream.flush()

    def close(self) -> None:
        if self.done:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()


def run_streaming(argv: list[str], cwd: Path, on_stderr_line: Callable[[str], None],
                  timeout: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``subprocess.run`` with stderr handed over line by line while the process runs."""
    with subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
        reader.start()
        timed_out: list[bool] = []
        watchdog = threading.Timer(timeout, lambda: (timed_out.append(True), proc.kill()))
        watchdog.start()
        err = []
        try:
            for line in proc.stderr:
                err.append(line)
                on_stderr_line(line)
            proc.wait()
        finally:
            watchdog.cancel()
            reader.join()
    if timed_out:
        err.append(f"killed after the {timeout:.0f} s step timeout\n")
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(out), "".join(err))


@dataclass
class Driver:
    """Runs the scripts in order inside one operator directory and remembers the state."""

    op: Path
    logs: Path
    progress: Callable[[str], None]
    bar_stream: TextIO | None = None      # a terminal: long steps draw a CaseBar there
    step_no: int = 0
    best: str = "v000"
    rounds: dict[str, dict[str, str]] = field(default_factory=dict)   # version -> {round, collection_id}
    sources: dict[str, Path] = field(default_factory=dict)            # version -> test file to apply
    examined: list[str] = field(default_factory=list)

    def run(self, script: str, *args: str, ok: tuple[int, ...] = (0,), parse: bool = True,
            label: str = "") -> tuple[int, Any]:
        """Run one script; refuse unexpected exit codes; return (code, parsed --json output)."""
        self.step_no += 1
        name = f"{script} {args[0] if args and not args[0].startswith('-') else ''}".strip()
        path = SCRIPTS / script
        if not path.is_file():
            raise ContractError(path, f"step {self.step_no}", f"{script} does not exist yet",
                                "the demo stops here until that script is delivered")
        argv = [sys.executable, str(path), *map(str, args), *(["--json"] if parse else [])]
        start = time.monotonic()
        if self.bar_stream is not None and script == "collect_perf.py" and args[0] in ("formal", "quick"):
            bar = CaseBar(self.bar_stream, len(CASES))
            try:
                proc = run_streaming(argv, self.op, bar.update)
            finally:
                bar.close()
        else:
            proc = run_streaming(argv, self.op, lambda _line: None)
        took = time.monotonic() - start
        log = self.logs / f"{self.step_no:02d}_{script.removesuffix('.py')}.log"
        fsio.write_text(log, f"argv: {argv}\nreturncode: {proc.returncode}\n--- stdout\n{proc.stdout}\n"
                             f"--- stderr\n{proc.stderr}")
        self.progress(f"[{self.step_no:2d}] {name:<34} exit {proc.returncode} ({took:5.1f} s) {label}".rstrip())
        if proc.returncode not in ok:
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            error = CheckFailed if proc.returncode == 1 else ContractError
            raise error(log, name, f"exit {proc.returncode}: {tail}", "see the step log")
        data = None
        if parse and proc.stdout.strip():
            try:
                data = fsio.loads_json(proc.stdout, what="step output")
            except ContractError:
                raise ContractError(log, name, "--json output is not JSON", "see the step log") from None
        return proc.returncode, data

    def apply(self, version: str) -> None:
        shutil.copyfile(self.sources[version], self.op / TEST_FILE)

    def correctness(self) -> tuple[bool, str | None]:
        code, data = self.run("check_correctness.py", "--op-dir", self.op, ok=(0, 1))
        return code == 0, (data or {}).get("run_id")

    def formal(self, version: str, *extra: str) -> dict[str, str]:
        _, data = self.run("collect_perf.py", "formal", "--op-dir", self.op, *extra, label=version)
        entry = {"round": Path(str(data["round"])).name, "collection_id": data["collection_id"]}
        self.rounds[version] = entry
        self.examined.append(f"docs/perf/{entry['round']}")
        return entry

    def record(self, version: str, run_id: str, items: list[str]) -> None:
        self.run("select_best.py", "record", "--op-dir", self.op, "--version-id", version, "--round",
                 self.rounds[version]["round"], "--correctness", run_id, *(["--items", *items] if items else []),
                 "--compliance", "single kernel, wrapper unchanged (tests/demo/test_variants.py)")

    def ledger(self, item: str, *args: str) -> None:
        self.run("ledger.py", "update", "--op-dir", self.op, "--item", item, "--actor", "demo", *args, label=item)


def prepare(workdir: Path) -> tuple[Path, Path]:
    """A new ``run_NNN`` folder (atomic mkdir) under ``workdir`` with a copy of the example operator
    (no variants/, no evidence) and a marker that lets later runs recognise it as a demo run."""
    workdir.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        run = workdir / f"run_{n:03d}"
        try:
            run.mkdir()
        except FileExistsError:
            continue
        fsio.write_text(run / MARKER, "stage5 demo run\n")
        op = run / "softmax"
        shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("variants", "docs", "__pycache__", "README.md"))
        return run, op
    raise ContractError(workdir, "--workdir", "holds 999 demo runs", "remove old runs or pass --keep less often")


def prune(workdir: Path, keep: Path) -> list[str]:
    """Remove earlier demo runs (folders with the marker) except ``keep``; never touches other files."""
    removed = []
    for run in sorted(workdir.glob("run_*")):
        if run != keep and run.is_dir() and not run.is_symlink() and (run / MARKER).is_file():
            shutil.rmtree(run)
            removed.append(run.name)
    return removed


def setup(d: Driver) -> str:
    """Freeze, golden, platform probe, baseline correctness, preflight, formal round; the run id."""
    d.run("freeze_cases.py", "freeze", "--op-dir", d.op, "--target-case-ids", *CASES, "--selection-mode",
          SELECTION_MODE, "--backend", "cpu", "--op-name", "softmax_kernel", "--repeats", str(REPEATS),
          "--warmup", str(WARMUP), "--noise-band", str(NOISE_BAND))
    d.run("collect_golden_reference.py", "softmax_golden.py", "--function", "softmax_golden", "--factory",
          "golden_cases", "--case-manifest", "PERFORMANCE_CASES.json", "--output-dir", ".", "--device", "0",
          "--warmup", str(WARMUP), "--repeats", str(REPEATS), "--seed", "42", "--backend", "cpu")
    d.run("terminal_evidence.py", "probe", "--output", "docs/perf/platform_cpu.json")
    passed, run_id = d.correctness()
    if not passed:
        raise CheckFailed(d.op / TEST_FILE, "baseline", "the baseline fails its own tests", "fix the example")
    d.run("collect_perf.py", "preflight", "--op-dir", d.op)
    d.formal("v000")
    return run_id


def close_planned(d: Driver, plan: demo_plan.Plan, baseline_run: str, closed: dict[str, list[str]]) -> None:
    """Close every item the plan closes without an experiment (``same_as`` ones once their twin closed)."""
    base = d.rounds["v000"]["collection_id"]
    for c in plan.closures:
        if c.same_as is None:
            extra = [*(["--applicability", c.applicability] if c.applicability else []),
                     *(["--grounds", c.grounds] if c.grounds else [])]
            d.ledger(c.item_id, "--status", c.status, "--note", c.note, "--code-ref", TEST_FILE,
                     "--correctness", baseline_run, "--formal", base, *extra)
            closed[c.item_id] = []


def close_twins(d: Driver, plan: demo_plan.Plan, closed: dict[str, list[str]]) -> None:
    for c in plan.closures:
        if c.same_as in closed and c.item_id not in closed:
            d.ledger(c.item_id, *closed[c.same_as], "--note", f"{c.note} (as {c.same_as})",
                     "--relation", "overlap", c.same_as)
            closed[c.item_id] = []


def _close(d: Driver, item: str, args: list[str], note: str, closed: dict[str, list[str]]) -> None:
    """Close ``item`` with status/evidence ``args``; remember them for its ``same_as`` twins."""
    d.ledger(item, *args, "--note", note)
    closed[item] = args


def experiment(d: Driver, exp: demo_plan.Experiment, closed: dict[str, list[str]]) -> str:
    """Apply one variant, check, quick-screen, maybe formal; close its item; returns the outcome."""
    d.sources[exp.version_id] = EXAMPLE / "variants" / exp.version_id / TEST_FILE
    d.apply(exp.version_id)
    common = ["--code-ref", f"variants/{exp.version_id}/{TEST_FILE}", "--restore-point", d.best,
              "--mechanism", exp.hypothesis]
    passed, run_id = d.correctness()
    if not passed:
        d.apply(d.best)
        _close(d, exp.item_id, ["--status", "rejected", "--reason-code", "correctness_failed",
                                "--correctness", run_id or "-", *common], "precision gate failed", closed)
        return "rejected (correctness_failed)"
    _, quick = d.run("collect_perf.py", "quick", "--op-dir", d.op, label=exp.version_id)
    _, screen = d.run("compare_perf.py", "quick", "--op-dir", d.op, "--baseline",
                      d.rounds[d.best]["collection_id"], "--quick", quick["collection_id"])
    evidence = [*common, "--correctness", run_id, "--quick", quick["collection_id"]]
    promo = screen["promotion"]
    mean = promo["mean_case_speedup"]
    if not promo["promote"]:
        d.apply(d.best)
        _close(d, exp.item_id, ["--status", "rejected", "--reason-code", "quick_not_promoted", *evidence],
               f"quick mean speed-up {mean:.3f} vs {d.best} (rule: {promo['rule']}, threshold "
               f"{promo['threshold']}); slower target cases: {promo['slower_target_cases'] or 'none'}", closed)
        return f"rejected (quick_not_promoted: quick mean speed-up {mean:.3f} vs {d.best})"
    entry = d.formal(exp.version_id, "--paired-with", f"docs/perf/versions/{d.best}")  # drift cancels
    _, perf = d.run("compare_perf.py", "formal", "--op-dir", d.op, "--baseline", d.rounds[d.best]["round"],
                    "--candidate", entry["round"], ok=(0, 1))
    status, reason, note = demo_plan.acceptance(perf)
    parent = d.best
    if status == "accepted":  # only accepted versions become candidates: ledger and ranking agree
        d.record(exp.version_id, run_id, [exp.item_id])
    _close(d, exp.item_id, ["--status", status, *(["--reason-code", reason] if reason else []), *evidence,
                            "--formal", entry["collection_id"], d.rounds[parent]["collection_id"]],
           f"vs {parent}: {note}", closed)
    if status == "accepted":
        d.best = exp.version_id
    else:
        d.apply(parent)
    suite = perf["suite"].get("mean_case_speedup")
    shown = "n/a" if suite is None else f"{suite:.3f}"
    return f"{status}{f' ({reason})' if reason else ''} vs {parent}, suite mean speed-up {shown}"


def derive_bottleneck(d: Driver, exp: demo_plan.Experiment) -> None:
    """Record the roofline evidence of the best round and add the bottleneck_derived item."""
    best = d.rounds[d.best]["round"]
    evidence = f"{BOTTLENECK_DIR}/terminal_evidence_{best}.json"
    d.run("terminal_evidence.py", "build", "--op-dir", d.op, "--round", best, "--output", evidence, label=d.best)
    d.examined.append(evidence)
    d.run("ledger.py", "add", "--op-dir", d.op, "--actor", "demo", "--item-id", exp.item_id, "--title",
          exp.hypothesis.split(":")[0][:80], "--evidence-file", evidence, "--expected-metric",
          exp.expected_metric, "--hypothesis", exp.hypothesis, label=exp.item_id)


def explore(d: Driver, plan: demo_plan.Plan, baseline_run: str) -> dict[str, str]:
    """Ledger init, planned closures, record v000 (kb items closed first), every experiment in order."""
    d.run("ledger.py", "init", "--op-dir", d.op, "--actor", "demo")
    _, shown = d.run("ledger.py", "show", "--op-dir", d.op)
    items = [i["item_id"] for i in (shown.get("items") if isinstance(shown, dict) else shown) or []]
    derived = {e.item_id for e in plan.experiments if e.source_kind == "bottleneck_derived"}
    missing = demo_plan.unplanned(plan, items)
    if missing:
        raise ContractError(EXAMPLE / "variants/variants.json", "closures", f"ledger items without a plan: "
                            f"{missing}", "add an experiment or a closure for each enumerated item")
    closed: dict[str, list[str]] = {}
    close_planned(d, plan, baseline_run, closed)
    d.record("v000", baseline_run, [])
    outcomes = {}
    for exp in plan.experiments:
        if exp.item_id in derived:
            derive_bottleneck(d, exp)
        outcomes[exp.version_id] = experiment(d, exp, closed)
        close_twins(d, plan, closed)
    return outcomes


def finish(d: Driver, plan: demo_plan.Plan) -> tuple[int, dict[str, Any]]:
    """Sweep, ledger check, choose, final paired round, compare, confirm, evidence, report, verify."""
    findings = [x for f in plan.sweep_findings for x in ("--finding", f["finding"], f["maps_to"], f["note"])]
    d.run("ledger.py", "sweep", "--op-dir", d.op, "--actor", "demo", "--scope", plan.sweep_scope, "--examined",
          "docs/perf/ledger.json", "docs/perf/candidates.json", *d.examined, *findings)
    d.run("ledger_check.py", "--op-dir", d.op)
    _, selection = d.run("select_best.py", "choose", "--op-dir", d.op)
    chosen = selection["chosen"]
    saved = fsio.read_json(d.op / "docs/perf/candidates.json", what="candidate register")
    copy = next(c["saved_copy"] for c in saved["candidates"] if c["version_id"] == chosen)
    shutil.copyfile(d.op / copy / TEST_FILE, d.op / TEST_FILE)
    # no new correctness run: the chosen version's recorded run has exactly this code hash (P5 accepts it)
    final = d.formal("final", "--paired-with", "docs/perf/versions/v000")
    _, perf = d.run("compare_perf.py", "formal", "--op-dir", d.op, "--baseline", d.rounds["v000"]["round"],
                    "--candidate", final["round"], ok=(0, 1))
    _, confirm = d.run("select_best.py", "confirm", "--op-dir", d.op, "--final-round", final["round"], ok=(0, 1))
    d.run("terminal_evidence.py", "build", "--op-dir", d.op, "--round", final["round"])
    _, report = d.run("perf_report.py", "--op-dir", d.op)
    code, verdict = d.run("stage5_check.py", "--op-dir", d.op, "--target-case-ids", *CASES, "--selection-mode",
                          SELECTION_MODE, ok=(0, 1))
    line = "Stage 5 verification PASSED." if code == 0 else "Stage 5 verification FAILED."
    report_path = str(d.op / "PERFORMANCE_REPORT.md")
    result = demo_plan.summary(perf, selection, verdict, report_path, line)
    result["confirm"] = {k: (confirm or {}).get(k) for k in ("consistent", "ratio", "ratio_ci", "delta", "action")}
    return code, result


def run_demo(workdir: str | Path | None = None, *, keep: bool = False,
             progress: Callable[[str], None] = print,
             bar_stream: TextIO | None = None) -> tuple[int, dict[str, Any]]:
    """The whole demo in a new ``run_NNN`` under ``workdir``; returns (stage5_check exit code, summary).

    Earlier demo runs in ``workdir`` are removed after a completed run unless ``keep``. With a
    ``bar_stream`` (a terminal), measuring steps draw a per-case progress bar on it.
    """
    plan = demo_plan.parse_plan(fsio.read_json(EXAMPLE / "variants" / "variants.json", what="variants.json"),
                                "variants.json")
    base = Path(workdir) if workdir else DEFAULT_WORKDIR
    run, op = prepare(base)
    d = Driver(op, run / "demo_logs", progress, bar_stream, sources={"v000": EXAMPLE / TEST_FILE})
    start = time.monotonic()
    progress(f"demo: operator copied to {op} (step logs in {d.logs})")
    baseline_run = setup(d)
    outcomes = explore(d, plan, baseline_run)
    code, result = finish(d, plan)
    removed = [] if keep else prune(base, run)
    result.update(outcomes=outcomes, workdir=str(run), removed_earlier_runs=removed,
                  seconds=round(time.monotonic() - start, 1))
    return code, result
