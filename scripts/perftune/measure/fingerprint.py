"""The environment fingerprint of a round: the machine and toolchain the samples came from.

Recorded as ``environment`` in every ``collection.json`` (and quick screen). A baseline and a final
from different fingerprints are not comparable: ``compare_perf.py`` refuses them and stage5-check
P2 fails, naming the first differing field (:func:`mismatch`).

- cpu: ``cpu_model`` (``/proc/cpuinfo`` model name, else ``platform.processor()``), ``cpu_count``,
  ``machine``, ``python``, ``numpy`` and ``blas`` (numpy's build configuration: name and version),
  and the environment that changes speed: ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/
  ``MKL_NUM_THREADS`` as the measured process gets them (``runner_env``: 1 unless set),
  ``affinity`` (CPUs in ``os.sched_getaffinity``) and ``governor`` (``scaling_governor`` of cpu0
  where sysfs shows it, else ``null``). A final round under another environment than the baseline
  is therefore refused like one on another machine.
- msprof: ``msprof_help_sha256`` (sha256 of ``msprof --help`` output: the tool build),
  ``cann_version`` (``ascend_toolkit_install.info`` under ``ASCEND_HOME_PATH`` or
  ``/usr/local/Ascend/ascend-toolkit/latest``), ``driver_version`` and ``firmware_version``
  (``/usr/local/Ascend/{driver,firmware}/version.info``), ``soc`` and ``aicore_freq_mhz``
  (``npu-smi info``); a value that cannot be read is ``null``, never guessed.
- pypto-sim: ``machine``, ``python``, ``numpy``, ``pypto`` and ``torch`` (installed distribution
  versions), ``device_arch`` (the frozen simulated chip, ``protocol.simulator``) and
  ``simulator_config_sha256`` (the effective simulator configuration,
  :func:`perftune.measure.backends.pypto_sim.effective_config`): a round simulated by another pypto,
  torch or configuration is another fingerprint, refused by compare like another machine.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

ASCEND_ROOT = Path("/usr/local/Ascend")


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _blas() -> str | None:
    try:
        import numpy
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # older numpy has no dict mode: the build is then unknown, not guessed
        return None


def _run(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _key_value(path: Path, key: str) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(rf"^\s*{key}\s*=\s*(.+?)\s*$", text, re.M | re.I)
    return found.group(1) if found else None


def speed_environment() -> dict[str, Any]:
    """Thread-pool variables the measured process runs with, CPU affinity, frequency governor."""
    from .backends.base import BLAS_THREAD_VARS
    out: dict[str, Any] = {name: os.environ.get(name, "1") for name in BLAS_THREAD_VARS}
    try:
        out["affinity"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        out["affinity"] = None
    try:
        out["governor"] = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip() or None
    except OSError:
        out["governor"] = None
    return out


def cpu() -> dict[str, Any]:
    import numpy
    return {"backend": "cpu", "cpu_model": _cpu_model(), "cpu_count": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "numpy": numpy.__version__, "blas": _blas(), **speed_environment()}


def msprof(executable: str = "msprof") -> dict[str, Any]:
    help_text = _run([executable, "--help"])
    home = Path(os.environ.get("ASCEND_HOME_PATH") or ASCEND_ROOT / "ascend-toolkit" / "latest")
    infos = sorted(home.glob("*/ascend_toolkit_install.info")) + sorted(home.glob("ascend_toolkit_install.info"))
    smi = _run(["npu-smi", "info"]) or ""
    soc = re.search(r"\|\s*\d+\s+([0-9A-Za-z]+)\s+\|\s*OK", smi)
    freq = _run(["npu-smi", "info", "-t", "common", "-i", "0"]) or ""
    mhz = re.search(r"Aicore Freq\(MHZ\)\s*:\s*(\d+)", freq, re.I)
    return {"backend": "msprof",
            "msprof_help_sha256": hashlib.sha256(help_text.encode()).hexdigest() if help_text else None,
            "cann_version": _key_value(infos[0], "version") if infos else None,
            "driver_version": _key_value(ASCEND_ROOT / "driver" / "version.info", "Version"),
            "firmware_version": _key_value(ASCEND_ROOT / "firmware" / "version.info", "Version"),
            "soc": soc.group(1) if soc else None, "aicore_freq_mhz": int(mhz.group(1)) if mhz else None,
            "machine": platform.machine()}


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def pypto_sim(simulator: dict[str, Any] | None = None) -> dict[str, Any]:
    """The simulator's identity: versions of what simulates, the chip and the configuration hash."""
    from .backends import pypto_sim as backend
    arch = (simulator or {}).get("device_arch") or backend.DEFAULT_ARCH
    try:
        config_sha = backend.effective_config(arch)[1]
    except Exception:  # no pypto: unknown, never guessed (measuring itself stops at check_environment)
        config_sha = None
    return {"backend": "pypto-sim", "machine": platform.machine(), "python": platform.python_version(),
            "numpy": _version("numpy"), "pypto": _version("pypto"), "torch": _version("torch"),
            "device_arch": arch, "simulator_config_sha256": config_sha}


def collect(backend: str, protocol: Any = None) -> dict[str, Any]:
    """The fingerprint of ``backend``; ``protocol`` (the frozen one) names the simulated chip on pypto-sim."""
    if backend == "cpu":
        return cpu()
    if backend == "pypto-sim":
        return pypto_sim(getattr(protocol, "simulator", None))
    return msprof()


def mismatch(baseline: dict[str, Any], final: dict[str, Any]) -> str | None:
    """The first field whose value differs between two rounds' fingerprints (None when equal)."""
    a, b = baseline.get("environment"), final.get("environment")
    if a is None and b is None:
        return None
    if a is None or b is None:
        return f"environment: only one round has a fingerprint ({'final' if a is None else 'baseline'} lacks it)"
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"environment.{key}: baseline {a.get(key)!r} != final {b.get(key)!r}"
    return None
