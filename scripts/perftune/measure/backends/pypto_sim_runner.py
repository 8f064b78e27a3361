"""The pypto-sim measured process: PyPTO's side files kept in a scratch folder, then a runner module.

Sets, before anything imports pypto, ``TILE_FWK_OUTPUT_DIR`` (the simulator's ``output_<ts>/``
folders), ``PYPTO_HOME`` (``run/rundata_*``, else under ``$HOME/.pypto``),
``ASCEND_PROCESS_LOG_PATH`` (plogs, else under ``$HOME/ascend``) and ``TILEFWK_CONFIG_PATH`` (the
effective simulator configuration for ``--arch``, see ``pypto_sim.effective_config``) to paths inside
``--scratch``, then runs ``MODULE`` as ``__main__`` with the remaining arguments (the cpu backend's
``cpu_runner`` for measurements, ``case_adapter`` for the selector preflight). Without ``--scratch`` a
temporary folder is used and removed afterwards, so nothing reaches ``$HOME`` or the cwd.
With ``PERFTUNE_SIM_LAUNCH_LOG`` set, each process appends one JSON line ``{module, args, started,
seconds, returncode, simulated}`` to that file (the launch count of benchmarks/pypto_sim/;
``simulated``: pypto was imported, false for a process that ended before, e.g. an unknown case id).

usage:
  python -m perftune.measure.backends.pypto_sim_runner --arch A2A3 [--scratch DIR] MODULE [ARG ...]

example:
  PYTHONPATH=scripts python -m perftune.measure.backends.pypto_sim_runner --arch A2A3 \\
      perftune.measure.backends.case_adapter --op-dir examples/pypto_softmax --case-id r512_c1024_fp32
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ... import fsio
from ...argv import parser_from_doc
from ...errors import run_cli
from . import sim_guard
from .pypto_sim import effective_config

LAUNCH_LOG_ENV = "PERFTUNE_SIM_LAUNCH_LOG"
SIDE_FILE_ENV = {"TILE_FWK_OUTPUT_DIR": "output", "PYPTO_HOME": "pypto_home",
                 "ASCEND_PROCESS_LOG_PATH": "ascend_log", "TILEFWK_CONFIG_PATH": "tile_fwk_config.json"}


def side_file_env(scratch: Path) -> dict[str, str]:
    """The environment that keeps every PyPTO side file inside ``scratch``."""
    return ({name: str(scratch / leaf) for name, leaf in SIDE_FILE_ENV.items()}
            | {"MPLBACKEND": "Agg", sim_guard.ACTIVE_ENV: "1"})   # sim_guard: host work around the launch


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__, "pypto_sim_runner")
    parser.add_argument("--arch", required=True)
    parser.add_argument("--scratch")
    parser.add_argument("module")
    parser.add_argument("args", nargs="...")
    args = parser.parse_args(argv)
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="pypto_sim_"))
    started, started_at, code = time.monotonic(), time.time(), 1
    try:
        code = _run(args, scratch)
        return code
    finally:
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        if os.environ.get(LAUNCH_LOG_ENV):
            with open(os.environ[LAUNCH_LOG_ENV], "a", encoding="utf-8") as log:
                log.write(json.dumps({"module": args.module, "args": args.args, "returncode": code,
                                      "simulated": "pypto" in sys.modules, "started": round(started_at, 3),
                                      "seconds": round(time.monotonic() - started, 3)}) + "\n")


def _run(args, scratch: Path) -> int:
    scratch.mkdir(parents=True, exist_ok=True)
    env = side_file_env(scratch)
    fsio.write_text(env["TILEFWK_CONFIG_PATH"], effective_config(args.arch)[0])
    os.environ.update(env)
    sim_guard.activate()   # this process is a pypto-sim measurement (before the operator's import)
    sys.argv = [args.module, *args.args]
    try:
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
