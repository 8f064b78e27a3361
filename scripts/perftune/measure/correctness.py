"""Correctness runs of the delivered tests, recorded with the identity of the code they ran.

Every ``test_*`` function of test_<op>.py (top-level, no required parameter, found with ``ast``)
runs in a subprocess of its own (on a deterministic backend, below, in batches), ``python -c`` importing
the test module from the op dir (no pytest): the P0 cases and every other test (the article's complete
correctness run). No manifest is needed; when one is frozen, a test that runs a manifest case carries
that case id and ``p0: true``, a test of a non-P0 row of the SPEC.md performance table that row's id and
``p0: false``, any other test its function name and ``p0: false``; before the freeze the SPEC table
labels them (``p0: null`` for a test it does not name). Each runs with the device environment rule (``TILE_FWK_DEVICE_ID`` set,
``ASCEND_RT_VISIBLE_DEVICES`` removed). The record ``docs/perf/correctness/<run_id>.json``
holds the ``executable_sha256`` of the sources (same formula as evidence rounds, so a candidate or
the verifier can accept a recorded run whose hash equals the current code), and per case
``passed`` (exit code 0), ``matched_ratio`` and ``max_abs_error`` parsed from the test output
(null when the test did not print them: missing is never zero), and the output tail.

On a deterministic backend (pypto-sim, frozen manifest) a run answers a question: the
``executable_sha256``, every ``.py`` of the op folder (goldens too), the frozen manifest and
``FROZEN_INPUTS.json``, the device and the simulator fingerprint; its sha256 is recorded as
``question``. A later run asking a question an original record answered with ``all_passed`` starts
no process: it writes a new record with the same cases and ``reused_from: <run_id>`` (issue 30).
There a P0 test also runs once, inside its probe's process (the probe's first step runs the test):
its ``passed``, figures and output come from that process (``ran_in: "probe"``), not from a second
simulation of the same call; the other tests run in batches, one process per core the probes leave
free (``ran_in: "batch"``; one import of pypto per batch), each test's output framed as its own.

A search point (``decide/tune_point.py``, ``stop_at_first_failure``) runs its first test (the first P0
case and its probe) alone first and, when it fails, no other: ``stopped`` names that test and the ids
not run, never ``all_passed``; ``check_correctness.py`` never stops.

Decisions: ``run_id`` = ``c<NNN>-<sha8>`` (sequence + first 8 hex of the code hash), reserved by
an exclusive create; the hash is taken before and after the run and a change refuses the record
(no evidence from mixed code); a per-case timeout counts as a failure.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from . import evidence, probes, scheduling, slots
from .. import fsio
from ..contract import manifest, op_name, protocol, schemas
from .backends.base import device_env
from ..errors import ContractError

CORRECTNESS_DIR = "correctness"
TAIL_LINES = 20
DEFAULT_TIMEOUT_S = 600.0
_RUNNER = "import importlib, sys; sys.path.insert(0, '.'); getattr(importlib.import_module(sys.argv[1]), sys.argv[2])()"
_MARK = "@@perftune-test"
# several tests in one process (a deterministic backend: one import of pypto and torch for all of them);
# each test's output is framed by markers, its exception printed, the next test runs regardless
_BATCH_RUNNER = f"""
import importlib, sys, traceback
sys.path.insert(0, '.')
sys.stderr = sys.stdout
module = importlib.import_module(sys.argv[1])
for name in sys.argv[2:]:
    print("\\n{_MARK}-begin " + name, flush=True)
    try:
        getattr(module, name)()
        code = 0
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        code = 1
    print("\\n{_MARK}-end " + name + " " + str(code), flush=True)
"""
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"


def parse_output(text: str) -> dict[str, Any]:
    """``matched_ratio`` / ``max_abs_error`` (last printed value, None when absent) and the PASS line."""
    values: dict[str, Any] = {}
    for key in ("matched_ratio", "max_abs_error"):
        found = re.findall(rf"\b{key}\s*[=:]\s*{_NUMBER}", text)
        value = float(found[-1]) if found else None
        values[key] = value if value is not None and value == value and abs(value) != float("inf") else None
    values["printed_pass"] = bool(re.search(r"^\s*PASS\b", text, re.M))
    return values


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def runs_dir(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / CORRECTNESS_DIR


def test_module(op_dir: str | Path, test_file: str | None = None) -> Path:
    """The delivered test file: ``--test-file``, else ``test_<op>.py``, else the only ``test_*.py``."""
    root = Path(op_dir)
    if test_file:
        path = fsio.safe_join(root, test_file, field="--test-file")
    else:
        found = sorted(root.glob("test_*.py"))
        named = root / f"test_{root.resolve().name}.py"
        path = named if named.is_file() else (found[0] if len(found) == 1 else root / "test_<op>.py")
    if not path.is_file() or path.parent.resolve() != root.resolve():
        raise ContractError(path, "--test-file", "test file not found at the top of the op dir",
                            "pass --test-file test_<op>.py")
    return path


def run_case(op_dir: Path, module: str, function: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """Run one test function in a subprocess; the exit code decides ``passed``."""
    try:
        proc = slots.run([sys.executable, "-c", _RUNNER, module, function], cwd=op_dir, env=env,
                         capture_output=True, text=True, timeout=timeout_s)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = None, f"{exc.stdout or ''}{exc.stderr or ''}\ntimeout after {timeout_s} s"
    return _result(code, out)


def _result(code: int | None, out: str, shown: str | None = None, **where: Any) -> dict[str, Any]:
    """One test's record: its exit code (0 passes), the figures it printed, the tail of ``shown``
    (default its output), and where it ran."""
    parsed = parse_output(out)
    return {"returncode": code, "passed": code == 0, **parsed, "output_tail": tail(out if shown is None else shown),
            **where}


def run_batch(op_dir: Path, module: str, functions: list[str], env: dict[str, str], timeout_s: float,
              number: int) -> list[dict[str, Any]]:
    """Run several test functions in one subprocess, in order (``ran_in: "batch"``, ``batch: number``);
    a test that raised fails alone. A test the process never finished (a crash, ``os._exit``, the
    timeout) runs again in a process of its own (:func:`run_case`), so its result is its own."""
    try:
        proc = slots.run([sys.executable, "-c", _BATCH_RUNNER, module, *functions], cwd=op_dir, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s * len(functions))
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode("utf-8", "replace")
    done = {m.group(1): (m.group(2), int(m.group(3))) for m in re.finditer(
        rf"{_MARK}-begin (\w+)\n(.*?)\n{_MARK}-end \1 (\d)", out, re.S)}
    results = []
    for function in functions:
        if function not in done:
            results.append(run_case(op_dir, module, function, env, timeout_s))
            continue
        text, code = done[function]
        results.append(_result(code, text, ran_in="batch", batch=number))
    return results


def _code_identity(op_dir: Path, man: manifest.Manifest | None) -> tuple[str, list[dict[str, Any]]]:
    files = evidence.source_files(op_dir, man)
    return evidence.executable_sha256(op_dir, files), [fsio.file_record(p, op_dir) for p in files]


def _reserve_write(op_dir: Path, sha: str, record: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    folder = runs_dir(op_dir)
    number = len(list(folder.glob("c*.json"))) + 1 if folder.is_dir() else 1
    for attempt in range(number, number + 1000):
        run_id = f"c{attempt:03d}-{sha[:8]}"
        path = folder / f"{run_id}.json"
        if path.exists():
            continue
        full = {**record, "run_id": run_id}
        schemas.validate(full, "correctness", path)
        try:
            return fsio.write_json(path, full, overwrite=False), full
        except ContractError:
            continue  # another run took this id meanwhile
    raise ContractError(folder, "run_id", "could not reserve a run id", "clean up the correctness folder")


def _spec_cases(op_dir: Path) -> tuple:
    """Before the freeze: the SPEC.md performance table labels the tests (none when it does not parse)."""
    try:
        return manifest.parse_spec((op_dir / "SPEC.md").read_text(encoding="utf-8"), "SPEC.md").cases
    except (OSError, UnicodeDecodeError, ContractError):
        return ()


def planned_tests(op_dir: Path, test_path: Path, man: manifest.Manifest | None) -> list[tuple[str, str, bool | None]]:
    """(id, test function, p0) for every test of the file, manifest cases first in manifest order."""
    text = test_path.read_text(encoding="utf-8", errors="replace")
    functions = list(manifest.find_test_functions(text, str(test_path)))
    frozen = [(c, True) for c in man.cases] if man else []
    labelled = frozen + [(c, False if man else c.p0) for c in _spec_cases(op_dir) if not (man and c.p0)]
    planned, seen = [], set()
    for case, p0 in labelled:
        function = case.test_function or f"test_{re.sub(r'[^A-Za-z0-9_]', '_', case.id)}"
        if function not in seen and (p0 is True and man or function in functions):
            planned.append((case.id, function, p0))
            seen.add(function)
    planned += [(f, f, False if man else None) for f in functions if f not in seen]
    if not planned:
        raise ContractError(test_path, "test_*", "defines no test function", "deliver the Stage 4 tests")
    return planned


def _alone(*args) -> list[dict[str, Any]]:
    return [run_case(*args)]


def _test_jobs(root: Path, module: str, functions: list[str], env: dict[str, str], timeout_s: float,
               batches: int) -> list:
    """Zero-argument jobs, each returning the results of its tests in order: one process per test, or
    (``batches`` > 0, a deterministic backend) the tests split in order into that many batch processes."""
    if not batches:
        return [partial(_alone, root, module, function, env, timeout_s) for function in functions]
    n = len(functions)
    chunks = [functions[k * n // batches:(k + 1) * n // batches] for k in range(batches)]
    return [partial(run_batch, root, module, chunk, env, timeout_s, number)
            for number, chunk in enumerate((c for c in chunks if c), start=1)]


def _in_order(jobs: list, workers: int) -> list:
    """The results of zero-argument ``jobs`` in their order, ``workers`` at a time (1: one after another)."""
    if workers <= 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda job: job(), jobs))


def run_all(op_dir: str | Path, *, at: str, test_file: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
            judge: Callable | None = None, stop_at_first_failure: bool = False,
            on_first_pass: Callable[[], None] = lambda: None) -> tuple[Path, dict[str, Any]]:
    """Run every test of test_<op>.py and write the correctness record; returns (path, record).
    ``judge(op_dir, manifest, cases, seed)`` (frozen manifest only; ``check_correctness.py`` passes the
    verifier's ``verify/early.judge``) returns the record's ``early`` block: what stage5_check's P9 would
    find in these probes, which then are run with the beyond-P0 step (``beyond_seed``, drawn now).
    ``stop_at_first_failure``: a search point's run (module docstring; ``on_first_pass()`` once its first passed)."""
    root = Path(op_dir)
    manifest_path = root / protocol.MANIFEST_NAME
    man = manifest.load_manifest(manifest_path) if manifest_path.exists() else None
    path = test_module(root, test_file)
    sha, files = _code_identity(root, man)
    env = {**device_env(man.protocol.device_id if man and man.protocol else 0), "PYTHONDONTWRITEBYTECODE": "1"}
    question = _question(root, man, sha) if man and man.protocol and \
        man.protocol.backend in protocol.DETERMINISTIC_BACKENDS else None
    earlier = _answered(root, question) if question else None
    if earlier is not None:   # deterministic: this very question passed before; no process is started
        return _reserve_write(root, sha, {**{k: earlier[k] for k in ("schema_version", "executable_sha256",
                                                                       "source_files", "test_file", "device_id",
                                                                       "cases", "all_passed", "early") if k in earlier},
                                          "created_at": at, "question": question, "reused_from": earlier["run_id"]})
    planned = planned_tests(root, path, man)
    frozen = man is not None and man.protocol is not None
    seed = secrets.randbelow(2 ** 31) if judge is not None and frozen else None
    run = partial(_run_tests, root, path, man, env, timeout_s, question, seed)
    stopped = None
    if stop_at_first_failure and len(planned) > 1:
        cases = run(planned[:1])
        if not case_passed(cases[0]):
            stopped = {"failed": cases[0]["id"], "not_run": [case_id for case_id, _, _ in planned[1:]]}
        else:
            on_first_pass()
            cases += run(planned[1:])
    else:
        cases = run(planned)
    after, _ = _code_identity(root, man)
    if after != sha:
        raise ContractError(root, "executable_sha256", "sources changed while the tests ran",
                            "do not edit during a correctness run; run it again")
    early = judge(root, man, cases, seed) if seed is not None and stopped is None else None
    record = {"schema_version": 1, "executable_sha256": sha, "source_files": files,
              "test_file": fsio.file_record(path, root), "device_id": int(env[protocol.DEVICE_ENV]),
              "cases": cases, "all_passed": stopped is None and all(case_passed(c) for c in cases)
              and not (early or {}).get("findings"),
              "created_at": at, **({"question": question} if question else {}), **({"early": early} if early else {}),
              **({"stopped": stopped} if stopped else {})}
    return _reserve_write(root, sha, record)


def case_passed(case: dict[str, Any]) -> bool:
    return case["passed"] and not probe_failure(case)


def _run_tests(root: Path, path: Path, man: manifest.Manifest | None, env: dict[str, str], timeout_s: float,
               question: str | None, seed: int | None, planned: list[tuple[str, str, bool | None]]) -> list[dict]:
    """The case records of ``planned`` (a part of :func:`planned_tests`, in its order): the P0 probes
    and the other tests side by side in one pool."""
    manifest_path = root / protocol.MANIFEST_NAME
    frozen = man is not None and man.protocol is not None
    python_op = op_name.python_op(man) if frozen else None
    # deterministic: a P0 test runs once, inside its probe's process (its first step runs the test)
    in_probe = {function for _, function, p0 in planned if p0 is True} if question and python_op else set()
    p0_ids = [case_id for case_id, _, p0 in planned if p0 is True] if frozen else []
    printed: dict[str, list[str]] = {case_id: [] for case_id in p0_ids}
    probe_jobs = [partial(probes.run, root, path, manifest_path, case_id, python_op, device_id=man.protocol.device_id,
                          timeout_s=timeout_s, printed=printed[case_id], beyond_seed=seed)
                  for case_id in p0_ids] if python_op else []
    own = [function for _, function, _ in planned if function not in in_probe]
    workers = side_by_side(man)
    test_jobs = _test_jobs(root, path.stem, own, env, timeout_s,
                           batches=max(1, workers - len(probe_jobs)) if question else 0)
    done = _in_order([*probe_jobs, *test_jobs], workers)   # one pool: probes and tests side by side
    found, runs = done[:len(probe_jobs)], [result for batch in done[len(probe_jobs):] for result in batch]
    cases = [{"id": case_id, "test_function": function, "p0": p0, **({} if function in in_probe else runs.pop(0))}
             for case_id, function, p0 in planned]
    if frozen:  # frozen gate applied, measured figures, caching probes
        p0 = [case for case in cases if case["p0"] is True]
        if not python_op:
            found = [{"problem": "the manifest freezes no launcher of the device op (re-freeze with this version)"}] * len(p0)
        for case, probe in zip(p0, found):
            case["probe"] = probe
            if case["test_function"] in in_probe:
                case.update(_from_probe(probe, "".join(printed[case["id"]])))
    return cases


DEVICE_NODES = Path("/dev")   # where the Ascend driver exposes a card (davinci0, davinci1, ...)


def shares_no_card(man: manifest.Manifest | None) -> bool:
    """The test and probe processes are independent and may run side by side: the frozen backend is
    cpu or pypto-sim, or (before the freeze) this machine has no card (no ``/dev/davinci<N>``);
    on a card they run one after another."""
    if man is not None and man.protocol is not None:
        return man.protocol.backend in ("cpu", *protocol.DETERMINISTIC_BACKENDS)
    return not any(DEVICE_NODES.glob("davinci[0-9]*"))


def _from_probe(probe: dict[str, Any], out: str) -> dict[str, Any]:
    """A P0 test's result from the probe process that ran it (its first step): passed when the
    process ran to the end and the test raised nothing."""
    passed = "test_error" in probe and probe["test_error"] is None
    return _result(0 if passed else 1, out, out + (f"\n{probe['test_error']}" if probe.get("test_error") else ""),
                   ran_in="probe")


def _question(root: Path, man: manifest.Manifest, sha: str) -> str:
    """What a deterministic correctness run answers: the code, every .py of the op folder (goldens too),
    the frozen manifest and inputs, and the simulator environment (pypto, torch, chip, config)."""
    from . import fingerprint
    frozen = [root / protocol.MANIFEST_NAME, root / "FROZEN_INPUTS.json", *sorted(root.glob("*.py"))]
    return fsio.sha256_bytes(fsio.dumps({"executable_sha256": sha, "device_id": man.protocol.device_id,
                                        "files": {p.name: fsio.sha256_file(p) for p in frozen if p.is_file()},
                                        "environment": fingerprint.collect(man.protocol.backend, man.protocol)}).encode("utf-8"))


def _answered(root: Path, question: str) -> dict[str, Any] | None:
    """The first original record (not itself reused) that answered ``question`` and passed."""
    for path in sorted(runs_dir(root).glob("c*.json")):
        try:
            obj = fsio.read_json(path, what="correctness record")
        except ContractError:
            continue
        if isinstance(obj, dict) and obj.get("question") == question and obj.get("all_passed") is True \
                and "reused_from" not in obj:
            return obj
    return None


def side_by_side(man: manifest.Manifest | None) -> int:
    """Test processes a run starts at once: 1 where they share a card, else ``PERFTUNE_JOBS`` (the
    rounds' knob), else the cores, at most 4."""
    return min(scheduling.requested_jobs(), 4) if shares_no_card(man) else 1


def probe_failure(case: dict[str, Any]) -> str | None:
    """Why the case's correctness probe failed, else None: its ``problem``, a figure's ``error``, or a
    figure that misses the frozen gate (P9 would fail it at the end); a run with a failed probe is
    never ``all_passed``."""
    probe = case.get("probe") or {}
    figures = [f for f in [probe.get("measured") or {}, *(probe.get("probes") or [])] if isinstance(f, dict)]
    error = next((f["error"] for f in figures if f.get("error")), None)
    missed = next((f for f in figures if f.get("meets_frozen_gate") is False), None)
    if probe.get("problem") or error or not missed:
        return probe.get("problem") or error
    inputs = f"seed {missed['seed']}" if "seed" in missed else "the seed-42 inputs"
    return f"misses the frozen precision gate on {inputs} (matched_ratio {missed.get('matched_ratio')})"


def missing_tests(op_dir: str | Path, record: dict[str, Any]) -> list[str]:
    """Test functions of the recorded test file that the run did not run (the run must be complete)."""
    root = Path(op_dir)
    path = fsio.safe_join(root, record["test_file"]["path"], field="test_file.path")
    if not path.is_file():
        return []
    ran = {c["test_function"] for c in record["cases"]}
    text = path.read_text(encoding="utf-8", errors="replace")
    return sorted(set(manifest.find_test_functions(text, str(path))) - ran)


def run_id_of(ref: str | None) -> str | None:
    """A correctness run as printed (``run_id`` or its ``record`` path ``docs/perf/correctness/<id>.json``,
    relative or absolute) -> its run id (#27: values round-trip)."""
    return Path(ref).stem if ref and ref.endswith(".json") else ref


def load_record(op_dir: str | Path, run_id: str) -> dict[str, Any]:
    """A recorded correctness run (schema-checked; the id must name a file inside the folder)."""
    path = fsio.safe_join(runs_dir(op_dir), f"{run_id}.json", field="run_id")
    obj = fsio.read_json(path, what="correctness record")
    schemas.validate(obj, "correctness", path)
    if obj["run_id"] != run_id:
        raise ContractError(path, "run_id", f"records {obj['run_id']!r}, not {run_id!r}", "do not rename records")
    return obj
