"""Measurement backends: the interface in :mod:`.base`, the cpu and msprof implementations.

Use :func:`get_backend` (``"cpu"`` or ``"msprof"``); the msprof module is imported lazily so a
machine without CANN can still run everything on the cpu backend.
"""

from .base import (Backend, RepeatResult, RunSpec, Selector, choose_selector, device_env,
                   get_backend, preflight, repeat_dir_name, runner_env)

__all__ = ["Backend", "RepeatResult", "RunSpec", "Selector", "choose_selector", "device_env",
           "get_backend", "preflight", "repeat_dir_name", "runner_env"]
