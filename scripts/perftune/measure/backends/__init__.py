"""Measurement backends: the interface in :mod:`.base`, one module per backend, and the registry.

A new backend is one module with a :class:`~.base.Backend` subclass plus one line in
``_REGISTRY``. Modules are imported on first use, so a machine without CANN still runs the cpu
backend (and the registry, importing them by name, forms no import cycle with ``base``). The
names of :mod:`.base` re-exported here load on first access too: the per-repeat subprocesses
(``case_adapter``, ``cpu_runner``) live in this package, and importing them must not pull the
parent's machinery (tests/measure/test_subprocess_imports.py).
"""

from __future__ import annotations

import importlib
import shutil
from typing import TYPE_CHECKING

from ...contract import protocol
from ...errors import ContractError, EnvError

if TYPE_CHECKING:
    from .base import Backend

# backend name -> (module inside this package, class name)
_REGISTRY: dict[str, tuple[str, str]] = {
    "cpu": ("cpu", "CpuBackend"),
    "msprof": ("msprof", "MsprofBackend"),
    "pypto-sim": ("pypto_sim", "PyptoSimBackend"),
}
_FROM_BASE = ("Backend", "RepeatResult", "RunSpec", "Selector", "choose_selector", "device_env", "preflight",
              "repeat_dir_name", "runner_env")


def get_backend(name: str) -> Backend:
    """The backend named ``name`` (one of ``protocol.BACKENDS``), its module imported on first use."""
    if name not in _REGISTRY:
        raise ContractError("-", "protocol.backend", f"unknown backend {name!r}",
                            f"use one of {list(protocol.BACKENDS)}")
    module_name, class_name = _REGISTRY[name]
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError:
        if name == "msprof" and shutil.which("msprof") is None:
            raise EnvError("msprof", "PATH", "msprof is not on PATH",
                           "source the CANN set_env.sh or use the cpu backend") from None
        raise EnvError(f"{__name__}.{module_name}", "-", f"{name} backend module is not installed",
                       "update the plugin") from None
    return getattr(module, class_name)()


def defaults_text(attribute: str) -> str:
    """``"cpu 3, msprof 3, pypto-sim 0"``: every backend's own default of ``default_warmup`` or
    ``default_repeats`` (what perf_next prints before the freeze, when no backend is frozen yet)."""
    return ", ".join(f"{name} {getattr(get_backend(name), attribute)}" for name in protocol.BACKENDS)


def __getattr__(name: str):
    """``Backend``, ``RunSpec``, ``runner_env``, ...: :mod:`.base` is imported on first access."""
    if name in _FROM_BASE:
        from . import base
        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["defaults_text", "get_backend", *_FROM_BASE]
