"""torch_npu ``kernel_details.csv``: the golden path's per-repeat NPU time, every version the profiler writes.

torch_npu (``ASCEND_PROFILER_OUTPUT/kernel_details.csv``) writes, depending on version and profiler
level, anything from 8 columns (``Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),
Wait Time(us),Block Dim``) to 47 with task / stream ids, ``OP State``, ``Accelerator Core`` and the
PMU metrics; ``Device_id`` appears only in some 2025 exports. Headers go through
:func:`msprof_csv.normalize_header` (so ``Device Id``, full-width brackets, a BOM are tolerated).

The total of one repeat is the sum of ``Duration(us)`` over every row (timing scope
``all_golden_npu_kernels``: HCCL, AI_CPU and DSA rows are kernels the golden launched too). Every
duration must be a finite number > 0; zero rows is an error.

Device rule: with a ``Device_id`` column every row must be the frozen device. Without it, the file
is attributed to the profiled process's device: torch_npu writes one ``*_ascend_pt`` folder per
profiled process, and the golden collection binds that process to the frozen device before
profiling (``torch.npu.set_device``); the result says ``device_rule: process_device``. Several
``Step Id`` values in one file are refused (the repeat profiles exactly one step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ContractError
from . import msprof_csv

NAME, DURATION, DEVICE, STEP, CORE = "Op Name", "Task Duration(us)", "Device_id", "Step Id", "Accelerator Core"
DEVICE_RULES = {"column": "every row's Device_id equals the frozen device",
                "process_device": "no Device_id column: the file is the profiled process's, bound to the frozen device"}


@dataclass(frozen=True)
class KernelDetails:
    """One repeat's kernel_details total and how it was read."""

    total_us: float
    rows: int
    device_rule: str                     # a key of DEVICE_RULES
    accelerator_cores: dict[str, int]    # rows per Accelerator Core value ({} when the column is absent)


def read_kernel_details(text: str, device_id: int, source: str = "kernel_details.csv") -> KernelDetails:
    """Parse one repeat's kernel_details text (pure); see the module docstring for the rules."""
    names = msprof_csv.header(text, source)
    if DURATION not in names:
        raise ContractError(source, "Duration(us)", "required column missing (header has "
                            f"{len(names)} columns)", "use the torch_npu kernel_details.csv")
    frame = msprof_csv.read_table(text, source)
    durations = msprof_csv.numeric(frame[DURATION], source, "Duration(us)")
    if frame.empty:
        raise ContractError(source, "rows", "no kernel rows", "the golden launched no NPU kernel")
    for position, value in enumerate(durations):
        if not math.isfinite(value) or value <= 0:
            raise ContractError(source, f"line {position + 2}.Duration(us)", f"{value} is not a number > 0 "
                                "(N/A is missing, never zero)", "re-run the golden collection")
    if STEP in names:
        steps = msprof_csv.stripped(frame[STEP]).dropna().unique().tolist()
        if len(steps) > 1:
            raise ContractError(source, STEP, f"{len(steps)} profiled steps {steps[:4]} in one file",
                                "profile exactly one step per repeat (schedule active=1)")
    rule = "process_device"
    if DEVICE in names:
        devices = msprof_csv.numeric(frame[DEVICE], source, DEVICE)
        for position, value in enumerate(devices):
            if math.isnan(value):
                raise ContractError(source, f"line {position + 2}.Device_id", "is missing",
                                    "re-run the golden collection")
            if int(value) != device_id:
                raise ContractError(source, f"line {position + 2}.Device_id", f"{int(value)} is not device "
                                    f"{device_id}", "profile only the frozen physical device")
        rule = "column"
    cores = {}
    if CORE in names:
        cores = {str(k): int(v) for k, v in msprof_csv.stripped(frame[CORE]).fillna("N/A").value_counts()
                 .sort_index().items()}
    return KernelDetails(total_us=float(durations.sum()), rows=len(frame), device_rule=rule,
                         accelerator_cores=cores)
