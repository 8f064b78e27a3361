"""Function adapter: run exactly one manifest case of an operator's test module in this process.

This is the upstream "function adapter" selector. It imports ``test_<op>.py`` (the runner's
folder first on ``sys.path``, then the op dir), seeds ``random`` and ``numpy`` with 42, calls the
case's ``test_function`` once and prints exactly one line ``PYPTO_PERF_SELECTED_CASE=<id>``.
An unknown case id exits 2 without running anything. A single-case manifest without a
``test_function`` runs the runner file as ``__main__`` instead. The msprof backend profiles this
command; the selector preflight runs it for every case and for one unknown id.

usage:
  python -m perftune.measure.backends.case_adapter --op-dir DIR --case-id ID [--runner FILE] [--manifest FILE]
      [--op-name NAME --attest FILE]

With ``--op-name`` and ``--attest`` the frozen op's Python function (the Op Name on cpu, the
manifest's ``launcher`` on msprof: ``contract/op_name.py``) is wrapped before the launch and what its
one call received and returned is written to FILE (``measure/attestation.py``; the msprof backend
archives it as ``repeat_NNN/attestation.json``). Without a usable launcher FILE says ``unavailable``
and stage5_check P9 fails the round.

example:
  PYTHONPATH=scripts python -m perftune.measure.backends.case_adapter --op-dir custom/softmax --case-id r64_c4096_fp32
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import random
import runpy
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

from ...contract import protocol
from ...argv import parser_from_doc
from ...errors import CheckFailed, ContractError, run_cli
from ...contract import op_name
from ...contract.manifest import Manifest, load_manifest
from . import harness_guard


def find_runner(op_dir: str | Path) -> Path:
    """``test_<dirname>.py`` when present, else the single ``test_*.py``; several is an error."""
    root = Path(op_dir)
    name = root.resolve().name  # "." names the folder it stands for
    preferred = root / f"test_{name}.py"
    if preferred.is_file():
        return preferred
    found = sorted(p for p in root.glob("test_*.py") if p.is_file())
    if len(found) != 1:
        raise ContractError(root, "test_<op>.py", f"{len(found)} runner candidates {[p.name for p in found]}",
                            f"keep exactly one test_*.py or name it test_{name}.py")
    return found[0]


def seed_all(seed: int = protocol.SEED) -> None:
    """Seed every generator a test may use: ``random`` now, legacy ``numpy.random`` now when numpy
    is loaded, else the moment anything first imports it. The effect is that of seeding first, but
    a runner that never uses numpy does not pay its import (~0.15 s of CPU per profiled run)."""
    random.seed(seed)
    harness_guard.remove_hooks("seed")
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)
    else:
        sys.meta_path.insert(0, harness_guard.AfterNumpyImport(
            lambda: importlib.import_module("numpy.random").seed(seed), "seed"))


def load_runner_module(runner: Path, op_dir: Path, name: str | None = None) -> ModuleType:
    """Import the runner file as a module named ``name`` (default: its stem); the runner's folder,
    then the op dir, lead sys.path."""
    for folder in (op_dir, runner.parent):
        text = str(folder.resolve())
        if text in sys.path:
            sys.path.remove(text)
        sys.path.insert(0, text)
    name = name or runner.stem
    spec = importlib.util.spec_from_file_location(name, runner)
    if spec is None or spec.loader is None:
        raise ContractError(runner, "-", "cannot import the runner", "check the file name")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def case_function(module: ModuleType, manifest: Manifest, case_id: str, source: str) -> Callable[[], object]:
    """The no-argument ``test_function`` of ``case_id`` in ``module``."""
    name = manifest.case(case_id).test_function
    function = getattr(module, name or "", None)
    if not name or not callable(function):
        raise ContractError(source, f"{case_id}.test_function", f"{name!r} is not a function of the runner",
                            "name an existing test_* function in the manifest")
    required = [p for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if required:
        raise ContractError(source, f"{case_id}.test_function", f"{name}() has required parameters",
                            "use a no-argument test function")
    return function


def known_case(manifest: Manifest, case_id: str, source: str) -> None:
    if case_id not in manifest.case_ids:
        raise ContractError(source, "--case-id", f"unknown case id {case_id!r}",
                            f"use one of {list(manifest.case_ids)}")


def _attested(module: ModuleType, function: Callable[[], object], name: str | None, output: Path) -> None:
    """Run ``function`` with the module's ``name`` (the frozen Python op) recorded (never timed);
    write the records."""
    from ... import fsio
    from .. import attestation
    records = []
    if name is None or not callable(getattr(module, name, None)):
        why = "the manifest freezes no launcher (re-freeze)" if name is None else f"{name!r} is not a function of the runner"
        fsio.write_json(output, {"unavailable": why})
        function()
        return
    target = getattr(module, name)

    def recorder(*args, **kwargs):
        pre = attestation.before(args, kwargs)
        result = target(*args, **kwargs)
        records.append(attestation.after(pre, args, kwargs, result, attestation.caller_name()))
        return result

    setattr(module, name, recorder)
    try:
        function()
    finally:
        setattr(module, name, target)
    fsio.write_json(output, records[0] if len(records) == 1 else {"calls": records})


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__, "case_adapter")
    parser.add_argument("--op-dir", required=True, help="operator directory")
    parser.add_argument("--case-id", required=True, help="manifest case id to run")
    parser.add_argument("--runner", help="test file (default: test_<op>.py in --op-dir)")
    parser.add_argument("--manifest", help="manifest (default: <op-dir>/PERFORMANCE_CASES.json)")
    parser.add_argument("--op-name", help="frozen op name to attest (with --attest)")
    parser.add_argument("--attest", help="write the op call's input attestation here")
    args = parser.parse_args(argv)
    op_dir = Path(args.op_dir).resolve()
    manifest_path = Path(args.manifest or op_dir / protocol.MANIFEST_NAME)
    manifest = load_manifest(manifest_path, check_schema=False)  # the parent validated it
    known_case(manifest, args.case_id, str(manifest_path))
    runner = Path(args.runner).resolve() if args.runner else find_runner(op_dir)
    seed_all()
    try:
        if manifest.case(args.case_id).test_function is None and len(manifest.cases) == 1:
            runpy.run_path(str(runner), run_name="__main__")
        else:
            module = load_runner_module(runner, op_dir)
            function = case_function(module, manifest, args.case_id, str(manifest_path))
            if args.op_name and args.attest:
                _attested(module, function, op_name.python_op(manifest), Path(args.attest))
            else:
                function()
    except (ContractError, CheckFailed):
        raise
    except Exception as exc:  # the operator's own test failed: report it on one line
        raise CheckFailed(runner, args.case_id, f"test raised {type(exc).__name__}: {exc}",
                          "fix the operator or its test") from None
    print(f"{protocol.SELECTED_CASE_MARKER}{args.case_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
