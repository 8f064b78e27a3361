"""A shared count of process slots over the cores (issue 39: a search's points fill the cores).

``tune.py run`` (local engine) makes one slot file per worker in a private folder and names it in
``PERFTUNE_SLOTS`` for every point of a batch, all running at once. Every process a perftune process
starts to simulate or test (a backend launch or preflight, a correctness test or probe) holds one
slot while it runs: an exclusive ``flock`` on one free slot file, polled until one is free. A core a
finished point frees goes to whichever launch asks next: the next point's or a running point's
remaining launches; the batch barrier of the sampler stays, no core waits on it while a point of
the batch has a launch left. Without the variable (every other command) :func:`held` does nothing.
The started process never inherits the variable (``base.device_env`` removes it): it holds no slot.
Each held slot appends one line to ``slots.jsonl`` in the folder; :func:`use` sums them (the search
record's ``slot_use``: how full the cores were).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from ..contract import protocol

POLL_S = 0.05
LOG_NAME = "slots.jsonl"   # one line per held slot: slot, pid, start, end (seconds since the epoch)


def make(folder: str | Path, count: int) -> Path:
    """``count`` slot files in ``folder`` (created); returns the folder, the value of ``PERFTUNE_SLOTS``."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    for index in range(max(1, int(count))):
        (root / f"slot_{index:03d}").touch()
    return root


def _files() -> list[Path]:
    folder = os.environ.get(protocol.SLOTS_ENV)
    return sorted(Path(folder).glob("slot_*")) if folder else []


def _take(files: list[Path]) -> tuple[int, str] | None:
    for path in files:
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return fd, path.name
    return None


@contextlib.contextmanager
def held() -> Iterator[str | None]:
    """Hold one slot of ``PERFTUNE_SLOTS`` while the block runs (its name; None without slots)."""
    files = _files()
    if not files:
        yield None
        return
    taken = _take(files)
    while taken is None:
        time.sleep(POLL_S)
        taken = _take(files)
    fd, name = taken
    began = time.time()
    try:
        yield name
    finally:
        line = json.dumps({"slot": name, "pid": os.getpid(), "start": round(began, 3), "end": round(time.time(), 3)})
        with open(files[0].parent / LOG_NAME, "a", encoding="utf-8") as log:   # one short line: an atomic append
            log.write(line + "\n")
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def use(folder: str | Path, count: int, wall_s: float) -> dict[str, float | int]:
    """How full the slots were: launches, their busy seconds, and busy / (slots x wall)."""
    path = Path(folder) / LOG_NAME
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.is_file() else []
    busy = sum(r["end"] - r["start"] for r in rows)
    return {"launches": len(rows), "busy_s": round(busy, 1),
            "utilisation": round(busy / (max(1, count) * wall_s), 3) if wall_s > 0 else 0.0}


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` while holding one slot (:func:`held`)."""
    with held():
        return subprocess.run(argv, **kwargs)
