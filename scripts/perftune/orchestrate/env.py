"""Environment evidence for NPU work: probes that only read, and a pure assessment.

Never changes the environment: no ``source``, no ``export``, no install, no device reset. Probes
(:func:`collect`) read variables, version files and package metadata (``importlib.metadata`` and
``find_spec``: heavy packages such as torch are never imported) and run ``npu-smi info`` and
``msprof --version`` as argument lists, each bounded by a timeout (the whole process group is
killed on expiry). :func:`assess` turns the facts into ``env_report.json``
(``schemas/env_report.schema.json``).

Layers, checked in this order: device (npu-smi, ``/dev/davinci*``), CANN (``ASCEND_HOME_PATH`` and
its version file), Python packages, profiler (msprof), device variables, docs cache.

``device_assessment`` (one value, for the selected card ``TILE_FWK_DEVICE_ID``, default 0):
- ``DEVICE_HEALTHY``: npu-smi answered in time and the card reports Health OK or Warning.
- ``TRANSIENT_RECOVERED``: the first npu-smi call hit the timeout, the single retry answered.
- ``HANG_CONFIRMED``: npu-smi hit the timeout twice (error, kind hardware).
- ``FAULT_NO_TIMEOUT``: npu-smi answered but failed (non-zero exit) or the card is not
  healthy (Alarm, Critical, ...): a fault without a hang (error, kind hardware).
- ``NO_DEVICE``: npu-smi is missing, lists no card, or the selected id is not listed.

``kind`` of an ``env_error``: ``hardware`` when any error is in the device layer (no card, hang,
fault) because no software fix helps then; otherwise ``software`` (CANN not sourced, packages or
msprof missing, a wrong variable). A missing npu-smi is hardware when there is no ``/dev/davinci*``
node either, software (driver tools not on PATH) when there is one.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..contract import protocol

ASSESSMENTS = ("DEVICE_HEALTHY", "TRANSIENT_RECOVERED", "HANG_CONFIRMED", "FAULT_NO_TIMEOUT", "NO_DEVICE")
PACKAGES = {"numpy": "error", "pandas": "error", "torch": "error", "torch_npu": "error",
            "pypto": "warning", "pypto_pro": "error"}
HEALTHY = ("OK", "WARNING")
BUSY_AICORE_PCT = 5.0          # an idle card reports 0 % AI-core use
BUSY_HBM_FRACTION = 0.5        # an idle 910B holds ~3 GB of 64 GB for firmware
DEFAULT_TIMEOUT_S = 30.0
MAX_OUTPUT = 1 << 20
CANN_VERSION_FILES = ("*/ascend_toolkit_install.info", "ascend_toolkit_install.info",
                      "compiler/version.info", "runtime/version.info")
RECOMMEND = {
    "npu_smi_missing": "install the Ascend driver or put its tools on PATH; on a machine without an NPU "
                       "use the cpu backend (collect_perf.py with backend cpu)",
    "npu_smi_hang": "npu-smi hung twice: re-run env_check.py --timeout 600, run the official VF smoke test, "
                    "wait 5 minutes and retry; if it persists switch TILE_FWK_DEVICE_ID to a healthy card",
    "npu_smi_failed": "the driver answered with an error: read the stderr above, check `dmesg` and the driver "
                      "version; do not retry measurements on this card",
    "no_devices": "npu-smi lists no card: check the driver installation and container device mounts",
    "device_unhealthy": "the selected card is not healthy: choose another card (TILE_FWK_DEVICE_ID)",
    "device_id_unknown": "set TILE_FWK_DEVICE_ID to a physical NPU id that npu-smi lists",
    "device_id_invalid": "set TILE_FWK_DEVICE_ID to an integer physical NPU id",
    "cann_env_missing": "source <CANN install>/set_env.sh in the shell that starts Claude Code",
    "cann_home_missing": "ASCEND_HOME_PATH points nowhere: source the set_env.sh of an installed CANN",
    "package_missing": "install the missing Python package in this interpreter (the agent must not do it)",
    "msprof_missing": "msprof ships with the CANN toolkit: source set_env.sh so it is on PATH",
    "visible_devices_set": "unset ASCEND_RT_VISIBLE_DEVICES; select the card with TILE_FWK_DEVICE_ID only",
    "device_busy": "another process uses the card: wait for it or choose an idle card before measuring",
    "devkit_not_ready": "provision the docs cache (pypto-pro-docs-search skill) so docs_search.py can use it",
}


@dataclass(frozen=True)
class Device:
    """One chip row pair of ``npu-smi info``; None = not reported (``NA``)."""

    npu_id: int
    chip_id: int | None
    name: str
    health: str
    bus_id: str | None = None
    power_w: float | None = None
    temp_c: float | None = None
    aicore_pct: float | None = None
    memory_used_mb: float | None = None
    memory_total_mb: float | None = None
    hbm_used_mb: float | None = None
    hbm_total_mb: float | None = None


@dataclass(frozen=True)
class ProbeRun:
    """One bounded run of an external tool."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


@dataclass
class Facts:
    """Everything :func:`collect` read; :func:`assess` decides from it alone."""

    python: dict[str, str]
    packages: dict[str, dict[str, Any]]
    environ: dict[str, str | None]
    device_nodes: list[str]
    npu_smi_path: str | None = None
    npu_smi_runs: list[ProbeRun] = field(default_factory=list)
    cann_version: str | None = None
    cann_version_file: str | None = None
    ascend_home_exists: bool = False
    msprof_path: str | None = None
    msprof_run: ProbeRun | None = None
    devkit: dict[str, Any] | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _second_row(dev: dict[str, Any], cells: list[str]) -> None:
    dev["chip_id"] = int(cells[0].split()[0]) if cells[0].split() else None
    dev["bus_id"] = cells[1] or None
    tokens = cells[2].split()
    dev["aicore_pct"] = _number(tokens[0]) if tokens else None
    pairs = re.findall(r"(\S+)\s*/\s*(\S+)", cells[2])
    for prefix, pair in zip(("memory", "hbm"), pairs):
        dev[f"{prefix}_used_mb"], dev[f"{prefix}_total_mb"] = _number(pair[0]), _number(pair[1])


def parse_npu_smi_info(text: str) -> list[Device]:
    """Devices of an ``npu-smi info`` table (two rows per chip); the process table is ignored."""
    devices, pending = [], None
    for line in text.splitlines():
        if not line.startswith("|") or "Process" in line or "No running processes" in line:
            if "Process id" in line:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or "Health" in cells[1] or "Bus-Id" in cells[1]:
            continue
        head = re.match(r"^(\d+)\s+(\S.*)$", cells[0])
        if head and pending is None:
            metrics = cells[2].split()
            pending = {"npu_id": int(head.group(1)), "name": head.group(2).strip(), "health": cells[1],
                       "power_w": _number(metrics[0]) if metrics else None,
                       "temp_c": _number(metrics[1]) if len(metrics) > 1 else None}
        elif pending is not None and re.match(r"^\d*(\s+\d+)?$", cells[0]):
            _second_row(pending, cells)
            devices.append(Device(**pending))
            pending = None
    return devices


def parse_version_file(text: str) -> str | None:
    """The ``version=`` (or ``Version=``) value of a CANN install/version info file."""
    match = re.search(r"^\s*version\s*=\s*\[?([^\s\]:]+)", text, re.IGNORECASE | re.MULTILINE)
    return match.group(1) if match else None


def run_probe(argv: Sequence[str], timeout_s: float, environ: Mapping[str, str]) -> ProbeRun:
    """Run ``argv`` (a list, never a shell string); kill its process group on timeout."""
    start = time.monotonic()
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(environ), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    decode = lambda data: data[:MAX_OUTPUT].decode("utf-8", "replace")  # noqa: E731
    return ProbeRun(list(argv), None if timed_out else proc.returncode, decode(out), decode(err),
                    timed_out, round(time.monotonic() - start, 3))


def _package(name: str) -> dict[str, Any]:
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        version = None
    try:
        present = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        present = False
    return {"version": version, "present": present or version is not None}


def _cann(facts: Facts, home: str | None) -> None:
    if not home or not Path(home).is_dir():
        return
    facts.ascend_home_exists = True
    for pattern in CANN_VERSION_FILES:
        for path in sorted(Path(home).glob(pattern)):
            version = parse_version_file(path.read_text(encoding="utf-8", errors="replace"))
            if version:
                facts.cann_version, facts.cann_version_file = version, str(path)
                return


def collect(environ: Mapping[str, str], timeout_s: float = DEFAULT_TIMEOUT_S, dev_root: str = "/dev",
            devkit_check=None) -> Facts:
    """Probe the environment described by ``environ`` (PATH, CANN and device variables)."""
    names = ("ASCEND_HOME_PATH", protocol.DEVICE_ENV, protocol.VISIBLE_DEVICES_ENV, "PYPTO_DEVKIT_DIR")
    facts = Facts(python={"version": platform.python_version(), "executable": sys.executable},
                  packages={name: _package(name) for name in PACKAGES},
                  environ={name: environ.get(name) for name in names},
                  device_nodes=sorted(str(p) for p in Path(dev_root).glob("davinci[0-9]*")),
                  timeout_s=timeout_s)
    search = environ.get("PATH", "")
    facts.npu_smi_path = shutil.which("npu-smi", path=search)
    if facts.npu_smi_path:
        facts.npu_smi_runs.append(run_probe([facts.npu_smi_path, "info"], timeout_s, environ))
        if facts.npu_smi_runs[0].timed_out:  # one retry tells a transient stall from a hang
            facts.npu_smi_runs.append(run_probe([facts.npu_smi_path, "info"], timeout_s, environ))
    _cann(facts, environ.get("ASCEND_HOME_PATH"))
    facts.msprof_path = shutil.which("msprof", path=search)
    if facts.msprof_path:
        facts.msprof_run = run_probe([facts.msprof_path, "--version"], timeout_s, environ)
    if devkit_check is not None and environ.get("PYPTO_DEVKIT_DIR"):
        facts.devkit = devkit_check(environ["PYPTO_DEVKIT_DIR"])
    return facts


class _Findings:
    def __init__(self) -> None:
        self.errors: list[dict[str, str]] = []
        self.warnings: list[dict[str, str]] = []

    def error(self, code: str, kind: str, message: str) -> None:
        self.errors.append({"code": code, "kind": kind, "message": message})

    def warn(self, code: str, message: str) -> None:
        self.warnings.append({"code": code, "message": message})


def _selected_device(facts: Facts, out: _Findings) -> int | None:
    raw = facts.environ.get(protocol.DEVICE_ENV)
    if raw is None:
        out.warn("device_id_unset", f"{protocol.DEVICE_ENV} is not set; assuming card 0")
        return 0
    if not raw.strip().isdigit():
        out.error("device_id_invalid", "software", f"{protocol.DEVICE_ENV}={raw!r} is not a device id")
        return None
    return int(raw)


def _device_layer(facts: Facts, out: _Findings) -> tuple[str, list[Device], int | None]:
    selected = _selected_device(facts, out)
    if not facts.npu_smi_path:
        kind = "software" if facts.device_nodes else "hardware"
        where = f"{len(facts.device_nodes)} /dev/davinci node(s) exist" if facts.device_nodes else "no /dev/davinci node"
        out.error("npu_smi_missing", kind, f"npu-smi not found on PATH ({where})")
        return "NO_DEVICE", [], selected
    runs = facts.npu_smi_runs
    if runs[-1].timed_out:
        out.error("npu_smi_hang", "hardware", f"npu-smi info did not answer within {facts.timeout_s:g} s, twice")
        return "HANG_CONFIRMED", [], selected
    last = runs[-1]
    if last.returncode != 0:
        tail = (last.stderr.strip() or last.stdout.strip()).splitlines()[-1:] or ["no output"]
        out.error("npu_smi_failed", "hardware", f"npu-smi info exited {last.returncode}: {tail[0][:200]}")
        return "FAULT_NO_TIMEOUT", [], selected
    devices = parse_npu_smi_info(last.stdout)
    assessment = "TRANSIENT_RECOVERED" if len(runs) > 1 else "DEVICE_HEALTHY"
    if assessment == "TRANSIENT_RECOVERED":
        out.warn("npu_smi_hang", f"npu-smi info stalled past {facts.timeout_s:g} s once, then answered")
    if not devices:
        out.error("no_devices", "hardware", "npu-smi info lists no NPU")
        return "NO_DEVICE", devices, selected
    return _health(devices, selected, assessment, out), devices, selected


def _health(devices: list[Device], selected: int | None, assessment: str, out: _Findings) -> str:
    by_id = {d.npu_id: d for d in devices}
    if selected is not None and selected not in by_id:
        out.error("device_id_unknown", "software",
                  f"{protocol.DEVICE_ENV}={selected} but npu-smi lists {sorted(by_id)}")
        return "NO_DEVICE"
    for dev in devices:
        if dev.health.upper() not in HEALTHY and dev.npu_id != selected:
            out.warn("device_unhealthy", f"NPU {dev.npu_id} health {dev.health} (not selected)")
    if selected is None:
        return assessment
    dev = by_id[selected]
    if dev.health.upper() not in HEALTHY:
        out.error("device_unhealthy", "hardware", f"selected NPU {selected} health {dev.health}")
        return "FAULT_NO_TIMEOUT"
    if dev.health.upper() == "WARNING":
        out.warn("device_unhealthy", f"selected NPU {selected} health Warning: timings may be unreliable")
    if dev.aicore_pct is not None and dev.aicore_pct > BUSY_AICORE_PCT:
        out.warn("device_busy", f"selected NPU {selected} AI-core use {dev.aicore_pct:g} % before any run")
    if dev.hbm_used_mb is not None and dev.hbm_total_mb and dev.hbm_used_mb / dev.hbm_total_mb > BUSY_HBM_FRACTION:
        out.warn("device_busy", f"selected NPU {selected} HBM {dev.hbm_used_mb:g}/{dev.hbm_total_mb:g} MB in use")
    return assessment


def _software_layers(facts: Facts, out: _Findings) -> None:
    home = facts.environ.get("ASCEND_HOME_PATH")
    if not home:
        out.error("cann_env_missing", "software", "ASCEND_HOME_PATH is not set (CANN set_env.sh not sourced)")
    elif not facts.ascend_home_exists:
        out.error("cann_home_missing", "software", f"ASCEND_HOME_PATH={home} is not a directory")
    elif facts.cann_version is None:
        out.warn("cann_version_unknown", f"no CANN version file found under {home}")
    for name, severity in PACKAGES.items():
        if not facts.packages[name]["present"]:
            if severity == "error":
                out.error("package_missing", "software", f"Python package {name} is not installed")
            else:
                out.warn("package_missing", f"Python package {name} is not installed")
    if not facts.msprof_path:
        out.error("msprof_missing", "software", "msprof not found on PATH")
    if facts.environ.get(protocol.VISIBLE_DEVICES_ENV) is not None:
        both = " together with " + protocol.DEVICE_ENV if facts.environ.get(protocol.DEVICE_ENV) else ""
        out.warn("visible_devices_set", f"{protocol.VISIBLE_DEVICES_ENV} is set{both}: it renumbers the cards "
                                        "(perf scripts remove it from their subprocesses)")
    if not facts.environ.get("PYPTO_DEVKIT_DIR"):
        out.warn("devkit_not_ready", "PYPTO_DEVKIT_DIR is not set: docs_search.py sees plugin references only")
    elif facts.devkit is not None and facts.devkit.get("status") != "READY":
        out.warn("devkit_not_ready", f"PYPTO_DEVKIT_DIR cache is {facts.devkit.get('status')}: "
                                     f"missing {', '.join(facts.devkit.get('missing', []))}")


def _msprof_version(run: ProbeRun | None) -> str | None:
    if run is None or run.timed_out or run.returncode != 0:
        return None
    match = re.search(r"\d+\.\d+(?:\.[0-9A-Za-z]+)*", run.stdout + run.stderr)
    return match.group(0) if match else None


def assess(facts: Facts, now: str | None = None) -> dict[str, Any]:
    """The ``env_report.json`` content for ``facts`` (pure)."""
    out = _Findings()
    assessment, devices, selected = _device_layer(facts, out)
    _software_layers(facts, out)
    version = _msprof_version(facts.msprof_run)
    if facts.msprof_path and version is None:
        out.warn("msprof_version_unknown", "msprof --version gave no version")
    codes = [e["code"] for e in out.errors] + [w["code"] for w in out.warnings]
    kind = None
    if out.errors:
        kind = "hardware" if any(e["kind"] == "hardware" for e in out.errors) else "software"
    usable = assessment in ("DEVICE_HEALTHY", "TRANSIENT_RECOVERED") and selected is not None
    return {
        "schema_version": 1, "status": "env_error" if out.errors else "ok", "kind": kind,
        "device_assessment": assessment, "selected_device": selected, "npu_usable": usable,
        "devices": [asdict(d) for d in devices], "errors": out.errors, "warnings": out.warnings,
        "recommendations": [RECOMMEND[c] for c in dict.fromkeys(codes) if c in RECOMMEND],
        "python": facts.python, "packages": facts.packages, "environment": facts.environ,
        "cann": {"ascend_home_path": facts.environ.get("ASCEND_HOME_PATH"), "version": facts.cann_version,
                 "version_file": facts.cann_version_file},
        "npu_smi": {"path": facts.npu_smi_path, "device_nodes": facts.device_nodes,
                    "runs": [{k: v for k, v in asdict(r).items() if k != "stdout"} for r in facts.npu_smi_runs]},
        "msprof": {"path": facts.msprof_path, "version": version},
        "devkit": facts.devkit, "timeout_s": facts.timeout_s,
        "checked_at": now or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def preflight_summary(report: dict[str, Any], report_path: str | None = None) -> dict[str, Any]:
    """The compact ``PREFLIGHT_JSON`` payload for agents (upstream field names kept)."""
    packages = report["packages"]
    return {"passed": report["status"] == "ok", "status": report["status"], "kind": report["kind"],
            "device_assessment": report["device_assessment"], "npu_usable": report["npu_usable"],
            "errors": [e["message"] for e in report["errors"]],
            "warnings": [w["message"] for w in report["warnings"]],
            "devices": [{"npu_id": d["npu_id"], "chip_name": d["name"], "health": d["health"]}
                        for d in report["devices"]],
            "torch_npu_ok": packages["torch_npu"]["present"], "pypto_pro_ok": packages["pypto_pro"]["present"],
            "cann_version": report["cann"]["version"], "report": report_path}
