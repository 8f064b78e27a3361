"""Several operator folders across the cards of a host, or across hosts with a Slurm job array.

Local (``collect_perf.py batch --op-dirs A B C --devices 0,...,7 --shared-dir S``): the cards are
dealt to the operators (operator ``j`` gets ``cards[j::n]`` when there are fewer operators than
cards; otherwise each card takes the next waiting operator); every operator is one subprocess
``collect_perf.py formal --op-dir <op> --devices <its cards> --json`` (the same CLI a user types,
per-card locks included), whose JSON goes to ``S/results/<index>.json``. :func:`merge` then
writes ``S/batch_summary.json``: per operator the status, round, collection id, cards and the
per-case aggregate read from the round's ``measurement.json`` files.

Slurm (``--emit slurm``): :func:`slurm_script` writes a job-array script with one array task per
operator; each task runs the same formal command on its node, with the cards of its allocation
(``SLURM_STEP_GPUS`` or ``SLURM_JOB_GPUS`` when the cluster exports them, else ``0..N-1`` for
``--cards-per-task N``), writing ``S/results/<task id>.json`` into the shared folder; ``collect_perf.py
merge --shared-dir S`` builds the same summary afterwards. No scheduler of our own: queueing,
placement and retries are Slurm's (docs/msprof-backend.md also describes Ray as the alternative).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from .. import fsio
from ..errors import ContractError
from . import evidence

SCRIPTS = Path(__file__).resolve().parents[2]
SUMMARY = "batch_summary.json"
PLAN = "batch_plan.json"       # the operators, by task index: merge names the ones without a result


def _ops(op_dirs: list[str]) -> list[Path]:
    out = [Path(p).resolve() for p in op_dirs]
    for path in out:
        if not path.is_dir():
            raise ContractError(path, "--op-dirs", "is not a directory", "pass frozen operator folders")
    if len(set(out)) != len(out):
        raise ContractError("collect_perf.py", "--op-dirs", "lists one folder twice", "list each operator once")
    return out


def formal_argv(op: Path, devices: str) -> list[str]:
    return [sys.executable, str(SCRIPTS / "collect_perf.py"), "formal", "--op-dir", str(op), "--devices", devices,
            "--json"]


def _run_one(index: int, op: Path, cards: list[int], shared: Path) -> None:
    proc = subprocess.run(formal_argv(op, ",".join(map(str, cards))), capture_output=True, text=True)
    try:
        result = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        result = {}
    result = {**result, "op_dir": str(op), "exit_code": proc.returncode,
              "stderr_tail": (proc.stderr.strip().splitlines() or [""])[-1]}
    fsio.write_json(shared / "results" / f"{index}.json", result)


def run_local(op_dirs: list[str], devices: list[int], shared: str | Path) -> dict[str, Any]:
    ops, folder = _ops(op_dirs), Path(shared).resolve()
    (folder / "results").mkdir(parents=True, exist_ok=True)
    fsio.write_json(folder / PLAN, {"operators": [str(op) for op in ops], "devices": devices})
    if len(ops) < len(devices):
        groups = [(i, op, devices[i::len(ops)]) for i, op in enumerate(ops)]
        threads = [threading.Thread(target=_run_one, args=(i, op, cards, folder)) for i, op, cards in groups]
    else:
        queue, lock = list(enumerate(ops)), threading.Lock()

        def card_worker(card: int) -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    index, op = queue.pop(0)
                _run_one(index, op, [card], folder)
        threads = [threading.Thread(target=card_worker, args=(card,)) for card in devices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return merge(folder)


def merge(shared: str | Path) -> dict[str, Any]:
    """Build ``batch_summary.json`` from ``results/*.json`` (local batch or Slurm array tasks)."""
    folder = Path(shared).resolve()
    ops = fsio.read_json(folder / PLAN, what="batch plan")["operators"] if (folder / PLAN).is_file() else []
    files = sorted((folder / "results").glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise ContractError(folder / "results", "-", "no task results", "run the batch or the array tasks first")
    rows = []
    for path in files:
        result = fsio.read_json(path, what="batch task result")
        row = {"task": path.stem, "op_dir": result.get("op_dir"), "status": result.get("status", "failed"),
               "exit_code": result.get("exit_code"), "round": result.get("round"),
               "collection_id": result.get("collection_id"), "case_devices": result.get("case_devices"),
               "failure": result.get("failure") or (result.get("stderr_tail") if result.get("exit_code") else None)}
        if row["status"] == "complete" and row["round"]:
            row["cases"] = {m["case"]: {"aggregate_us": m["aggregate_us"], "method": m["aggregation_method"]}
                            for m in (fsio.read_json(p, what="measurement.json") for p in
                                      sorted(Path(row["round"]).glob("case_*/measurement.json")))}
        rows.append(row)
    missing = sorted(set(ops) - {r["op_dir"] for r in rows})
    summary = {"schema_version": 1, "created_at": evidence.utc_now(), "operators": rows, "missing": missing,
               "complete": sum(r["status"] == "complete" for r in rows), "failed": sum(r["status"] != "complete"
                                                                                      for r in rows) + len(missing)}
    fsio.write_json(folder / SUMMARY, summary)
    return summary


def slurm_script(op_dirs: list[str], shared: str | Path, cards_per_task: int, output: str | Path) -> Path:
    ops, folder = _ops(op_dirs), Path(shared).resolve()
    if not output:
        raise ContractError("collect_perf.py", "--output", "is missing", "name the Slurm script to write")
    if cards_per_task < 1:
        raise ContractError("collect_perf.py", "--cards-per-task", f"{cards_per_task} < 1", "use the cards of one node")
    quoted = " ".join(shlex.quote(str(op)) for op in ops)
    text = f"""#!/bin/bash
# Stage 5 formal rounds of {len(ops)} operators, one Slurm array task per operator (collect_perf.py batch --emit slurm).
# Adjust the --gres line to your cluster's NPU resource name. Merge afterwards:
#   {shlex.quote(sys.executable)} {shlex.quote(str(SCRIPTS / 'collect_perf.py'))} merge --shared-dir {shlex.quote(str(folder))}
#SBATCH --job-name=perftune-stage5
#SBATCH --array=0-{len(ops) - 1}
#SBATCH --nodes=1
#SBATCH --gres=npu:{cards_per_task}
#SBATCH --output={folder}/logs/%A_%a.out
set -euo pipefail
OPS=({quoted})
OP="${{OPS[$SLURM_ARRAY_TASK_ID]}}"
CARDS="${{SLURM_STEP_GPUS:-${{SLURM_JOB_GPUS:-$(seq -s, 0 {cards_per_task - 1})}}}}"
mkdir -p {shlex.quote(str(folder / 'results'))} {shlex.quote(str(folder / 'logs'))}
set +e
{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPTS / 'collect_perf.py'))} formal --op-dir "$OP" --devices "$CARDS" --json \\
    > {shlex.quote(str(folder / 'results'))}/"$SLURM_ARRAY_TASK_ID".json.tmp
code=$?
{shlex.quote(sys.executable)} - "$OP" "$code" {shlex.quote(str(folder / 'results'))}/"$SLURM_ARRAY_TASK_ID".json <<'PY'
import json, sys
op, code, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(out + ".tmp").read()
result = json.loads(text) if text.strip() else {{}}
result.update(op_dir=op, exit_code=code)
json.dump(result, open(out, "w"), indent=2, sort_keys=True)
PY
rm -f {shlex.quote(str(folder / 'results'))}/"$SLURM_ARRAY_TASK_ID".json.tmp
exit $code
"""
    path = Path(output)
    fsio.write_text(path, text, overwrite=False)
    fsio.write_json(folder / PLAN, {"operators": [str(op) for op in ops], "cards_per_task": cards_per_task})
    path.chmod(0o755)
    return path
