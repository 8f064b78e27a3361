"""The final report's figures and tables say what the evidence says (#23.6): candidate scores on a log
axis with the band and the tie margin labelled by value, superseded versions drawn as such, roof
sources named, ledger cells never cut. Figures are inspected through matplotlib's objects."""

from __future__ import annotations

from perftune.report import final_md, final_plots, final_report, plots


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_candidate_scores_log_axis_labelled_band_tie_margin_and_superseded(tmp_path):
    final_plots.candidate_scores(
        ["v000", "v001", "v002", "v003"], [1.0, 2.5, 2.4, 1.9], [[0.9, 1.1], [2.2, 2.8], [2.1, 2.7], [1.7, 2.1]],
        [False, True, True, False], "v002", 0.05, tmp_path / "c.png", "scores",
        reasons=[None, None, None, "superseded by v004 (re-measured)"], metric="mean_case_speedup")
    ax = plots.LAST_FIGURE[0].axes[0]
    assert ax.get_yscale() == "log"
    legend = _legend(ax)
    assert "band [1/(1+δ), 1+δ] = [0.952, 1.050], δ = 0.05: within noise of the baseline" in legend
    assert "tie margin: top score / (1+δ) = 2.381" in legend   # top eligible score 2.5 / 1.05
    assert not any("noise band around 1.0" in t for t in legend)
    notes = [t.get_text() for t in ax.texts]
    assert "2.400 chosen" in notes and "1.900\nsuperseded" in notes
    low, high = ax.get_ylim()
    assert low < 0.9 and high > 2.8                         # every CI inside the axes
    assert "arithmetic mean" in ax.get_ylabel() and "log scale" in ax.get_ylabel()


def test_roofline_names_the_source_of_each_roof(tmp_path):
    platform = {"platform_id": "cpu-x", "file": {"path": "docs/perf/platform_cpu.json"},
                "peak_status": {"arithmetic_ops_per_s": "measured", "memory_bytes_per_s": "unverified_external"}}
    sources = final_report.roof_sources(platform)
    assert sources == ("docs/perf/platform_cpu.json peaks.arithmetic_ops_per_s measured",
                       "docs/perf/platform_cpu.json peaks.memory_bytes_per_s unverified_external")
    final_plots.roofline(["a"], [0.5], [1.0], 10.0, 4.0, tmp_path / "r.png", "roof", sources=sources)
    ax = plots.LAST_FIGURE[0].axes[0]
    (label,) = _legend(ax)
    label = " ".join(label.split())                            # wrapped lines joined
    assert "compute 10.0 Gop/s, work-weighted for the first case (docs/perf/platform_cpu.json " \
           "peaks.arithmetic_ops_per_s measured)" in label
    assert "bandwidth 4.0 GB/s (docs/perf/platform_cpu.json peaks.memory_bytes_per_s unverified_external)" in label
    legend_box = ax.get_legend().get_window_extent()
    assert legend_box.y1 < ax.get_window_extent().y0          # below the axes: never over a case
    platform["peak_status"]["transcendental_ops_per_s"] = "measured"
    assert "peaks.arithmetic_ops_per_s measured, peaks.transcendental_ops_per_s measured" in \
        final_report.roof_sources(platform)[0]
    final_plots.roofline(["a"], [0.5], [1.0], 10.0, 4.0, tmp_path / "r2.png", "roof")
    assert "source not recorded" in _legend(plots.LAST_FIGURE[0].axes[0])[0]


def _item(**kw) -> dict:
    base = {"item_id": "general-07", "source_kind": "general_method", "status": "not_applicable", "reason_code": None,
            "applicability": {"state": "not_applicable", "grounds": "no loop | nothing to hoist"},
            "evidence": {"formal": [], "mechanism": None}}
    return {**base, **kw}


def test_ledger_cells_are_whole_and_the_reason_is_never_empty():
    mechanism = "narrows the accumulators to float32 " * 6 + "(the end of the sentence)"
    ledger = {"items": [_item(), _item(item_id="kb-a", status="rejected", reason_code="no_stable_gain",
                                       evidence={"formal": ["round_003"], "mechanism": mechanism + "\nline two"}),
                        _item(item_id="kb-b", status="already_implemented",
                              applicability={"state": "to_be_proven", "grounds": ""},
                              history=[{"note": "opened"}, {"note": "the kernel already writes out in place"}])],
              "sweep": {}}
    inputs = final_md.FinalInputs("t", {}, {}, {}, ledger, None, None, [], {})
    rows = [line for line in final_md._ledger(inputs) if line.startswith(("| general-07", "| kb-a", "| kb-b"))]
    assert "| not_applicable: no loop \\| nothing to hoist |" in rows[0]
    assert "(the end of the sentence) line two |" in rows[1] and "| no_stable_gain |" in rows[1]
    assert "| the kernel already writes out in place |" in rows[2]   # the closing note, never an empty cell
    assert all(row.count(" | ") == 5 for row in (r.replace("\\|", "") for r in rows))  # six cells, pipes escaped


def test_terminal_section_lists_every_roof_source():
    roof = {"status": "data_movement_bound", "attained_fraction": 0.4, "binding_roof": "memory", "reason": "r",
            "platform": {"platform_id": "cpu-x", "file": {"path": "docs/perf/platform_cpu.json"},
                         "peak_status": {"arithmetic_ops_per_s": "measured", "memory_bytes_per_s": "measured"},
                         "peak_source": {"arithmetic_ops_per_s": "terminal_evidence.py probe: numpy add loop",
                                         "memory_bytes_per_s": "terminal_evidence.py probe: copy of 64 MiB"}}}
    terminal = {"cases": [{"case": "a", "roofline_terminal": roof, "pipeline_evidence": {"status": "proven"},
                           "scalar_evidence": {"dominant": False}}]}
    text = "\n".join(final_md._terminal(final_md.FinalInputs("t", {}, {}, {}, None, None, terminal, [], {})))
    assert "Roof sources (platform `cpu-x`, file `docs/perf/platform_cpu.json`):" in text
    assert "- `memory_bytes_per_s`: measured; terminal_evidence.py probe: copy of 64 MiB" in text
