"""The legal twins of the cheat corpus (test_corpus.py; README.md): each twin PASSES stage5_check with the
re-measurement, so a false FAIL is tested too. Its own module, so the two halves of the corpus run side by
side under ``--dist loadfile``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import cheat_pipeline as pipeline
from test_corpus import CORPUS, delivered, load, verdict


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_legal_twin_passes(path, tmp_path):
    code, found = verdict(load(path)["twin"], tmp_path)
    assert (code, found["verdict"], found["failures"]) == (0, "PASS", []), found["failures"]
    assert found["remeasure"]["status"] == "run"
    attempts = found["provenance"]["final_attempts"]   # every final attempt counts (issue 35 item 6): all listed
    assert attempts["rounds"] and all(c["attempts"] == len(c["points"]) >= 1 for c in attempts["cases"].values())


def test_re_collected_until_lucky_the_project_delivers_the_median_attempts_figure(tmp_path):
    """issue 35 item 6, the lever closed: the final round re-collected on unchanged code until lucky
    (lucky_final.yaml's twin) and delivered through compare_perf.py: the figure is the median attempt's,
    each attempt's point computed here from its raw samples (median over median), not the lucky round's;
    the report says so; the verdict is PASS (above). Reuses the twin's run."""
    from perftune.measure import evidence
    arm = load(pipeline.HERE / "lucky_final.yaml")["twin"]
    code, found = verdict(arm, tmp_path)
    op = delivered(arm)
    perf = json.loads((op / "performance.json").read_text())
    assert perf["protocol"]["aggregation"] == "median"
    names = pipeline.rounds(op)[1:]   # every round but the baseline measured flag_slowed paired with v000
    points = {name: float(np.median(evidence.load_round(op, name).cases[pipeline.CASE].baseline_samples_us)
                          / np.median(evidence.load_round(op, name).cases[pipeline.CASE].samples_us)) for name in names}
    ordered = sorted(names, key=points.get)
    median, lucky = ordered[(len(ordered) - 1) // 2], names[-1]
    row = perf["per_case"][0]
    assert len(names) == 4 and points[lucky] > 3 * points[median], points   # unlucky twice, lucky last
    assert row["attempts"]["rounds"] == names and row["attempts"]["median_round"] == median
    assert row["speedup"] == pytest.approx(points[median], rel=1e-9) and row["speedup"] < points[lucky] / 3
    assert f"median of 4 final attempts ({', '.join(names)})" in (op / "PERFORMANCE_REPORT.md").read_text()
    assert (code, found["verdict"]) == (0, "PASS"), found["failures"]
