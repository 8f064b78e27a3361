"""The end-to-end Stage 5 run on any operator folder (DESIGN §11), by SKILL.md's own commands.

Every script the driver runs is a step block of SKILL.md (:mod:`perftune.demo.skill`, the keys of
:data:`perftune.demo.steps.ORDER`), filled in with the values ``decide/next_step.py``
(perf_next.py) read from the evidence plus the agent's judgement, run as a subprocess from the
operator copy (:mod:`perftune.demo.flow` decides which step). The operator folder's ``variants/variants.json``
(:mod:`perftune.demo.plan`) stands in for the agent's judgement: the protocol, which items to try
with which code, how to close the others, the sweep. Nothing here names an example. Each step's
argv, exit code, stdout and stderr go to ``<workdir>/demo_logs/NN_<script>.log``.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import skill as skill_mod, steps
from .. import fsio
from ..errors import CheckFailed, ContractError

ROOT = Path(__file__).resolve().parents[3]
MARKER = ".stage5_demo_run"
DEFAULT_WORKDIR = ROOT / "demo_work"
STEP_TIMEOUT_S = 600


class CaseBar:
    """A one-line bar of finished cases for long steps, redrawn in place on a terminal.

    ``update`` takes one stderr line of ``collect_perf.py`` (it prints ``  <case id>: ...`` when a
    case is done); ``close`` erases the bar so the step's progress line follows cleanly.
    """

    WIDTH = 24

    def __init__(self, stream: TextIO, cases: tuple[str, ...]) -> None:
        self.stream, self.cases, self.total, self.done = stream, cases, len(cases), 0

    def update(self, line: str) -> None:
        case = line.strip().split(":", 1)[0]
        if not line.startswith("  ") or case not in self.cases:
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
    """Runs SKILL.md's steps in one operator copy (the values come from perf_next, never from memory)."""

    op: Path
    logs: Path
    progress: Callable[[str], None]
    bar_stream: TextIO | None = None      # a terminal: long steps draw a CaseBar there
    skill: skill_mod.Skill = field(default_factory=skill_mod.load)
    cases: tuple[str, ...] = ()
    step_no: int = 0
    ran: list[str] = field(default_factory=list)                      # step keys, in the order run

    def run(self, key: str, *, ok: tuple[int, ...] = (0,), label: str = "", **values: Any) -> tuple[int, Any]:
        """Run SKILL.md's step ``key`` filled with ``values`` (perf_next's and the agent's); return (code, parsed
        --json output)."""
        self.step_no += 1
        argv = skill_mod.fill(self.skill.command(key), {"DIR": str(self.op), **values}, self.skill.path, key)
        script = Path(argv[1]).name if len(argv) > 1 else "-"
        if script != steps.BY_KEY[key].script:
            raise ContractError(self.skill.path, f"step {key}", f"runs {script}, the step list says "
                                f"{steps.BY_KEY[key].script}", "keep SKILL.md and perftune/demo/steps.py in step")
        if not Path(argv[1]).is_file():
            raise ContractError(argv[1], f"step {key}", f"{script} does not exist", "deliver the script")
        name = f"{script} {argv[2] if len(argv) > 2 and not argv[2].startswith('-') and key != 'golden' else ''}".strip()
        start, started_at = time.monotonic(), time.time()
        measuring = key in ("baseline", "quick", "paired_formal", "final_formal")
        if self.bar_stream is not None and measuring and self.cases:
            bar = CaseBar(self.bar_stream, self.cases)
            try:
                proc = run_streaming(argv, self.op, bar.update)
            finally:
                bar.close()
        else:
            proc = run_streaming(argv, self.op, lambda _line: None)
        took = time.monotonic() - start
        self.ran.append(key)
        log = self.logs / f"{self.step_no:02d}_{script.removesuffix('.py')}.log"
        fsio.write_text(log, f"step: {key}\nargv: {argv}\nreturncode: {proc.returncode}\n"
                             f"started: {started_at:.3f}\nseconds: {took:.3f}\n--- stdout\n{proc.stdout}\n"
                             f"--- stderr\n{proc.stderr}")
        self.progress(f"[{self.step_no:2d}] {key:<18} {name:<30} exit {proc.returncode} ({took:5.1f} s) {label}".rstrip())
        if proc.returncode not in ok:
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            error = CheckFailed if proc.returncode == 1 else ContractError
            raise error(log, f"step {key}", f"exit {proc.returncode}: {tail}", "see the step log")
        data = None
        if proc.stdout.strip():
            try:
                data = fsio.loads_json(proc.stdout, what="step output")
            except ContractError:
                raise ContractError(log, f"step {key}", "--json output is not JSON", "see the step log") from None
        return proc.returncode, data


def prepare(workdir: Path, source: Path) -> tuple[Path, Path]:
    """A new ``run_NNN`` folder (atomic mkdir) under ``workdir`` with a copy of the operator folder
    (no variants/, no evidence) and a marker that lets later runs recognise it as a demo run."""
    workdir.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        run = workdir / f"run_{n:03d}"
        try:
            run.mkdir()
        except FileExistsError:
            continue
        fsio.write_text(run / MARKER, "stage5 demo run\n")
        op = run / source.name
        shutil.copytree(source, op, ignore=shutil.ignore_patterns("variants", "docs", "__pycache__", "README.md"))
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
