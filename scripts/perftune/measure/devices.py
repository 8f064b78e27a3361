"""The cards of this host: the device-architecture probe and the per-device lock.

Probe: ``npu-smi info -t board -i <device> -c 0`` (the chip query of the npu-smi reference) run as
an argument list with a timeout; the ``Chip Name`` and ``Chip Type`` lines are read. A platform
file names the chips it describes (``device.chip_name_patterns``, shell-style patterns);
:func:`check_platform` refuses a platform file whose patterns do not match the probed chip, so
one product's peaks are never applied to another. npu-smi missing or failing is an
:class:`EnvError` (exit 3): the check is never skipped silently.

Lock: one case per card at a time across processes: an exclusive ``flock`` on
``<lock dir>/npu_<id>.lock`` (``fsio.try_lock``), released when the holder closes it or dies.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .. import fsio
from ..errors import ContractError, EnvError

NPU_SMI = "npu-smi"
LOCK_DIR_ENV = "PERFTUNE_DEVICE_LOCK_DIR"


def probe_chip(device_id: int, *, executable: str = NPU_SMI, timeout_s: float = 60.0) -> dict[str, Any]:
    """``{device_id, chip_name, chip_type, argv}`` of one card, from npu-smi."""
    argv = [executable, "info", "-t", "board", "-i", str(int(device_id)), "-c", "0"]
    fix = "put the Ascend driver tools (npu-smi) on PATH on the machine that holds the card"
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, errors="replace")
    except FileNotFoundError:
        raise EnvError(NPU_SMI, "PATH", "npu-smi is not on PATH (the device architecture cannot be probed)", fix) from None
    except subprocess.TimeoutExpired:
        raise EnvError(NPU_SMI, "timeout", f"'{' '.join(argv)}' hung for {timeout_s} s", "check the card") from None
    if proc.returncode != 0:
        raise EnvError(NPU_SMI, f"device {device_id}", f"'{' '.join(argv)}' exited {proc.returncode}", fix)
    fields = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if not fields.get("Chip Name"):
        raise EnvError(NPU_SMI, "Chip Name", f"no 'Chip Name' line for device {device_id}", fix)
    return {"device_id": int(device_id), "chip_name": fields["Chip Name"], "chip_type": fields.get("Chip Type"),
            "argv": argv}


def check_platform(platform_obj: dict[str, Any], source: str | Path, probed: dict[str, Any]) -> dict[str, Any]:
    """The match record, or a :class:`ContractError` when the platform file is for another chip."""
    patterns = (platform_obj.get("device") or {}).get("chip_name_patterns") or []
    if not patterns:
        raise ContractError(source, "device.chip_name_patterns", "is missing (which chips do these peaks describe?)",
                            "name the chips, e.g. [\"910B*\"], with the source of that mapping")
    chip = probed["chip_name"]
    matched = [p for p in patterns if fnmatch.fnmatchcase(chip.upper(), p.upper())]
    if not matched:
        raise ContractError(source, "device.chip_name_patterns", f"{patterns} do not match the probed chip "
                            f"{chip!r} of device {probed['device_id']}", "pass the platform file of this card")
    return {**probed, "matched_pattern": matched[0], "platform_id": platform_obj.get("platform_id")}


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "perftune_devices")


@contextmanager
def device_lock(device_id: int, *, timeout_s: float = 24 * 3600.0, poll_s: float = 0.05) -> Iterator[Path]:
    """Hold the card's lock for the duration of the block (waits while another process holds it)."""
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"npu_{int(device_id)}.lock"
    deadline = time.monotonic() + timeout_s
    while (fd := fsio.try_lock(path)) is None:
        if time.monotonic() > deadline:
            raise EnvError(path, "-", f"device {device_id} stayed locked for {timeout_s} s", "another run holds it")
        time.sleep(poll_s)
    try:
        yield path
    finally:
        os.close(fd)


def parse_devices(text: str, source: str = "--devices") -> list[int]:
    """``"0,1,3"`` → ``[0, 1, 3]``; duplicates, negatives and empty items are refused."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise ContractError("collect_perf.py", source, f"{text!r} is not a comma list of card ids", "e.g. 0,1,2,3") from None
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise ContractError("collect_perf.py", source, f"{text!r}: ids must be distinct and >= 0", "e.g. 0,1,2,3")
    return ids
