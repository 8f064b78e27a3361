"""Safe file I/O: atomic writes, content hashes, file records, safe paths and advisory locks.

Every JSON file the product writes goes through :func:`write_json`: UTF-8, keys sorted, 2-space
indent, written to a temp file in the same folder, fsynced, then renamed over the target, so a
crash leaves either the old or the new content, never half of it (DESIGN §4, §10).

Evidence written in bulk (the raw files of a round, thousands per round) is written inside
:func:`batched_durability`: each file is still written atomically (temp file + rename), but the
per-file fsyncs are replaced by one ``os.sync()`` when the batch ends. The batch's caller writes its
commit record (the round's ``collection.json`` with status ``complete``) after the batch, with the
usual fsync, so a crash inside the batch leaves a round that never reached ``complete``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import ContractError

MAX_JSON_DEPTH = 64
MAX_JSON_BYTES = 64 * 1024 * 1024  # a contract file larger than this is refused, never parsed


def dumps(obj: Any) -> str:
    """Canonical JSON text: sorted keys, 2-space indent, trailing newline, no NaN/inf."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


_BATCH = threading.local()


def _batched() -> bool:
    return getattr(_BATCH, "depth", 0) > 0


@contextlib.contextmanager
def batched_durability() -> Iterator[None]:
    """Files written by this thread inside the block skip their own fsyncs; one ``os.sync()`` when the
    outermost block ends makes them all durable (also when the block raises). Threads the block starts
    (cases side by side) are their own: each of them enters its own block."""
    _BATCH.depth = getattr(_BATCH, "depth", 0) + 1
    try:
        yield
    finally:
        _BATCH.depth -= 1
        if not _BATCH.depth:
            os.sync()


def fsync_dir(folder: Path) -> None:
    if _batched():
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_bytes(path: str | Path, data: bytes, *, overwrite: bool = True) -> Path:
    """Atomically write ``data`` to ``path`` (temp file in the same folder + fsync + rename).

    With ``overwrite=False`` an existing target is refused (exit 2), and the rename cannot
    replace a file created meanwhile by someone else (``os.link`` is used instead of rename).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not overwrite and target.exists():
        raise ContractError(target, "-", "already exists and is never overwritten",
                            "keep the existing file or write to a new path")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if not _batched():
                os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise ContractError(target, "-", "already exists and is never overwritten",
                                    "keep the existing file or write to a new path") from None
            os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)
    return target


def write_text(path: str | Path, text: str, *, overwrite: bool = True) -> Path:
    """Atomically write UTF-8 text."""
    return write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


def write_json(path: str | Path, obj: Any, *, overwrite: bool = True) -> Path:
    """Atomically write canonical JSON (see :func:`dumps`)."""
    try:
        text = dumps(obj)
    except ValueError as exc:  # NaN/inf would produce invalid JSON
        raise ContractError(path, "-", f"refusing to write non-finite number: {exc}",
                            "report missing values as null, never as NaN") from None
    return write_text(path, text, overwrite=overwrite)


def _reject_constant(token: str) -> float:
    raise ValueError(f"non-finite number {token}")


def read_json(path: str | Path, *, what: str = "JSON file") -> Any:
    """Read a JSON file strictly; every failure is a one-line :class:`ContractError`."""
    source = Path(path)
    try:
        if source.is_symlink():
            raise ContractError(source, "-", f"{what} is a symlink", "replace it with a regular file")
        size = source.stat().st_size
    except FileNotFoundError:
        raise ContractError(source, "-", f"{what} is missing", "create it or pass the right path") from None
    except OSError as exc:
        raise ContractError(source, "-", f"cannot read {what}: {exc.strerror}", "check the path") from None
    if size > MAX_JSON_BYTES:
        raise ContractError(source, "-", f"{what} is {size} bytes, above the {MAX_JSON_BYTES} limit",
                            "pass the real contract file")
    if size == 0:
        raise ContractError(source, "-", f"{what} is empty", "regenerate it")
    raw = source.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ContractError(source, "-", f"not UTF-8 (byte {exc.start})", "save it as UTF-8") from None
    return loads_json(text, source=source, what=what)


def _depth_ok(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests at most ``limit`` containers deep (iterative: no recursion)."""
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return False
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def loads_json(text: str, *, source: str | Path = "-", what: str = "JSON") -> Any:
    """The one guarded JSON parser: strict numbers, bounded nesting, one-line ContractError."""
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        obj = None
    except ValueError as exc:
        line = getattr(exc, "lineno", "?")
        raise ContractError(source, f"line {line}", f"malformed JSON: {getattr(exc, 'msg', exc)}",
                            "fix the syntax or regenerate the file") from None
    else:
        if _depth_ok(obj, MAX_JSON_DEPTH):
            return obj
    raise ContractError(source, "-", f"{what} is nested more than {MAX_JSON_DEPTH} levels deep",
                        "pass the real file; contract files are shallow")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def display_path(path: str | Path, root: str | Path | None) -> str:
    """``path`` relative to ``root`` in POSIX form when inside it, else absolute."""
    resolved = Path(path).resolve()
    if root is not None:
        with contextlib.suppress(ValueError):
            return resolved.relative_to(Path(root).resolve()).as_posix()
    return resolved.as_posix()


def file_record(path: str | Path, root: str | Path | None = None) -> dict[str, Any]:
    """The identity record ``{path, sha256, size_bytes}`` of a file (path relative to ``root``)."""
    source = Path(path)
    try:
        size = source.stat().st_size
        digest = sha256_file(source)
    except OSError as exc:
        raise ContractError(source, "-", f"cannot hash file: {exc.strerror}", "check that it exists") from None
    return {"path": display_path(source, root), "sha256": digest, "size_bytes": size}


def record_matches(record: dict[str, Any], root: str | Path) -> bool:
    """True when the file named by ``record`` (relative to ``root``) still has that identity."""
    target = Path(record["path"])
    if not target.is_absolute():
        target = Path(root) / target
    try:
        return target.stat().st_size == record["size_bytes"] and sha256_file(target) == record["sha256"]
    except OSError:
        return False


def safe_join(root: str | Path, relative: str, *, field: str = "path", source: str | Path = "-",
              allow_symlinks: bool = False) -> Path:
    """Resolve ``relative`` inside ``root``; refuse escapes, absolute paths, NUL and symlinks."""
    base = Path(root).resolve()
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise ContractError(source, field, "path is empty or contains NUL", "give a relative path")
    candidate = Path(relative)
    if candidate.is_absolute():
        raise ContractError(source, field, f"absolute path {relative!r} not allowed",
                            "give a path relative to the operator directory")
    joined = base / candidate
    resolved = joined.resolve()
    if resolved != base and base not in resolved.parents:
        raise ContractError(source, field, f"path {relative!r} escapes {base}",
                            "keep evidence inside the operator directory")
    if not allow_symlinks:
        probe = base
        for part in candidate.parts:
            probe = probe / part
            if probe.is_symlink():
                raise ContractError(source, field, f"path {relative!r} goes through a symlink",
                                    "evidence must be regular files, not links")
    return resolved


def try_lock(path: str | Path) -> int | None:
    """Take an exclusive advisory ``flock`` on ``path`` (created if missing) without waiting.

    Returns the open descriptor holding the lock (closing it releases the lock, as does the
    process dying), or ``None`` when another open file description holds it.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


@contextlib.contextmanager
def file_lock(path: str | Path, *, timeout_s: float = 60.0) -> Iterator[None]:
    """Advisory exclusive lock on ``<path>.lock`` (fcntl), waiting at most ``timeout_s``."""
    lock_path = Path(f"{path}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    while (fd := try_lock(lock_path)) is None:
        if time.monotonic() > deadline:
            raise ContractError(path, "-", "could not take the lock", "another process holds it; retry later")
        time.sleep(0.01)
    try:
        yield
    finally:
        os.close(fd)  # closing drops the flock


def is_finite_positive(value: Any) -> bool:
    """True for a real number that is finite and > 0 (bools are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
