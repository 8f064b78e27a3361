"""The pypto-sim backend: real PyPTO tile kernels, timed by PyPTO's own cost-model simulator.

No NPU and no CANN: the kernel (a ``@pypto.frontend.jit`` function with ``run_mode`` SIM) is
compiled by the real PyPTO compiler and its launch is simulated by PyPTO's cost model, which writes
``CostModelSimulationOutput/``. One repeat = one fresh process (``pypto_sim_runner``
keeping PyPTO's side files in a scratch folder, then the cpu backend's ``cpu_runner`` with ``--repeats 1``) that runs the case's test once after ``warmup`` untimed
calls; each test call must launch the frozen op exactly once, and each launch must leave exactly one
simulator output folder. The time is the simulated ``Total Cycles`` of the last launch and its µs at
the simulated chip's frequency (:data:`FREQUENCY_MHZ`); both are recorded.

Side files never reach ``$HOME`` or the cwd: the process gets ``TILE_FWK_OUTPUT_DIR``,
``PYPTO_HOME`` and ``ASCEND_PROCESS_LOG_PATH`` inside a scratch folder of the repeat (deleted after
the raw files are archived) and ``TILEFWK_CONFIG_PATH`` pointing at the effective simulator
configuration: pypto's shipped ``tile_fwk_config.json`` with ``Model.deviceArch`` set to the frozen
chip. Its sha256, the chip and the pypto version are frozen in the manifest
(``protocol.simulator``, :func:`simulator_identity`); a different installation is an environment
error, never silently mixed evidence.

``repeat_NNN/`` holds ``launch.json`` (case, op name, calls, launches, simulator identity),
the simulator's ``_simulate.stat.report.txt`` (timing source), ``_simulate.config.ini``,
``bubble_analysis.log``, ``_simulate.swim.json``, ``_simulate.pipe.swim.json`` and
``merged_swimlane.json`` (the Perfetto trace; left out above :data:`MAX_TRACE_BYTES`, the parsed
per-pipe model in ``evidence_status.json`` stays), ``collection.log`` and ``evidence_status.json``.
``read_repeat`` re-derives cycles, µs and the bound route from those files alone. The simulator is
deterministic: the repeats of one case must give identical cycles, else the case fails
(:func:`..sim_reuse.check_deterministic`). See docs/pypto-sim-backend.md.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ... import fsio
from ...contract import protocol
from ...contract.manifest import Case
from ...errors import CheckFailed, ContractError, EnvError
from ...profiler import pypto_sim_files as files
from ..attestation import ATTESTATION_JSON
from .. import routing
from .base import Backend, RepeatResult, RunSpec, CHANNEL, adapter_command, marker_lines, repeat_dir_name, run_logged, runner_env, write_evidence_status

LAUNCH_JSON = "launch.json"
INSTALL_LINE = "python3 -m pip install -e '.[pypto-sim]', i.e. pypto==0.2.0 torch==2.13.0 sympy"
FREQUENCY_MHZ = {"A2A3": 1800.0, "A5": 1800.0}   # the simulator's own cycle -> µs conversion (trace)
DEFAULT_ARCH = "A2A3"
ARCH_ARG = "Model.deviceArch="
MAX_TRACE_BYTES = 8 << 20
MAX_FILE_BYTES = 64 << 20
ARCHIVED = (files.STAT_REPORT, files.CONFIG_INI, files.BUBBLE_LOG, files.SWIM_JSON, files.PIPE_SWIM_JSON)
SIM_OUTPUT = "CostModelSimulationOutput"


def _package_dir() -> Path | None:
    spec = importlib.util.find_spec("pypto")
    return Path(spec.origin).parent if spec and spec.origin else None


def pypto_pipe_names() -> list[str]:
    """The pipe names the installed pypto's swimlane script knows (``pipe_name_map``)."""
    package = _package_dir()
    script = package / files.PIPE_SCRIPT if package else None
    if script is None or not script.is_file():
        raise EnvError("pypto", files.PIPE_SCRIPT, "pypto's pipe swimlane script is missing", INSTALL_LINE)
    return files.pipe_names_of_script(script.read_text(encoding="utf-8"), str(script))


def effective_config(arch: str) -> tuple[str, str]:
    """(JSON text, sha256) of pypto's shipped simulator config with ``Model.deviceArch`` = ``arch``."""
    if arch not in FREQUENCY_MHZ:
        raise ContractError("-", "protocol.simulator.device_arch", f"unknown chip {arch!r}",
                            f"use one of {sorted(FREQUENCY_MHZ)}")
    package = _package_dir()
    shipped = package / "lib" / "configs" / "tile_fwk_config.json" if package else None
    if shipped is None or not shipped.is_file():
        raise EnvError("pypto", "lib/configs/tile_fwk_config.json", "pypto's simulator config is missing",
                       INSTALL_LINE)
    config = json.loads(shipped.read_text(encoding="utf-8"))
    args = config["global"]["simulation"]["args"]
    config["global"]["simulation"]["args"] = [a for a in args if not a.startswith(ARCH_ARG)] + [ARCH_ARG + arch]
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()


def simulator_identity(arch: str = DEFAULT_ARCH) -> dict[str, Any]:
    """What is frozen in ``protocol.simulator``: chip, its frequency, pypto version, config sha256."""
    PyptoSimBackend().check_environment()
    _text, sha = effective_config(arch)
    return {"device_arch": arch, "frequency_mhz": FREQUENCY_MHZ[arch],
            "pypto_version": importlib.metadata.version("pypto"), "config_sha256": sha}


class PyptoSimBackend(Backend):
    name = "pypto-sim"
    timing_source_file = files.STAT_REPORT
    default_warmup = 0                                     # a simulated launch has nothing to warm
    default_repeats = protocol.DETERMINISTIC_MIN_REPEATS  # repeats only prove determinism

    def check_environment(self) -> None:
        for module in ("pypto", "torch", "sympy"):
            if importlib.util.find_spec(module) is None:
                raise EnvError(module, "-", f"{module} is not installed (pypto-sim backend)", INSTALL_LINE)

    def _identity(self, spec: RunSpec) -> dict[str, Any]:
        frozen = getattr(spec.manifest.protocol, "simulator", None) or {}
        arch = frozen.get("device_arch", DEFAULT_ARCH)
        _text, sha = effective_config(arch)
        now = {"device_arch": arch, "frequency_mhz": FREQUENCY_MHZ[arch],
               "pypto_version": importlib.metadata.version("pypto"), "config_sha256": sha}
        for key in ("pypto_version", "config_sha256"):
            if frozen and frozen.get(key) != now[key]:
                raise EnvError("pypto", f"protocol.simulator.{key}", f"installed {now[key]!r} differs from the "
                               f"frozen {frozen.get(key)!r}", f"install the frozen pypto ({INSTALL_LINE})")
        return now

    def _wrap(self, spec: RunSpec, argv: list[str], scratch: Path | None = None) -> list[str]:
        """``argv`` (``python -m MODULE ...``) run through ``pypto_sim_runner`` (side files in scratch)."""
        arch = self._identity(spec)["device_arch"]
        head = [sys.executable, "-m", "perftune.measure.backends.pypto_sim_runner", "--arch", arch]
        return head + (["--scratch", str(scratch)] if scratch else []) + argv[2:]

    def case_command(self, spec: RunSpec, case_id: str) -> list[str]:
        return self._wrap(spec, adapter_command(spec, case_id))

    def _launch(self, spec: RunSpec, case: Case, folder: Path, *, mode: str, warmup: int) -> dict[str, Any]:
        """One process: warm-ups + one measured test call; its raw files archived into ``folder``."""
        identity = self._identity(spec)
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".pypto_sim_", dir=folder) as scratch_name:
            scratch = Path(scratch_name)
            argv = self._wrap(spec, [sys.executable, "-m", "perftune.measure.backends.cpu_runner",
                                     "--op-dir", str(spec.op_dir), "--runner", str(spec.runner),
                                     "--manifest", str(spec.manifest_file), "--case-id", case.id,
                                     "--op-name", spec.op_name, "--warmup", str(warmup), "--repeats", "1",
                                     "--mode", mode, "--output", str(scratch / "result.json")], scratch)
            fsio.write_json(scratch / CHANNEL, {"fresh_seed": spec.fresh_seed})   # as cpu: never the argv
            log = folder / "collection.log"
            proc = run_logged(argv, env=runner_env(spec.device_id), cwd=spec.op_dir, log_path=log,
                              timeout_s=spec.timeout_s)
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            if proc.returncode != 0:
                raise CheckFailed(log, case.id, f"pypto-sim runner exited {proc.returncode}: {tail}",
                                  "see collection.log; fix the kernel or its test")
            if marker_lines(proc.stdout) != [case.id]:
                raise CheckFailed(log, case.id, f"selected-case markers {marker_lines(proc.stdout)}",
                                  "the runner must print exactly one marker line")
            result = fsio.read_json(scratch / "result.json", what="runner result")
            if mode == "time":
                self._archive(scratch, folder, case, spec.op_name, warmup, result, identity,
                              fresh=spec.fresh_seed is not None)
        return result

    def _archive(self, scratch: Path, folder: Path, case: Case, op_name: str, warmup: int,
                 result: dict[str, Any], identity: dict[str, Any], fresh: bool = False) -> None:
        """The timed launch's files; under ``--fresh-seed`` each test call launches twice (the timed call on
        the fresh data, then the untimed one on the test's own arguments), the timed launch is the last but one."""
        outputs = sorted(p for p in (scratch / "output").glob("output_*") if (p / SIM_OUTPUT).is_dir())
        log = folder / "collection.log"
        per_call = 2 if fresh else 1
        if len(outputs) != per_call * (warmup + 1):
            raise CheckFailed(log, case.id, f"{len(outputs)} simulator outputs for {per_call * (warmup + 1)} "
                              "launches", "each test call must launch the kernel exactly once in SIM mode")
        source = outputs[-per_call] / SIM_OUTPUT
        for name in ARCHIVED + (files.MERGED_SWIMLANE,):
            path = source / name
            if not path.is_file():
                raise CheckFailed(path, case.id, "simulator file missing", "check the pypto install (see collection.log)")
            if name != files.MERGED_SWIMLANE or path.stat().st_size <= MAX_TRACE_BYTES:
                shutil.copyfile(path, folder / name)
        samples = result.get("samples") or []
        if samples and "attestation" in samples[-1]:  # what the timed call received (measure/attestation.py)
            fsio.write_json(folder / ATTESTATION_JSON, samples[-1]["attestation"])
        calls = [int(s["calls"]) for s in samples]
        fsio.write_json(folder / LAUNCH_JSON, {
            "case_id": case.id, "op_name": op_name, "calls": calls[-1] if calls else 0, "warmup": warmup,
            "launches": len(outputs), "simulator_output": outputs[-1].name, "simulator": identity})

    def _write_status(self, folder: Path, case: Case, op_name: str, number: int) -> RepeatResult:
        repeat = self.read_repeat(folder, op_name)
        detail = read_details(folder)
        write_evidence_status(folder, {
            "backend": self.name, "case": case.id, "target_op_name": op_name, "status": "complete",
            "timing_source_file": files.STAT_REPORT, "repeat": number, "duration_us": repeat.duration_us,
            "calls": repeat.calls, "bound_diagnosis": repeat.bound_route, "simulated_cycles": detail["cycles"],
            "frequency_mhz": detail["frequency_mhz"], "device_arch": detail["device_arch"],
            "stat_report": detail["stat"], "busy_model": detail["busy_model"], "bubbles": detail["bubbles"],
            "unknown_pipes": detail["unknown_pipes"],
            "simulator_files": {p.name: fsio.sha256_file(p) for p in sorted(folder.iterdir())
                                if p.is_file() and p.name not in ("collection.log", "evidence_status.json")},
            "merged_swimlane_archived": (folder / files.MERGED_SWIMLANE).is_file()})
        return repeat

    def run_repeat(self, spec: RunSpec, case: Case, repeat_dir: Path) -> RepeatResult:
        self._launch(spec, case, repeat_dir, mode="time", warmup=spec.warmup)
        repeat = self._write_status(repeat_dir, case, spec.op_name, _number(repeat_dir))
        if repeat.bound_route.get("unknown_pipes"):
            print(f"warning: {repeat_dir / files.PIPE_SWIM_JSON}: pipes {repeat.bound_route['unknown_pipes']} are "
                  "not in pypto_sim_files.PIPE_FAMILY (recorded under busy_model.*.unknown_pipes, not routed)",
                  file=sys.stderr)
        return repeat

    def run_case(self, spec: RunSpec, case: Case, case_dir: Path) -> list[RepeatResult]:
        from .. import sim_reuse   # measure.sim_reuse imports this package
        results = [self.run_repeat(spec, case, case_dir / repeat_dir_name(i)) for i in range(1, spec.repeats + 1)]
        sim_reuse.check_deterministic(results, case_dir, case.id)
        return results

    def read_repeat(self, repeat_dir: Path, op_name: str) -> RepeatResult:
        launch = fsio.read_json(repeat_dir / LAUNCH_JSON, what="pypto-sim launch.json")
        if not isinstance(launch, dict) or launch.get("op_name") != op_name:
            raise ContractError(repeat_dir / LAUNCH_JSON, "op_name", f"is not the frozen op {op_name!r}",
                                "re-collect with the frozen op name")
        if launch.get("calls") != 1:
            raise ContractError(repeat_dir / LAUNCH_JSON, "calls", f"the op was called {launch.get('calls')} "
                                "times (need exactly 1)", "each test must launch the target exactly once")
        detail = read_details(repeat_dir)
        return RepeatResult(detail["duration_us"], 1, detail["route"], (LAUNCH_JSON, files.STAT_REPORT) + ARCHIVED[1:])

    def quick_case(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[float]:
        return [r.duration_us for r in self.run_case(spec, case, scratch_dir)]

    def list_op_names(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[dict[str, Any]]:
        return self._launch(spec, case, scratch_dir, mode="profile", warmup=0)["rows"]


def _number(repeat_dir: Path) -> int:
    name = repeat_dir.name if repeat_dir.name.startswith("repeat_") else repeat_dir.parent.name
    return int(name.removeprefix("repeat_")) if name.removeprefix("repeat_").isdigit() else 1


def _text(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise ContractError(path, "-", "simulator file missing or not a regular file", "re-collect the round")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ContractError(path, "-", "simulator file is too large", "re-collect the round")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ContractError(path, "-", "not UTF-8", "re-collect the round") from None


def read_details(repeat_dir: Path) -> dict[str, Any]:
    """Cycles, µs, chip, pipe model and bound route of one repeat, from its raw files only."""
    stat = files.parse_stat_report(_text(repeat_dir / files.STAT_REPORT), str(repeat_dir / files.STAT_REPORT))
    arch = files.parse_config_ini(_text(repeat_dir / files.CONFIG_INI))["Model"]["deviceArch"]
    if arch not in FREQUENCY_MHZ:
        raise ContractError(repeat_dir / files.CONFIG_INI, "Model.deviceArch", f"unknown chip {arch!r}",
                            f"known chips: {sorted(FREQUENCY_MHZ)}")
    try:
        swim = json.loads(_text(repeat_dir / files.SWIM_JSON))
        pipes = json.loads(_text(repeat_dir / files.PIPE_SWIM_JSON))
    except json.JSONDecodeError as exc:
        raise ContractError(repeat_dir, "swim json", f"malformed JSON: {exc.msg}", "re-collect the round") from None
    model = files.busy_model(swim, pipes, str(repeat_dir / files.PIPE_SWIM_JSON))
    mhz = FREQUENCY_MHZ[arch]
    route = routing.route(files.route_row(model, mhz), str(repeat_dir / files.PIPE_SWIM_JSON))
    route["source_files"] = [files.PIPE_SWIM_JSON, files.SWIM_JSON]
    bubbles = files.parse_bubble_log(_text(repeat_dir / files.BUBBLE_LOG))
    unknown = sorted({name for block in model.values() for name in block["unknown_pipes"]})
    route["unknown_pipes"] = unknown  # recorded, reported, never counted (pypto_sim_files.busy_model)
    return {"unknown_pipes": unknown, "cycles": stat["total_cycles"], "duration_us": round(stat["total_cycles"] / mhz, 6),
            "frequency_mhz": mhz, "device_arch": arch, "stat": stat, "busy_model": model, "route": route,
            "bubbles": {"cores": len(bubbles), "work_us": round(sum(c["work_us"] for c in bubbles.values()), 6),
                        "wait_us": round(sum(c["wait_us"] for c in bubbles.values()), 6)}}


def moved_bytes(repeat_dir: Path) -> dict[str, int]:
    """Bytes the archived launch moved to and from global memory (``pypto_sim_files.moved_bytes``)."""
    try:
        pipes = json.loads(_text(repeat_dir / files.PIPE_SWIM_JSON))
    except json.JSONDecodeError as exc:
        raise ContractError(repeat_dir / files.PIPE_SWIM_JSON, "-", f"malformed JSON: {exc.msg}",
                            "re-collect the round") from None
    return files.moved_bytes(pipes, str(repeat_dir / files.PIPE_SWIM_JSON))


def launch_problems(case_dir: Path, case_id: str, repeats: int, codes: dict[str, str], seen: dict[str, str],
                    op_dir: Path) -> list[str]:
    """Reuse check for a deterministic backend, where equal samples are expected: every archived
    launch must name this case and a simulator output folder (timestamp + pid) no other repeat has,
    unless it is a recorded reuse (``reused.json``) whose files match its source's sha256
    (:func:`..sim_reuse.problems`). ``codes``: arm folder ('' unpaired) -> that arm's code sha256."""
    from .. import sim_reuse   # measure.sim_reuse imports this package
    out = []
    for index in range(1, repeats + 1):
        for arm, code in codes.items():
            folder = case_dir / repeat_dir_name(index) / arm
            where = f"{case_dir.parent.name}/{case_dir.name}/{repeat_dir_name(index)}{'/' + arm if arm else ''}"
            if (folder / sim_reuse.REUSED_JSON).exists():
                out += sim_reuse.problems(op_dir, folder, case_id, code, where)
                continue
            launch = fsio.read_json(folder / LAUNCH_JSON, what="pypto-sim launch.json")
            if launch.get("case_id") != case_id:
                out.append(f"{where}: launch.json names case {launch.get('case_id')!r} (reused evidence)")
            key = str(launch.get("simulator_output"))
            if key in seen:
                out.append(f"{where}: simulator output {key} also archived as {seen[key]} (reused evidence)")
            seen.setdefault(key, where)
    return out
