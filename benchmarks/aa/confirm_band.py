#!/usr/bin/env python3
"""The noise band this machine's cpu backend can confirm, from the A/A rounds of bench_aa.py (#38 Deliver 5).

The SKILL's confirm step (``select_best.py confirm``) repeats the paired comparison the chosen version was
ranked on and calls it ``consistent`` only when the bootstrap CI of confirm/ranking score lies inside
``[1/(1+δ), 1+δ]``. Two paired A/A rounds of ``benchmarks/results/aa.json`` (unchanged softmax against a
byte-identical copy, real cpu backend, loaded 2-core host) are exactly that comparison for a version
whose true ratio is 1: per disjoint pair (k, k+1) this script runs the product's
``selection.confirm_paired`` and records the CI's reach ``max(hi, 1/lo) - 1`` — the smallest δ that
confirms that pair. It also reads the calibrated independent band (``calibration.measure`` on back-to-back
rounds) the same file records. No measurement is made here: the figures are aa.json's.

usage:
  python benchmarks/aa/confirm_band.py [--aa benchmarks/results/aa.json] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(HERE.parent / "processes")]  # benchmark script, not library

import bench_processes  # noqa: E402
from perftune.contract.manifest import load_manifest  # noqa: E402
from perftune.decide import selection  # noqa: E402


def arms(rnd: dict, cases) -> dict:
    """{case: (partner samples, chosen samples, partner processes, chosen processes)} of one paired round."""
    return {c: (np.asarray(rnd["cases"][c]["baseline_samples_us"]), np.asarray(rnd["cases"][c]["samples_us"]),
                rnd["cases"][c]["processes"], rnd["cases"][c]["processes"]) for c in cases}


def reaches(aa: dict, manifest) -> list[float]:
    paired, cases = aa["paired_rounds"], manifest.target_case_ids
    out = []
    for k in range(0, len(paired) - 1, 2):
        res = selection.confirm_paired(arms(paired[k], cases), arms(paired[k + 1], cases), manifest)
        low, high = res["ratio_ci"]
        out.append(max(high, 1 / low) - 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aa", default=str(ROOT / "benchmarks/results/aa.json"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results"))
    args = parser.parse_args()
    aa = json.loads(Path(args.aa).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        manifest = load_manifest(bench_processes.make_op(Path(tmp), aa["repeats"], aa["warmup"]) / "PERFORMANCE_CASES.json")
    found = reaches(aa, manifest)
    calibrated = next(r["band_median"] for r in aa["rows"] if r["mode"] == "independent, calibrated")
    result = {"source": "benchmarks/results/aa.json", "load_during_min_max": aa["load_during_min_max"],
              "cpu_count": aa["cpu_count"], "pairs": len(found), "confirm_reach": [round(x, 4) for x in found],
              "confirm_reach_median": round(float(np.median(found)), 4),
              "confirm_reach_min": round(min(found), 4), "calibrated_independent_band_median": calibrated}
    Path(args.out, "confirm_band.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
