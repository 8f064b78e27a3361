"""Cases of one round on several cards of this host at the same time (``collect_perf.py formal --devices``).

Assignment is static: case ``i`` (manifest order) runs on ``devices[i % n]``, and each card runs
its cases one after another. With the same ``--devices`` list a case meets the same card in every
round, so a baseline/candidate comparison never mixes card-to-card differences into a speed-up.
Each case holds the card's lock (:func:`devices.device_lock`) while it runs, so two collections
never share a card; every subprocess gets that card through the device environment rule
(``TILE_FWK_DEVICE_ID`` set, ``ASCEND_RT_VISIBLE_DEVICES`` removed) because the case runs with a
copy of the run spec whose ``device_id`` is the card. A case that fails (after its own retries, on
its own card) is reported; the other cards finish their cases, and the round is then failed with
the first failure in manifest order. The evidence layout is the serial one; ``collection.json``
adds ``case_devices``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..contract import protocol
from ..errors import CheckFailed, ContractError
from . import devices as devices_mod

COLLECTION_LOCK = threading.Lock()   # collection.json is rewritten by every finished case


def requested_jobs(requested: int | None = None) -> int:
    """Processes side by side where they share no card (a deterministic backend's cases, P10's
    re-simulations, correctness tests): ``requested`` (``--jobs``), else ``PERFTUNE_JOBS``, else the
    cores; anything but a positive integer is a contract error."""
    text = str(requested) if requested is not None else os.environ.get(protocol.JOBS_ENV) or str(os.cpu_count() or 1)
    if not text.isdigit() or int(text) < 1:
        raise ContractError("--jobs" if requested is not None else protocol.JOBS_ENV, "-",
                            f"{text!r} is not a positive integer", "use --jobs N or PERFTUNE_JOBS=N, N >= 1")
    return int(text)


def assignment(case_ids: Sequence[str], devices: Sequence[int]) -> dict[str, int]:
    return {case_id: devices[index % len(devices)] for index, case_id in enumerate(case_ids)}


def run_on_devices(cases: Sequence[Any], devices: Sequence[int], work: Callable[[Any, int], None],
                   *, lock: bool = True) -> list[CheckFailed]:
    """Run ``work(case, device)`` for every case on its card; returns the failures in case order.
    ``lock=False``: the lanes are host processes, not cards (pypto-sim ``--jobs``), no card lock."""
    plan = assignment([c.id for c in cases], devices)
    failures: dict[str, CheckFailed] = {}
    crashed: list[BaseException] = []

    def lane(device: int) -> None:
        for case in (c for c in cases if plan[c.id] == device):
            try:
                if lock:
                    with devices_mod.device_lock(device):
                        work(case, device)
                else:
                    work(case, device)
            except CheckFailed as exc:
                failures[case.id] = exc
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                crashed.append(exc)
                return

    threads = [threading.Thread(target=lane, args=(device,), name=f"npu_{device}") for device in devices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if crashed:
        raise crashed[0]
    return [failures[c.id] for c in cases if c.id in failures]
