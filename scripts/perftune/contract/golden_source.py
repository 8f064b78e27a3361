"""Which golden module and case factory define the frozen inputs of every case.

The verifier rebuilds the measured inputs (stage5_check P9) and the correctness probes build the
precision reference's call (``measure/reference_call.py``) from the golden case factory: the
function that, given the manifest cases, returns ``(case_id, args, kwargs)`` per case with seed 42
(docs/operator-format.md). It is found, in this order:

1. ``GOLDEN_PERF_REPORT.json`` exists (SKILL step ``golden``): its ``golden_source`` names the module
   (``path``, ``sha256``) and the ``factory``; the module must still have that sha256. A report that
   cannot be read is a problem, never skipped.
2. No report (the msprof flow on a host without torch_npu; any run before step ``golden``): the
   operator format's ``<name>_golden.py`` and its factory ``golden_cases``. That module is a frozen
   input, so it must be listed in ``FROZEN_INPUTS.json`` (recorded at freeze) with its current sha256.

Anything else raises a ContractError naming the file and the fix (run step ``golden``).

:func:`load_callable` imports a function of that module (its folder on ``sys.path``) and
:func:`seed_all` seeds ``random`` and numpy with the frozen seed before the factory runs.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import fsio
from ..errors import ContractError, PerftuneError
from . import frozen_inputs, protocol

DEFAULT_FACTORY = "golden_cases"


@dataclass(frozen=True)
class GoldenSource:
    path: Path
    factory: str
    origin: str  # the file that vouches for it: the golden report or FROZEN_INPUTS.json

    def as_dict(self, op_dir: Path) -> dict[str, str]:
        return {"path": fsio.display_path(self.path, op_dir), "factory": self.factory, "origin": self.origin}


def _from_report(root: Path, report: Path) -> GoldenSource:
    try:
        source = fsio.read_json(report, what="golden report")["golden_source"]
        path = fsio.safe_join(root, source["path"], field="golden_source.path", source=report)
        factory = str(source["factory"])
    except (KeyError, TypeError) as exc:
        raise ContractError(report, "golden_source", f"is incomplete ({exc})", "recollect the golden report") from None
    if not path.is_file() or fsio.sha256_file(path) != source.get("sha256"):
        raise ContractError(path, "sha256", "golden module changed after the golden contract was collected",
                            "restore the golden module (frozen inputs never change in Stage 5)")
    return GoldenSource(path, factory, protocol.GOLDEN_REPORT_NAME)


def _from_frozen_record(root: Path) -> GoldenSource:
    name = f"{root.resolve().name}_golden.py"
    path, record = root / name, root / frozen_inputs.RECORD_NAME
    try:
        files = fsio.read_json(record, what="frozen input record").get("files", {})
    except (PerftuneError, AttributeError):
        files = None
    if not isinstance(files, dict) or name not in files:
        raise ContractError(path, "golden_source", f"no {protocol.GOLDEN_REPORT_NAME} and {name} is not a frozen "
                            f"input recorded in {frozen_inputs.RECORD_NAME}",
                            "run SKILL step golden (collect_golden_reference.py) after the freeze")
    if not path.is_file() or fsio.sha256_file(path) != files[name]:
        raise ContractError(path, "sha256", "golden module changed after freeze", "restore the frozen golden module")
    return GoldenSource(path, DEFAULT_FACTORY, frozen_inputs.RECORD_NAME)


def resolve(op_dir: str | Path) -> GoldenSource:
    """The golden module and factory of ``op_dir`` (rules in the module docstring)."""
    root = Path(op_dir)
    report = root / protocol.GOLDEN_REPORT_NAME
    if report.exists() or report.is_symlink():
        return _from_report(root, report)
    return _from_frozen_record(root)


def load_callable(path: Path, name: str, flag: str) -> Callable[..., Any]:
    """Import ``path`` (its folder on sys.path) and return its function ``name``."""
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ContractError(path, "-", "cannot import the golden module", "pass a .py file")
    module = sys.modules.get(path.stem) or importlib.util.module_from_spec(spec)
    if path.stem not in sys.modules:
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    function = getattr(module, name, None)
    if not callable(function):
        raise ContractError(path, flag, f"{name!r} is not a function of the golden module", "name an existing function")
    return function


def seed_all(seed: int = protocol.SEED) -> None:
    random.seed(seed)
    import numpy
    numpy.random.seed(seed)
