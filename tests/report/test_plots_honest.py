"""The compare figures say what the statistics say (#23.6): inspected through matplotlib's objects."""

from __future__ import annotations

from perftune.report import plots


def test_speedup_figure_has_a_log_axis_a_labelled_band_visible_cis_n_and_targets(tmp_path):
    plots.speedup_ci(["fp32", "fp16", "gone"], [12.0, 1.04, None], [[9.0, 14.0], [0.97, 1.12], None],
                     [0.05, 0.05, 0.05], ["faster", "inconclusive", "insufficient"], tmp_path / "s.png",
                     ns=[(10, 10), (10, 10), (3, 0)], targets=[True, True, False], ci_levels=[0.9875, 0.9875, None])
    ax = plots.LAST_FIGURE[0].axes[0]
    assert ax.get_xscale() == "log"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "noise band [1/(1+δ), 1+δ], δ = 0.05 (within noise)" in legend and "no change (1.0)" in legend
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks == ["★ fp32\nn=10/10", "★ fp16\nn=10/10", "gone\nn=3/0"]
    low, high = ax.get_xlim()
    assert low < 0.97 and high > 14.0                  # every CI inside the axes
    bars = [c for c in ax.collections if c.get_zorder() == 4]
    assert len(bars) == 2                              # CIs drawn above the markers (zorder 3)
    notes = [t.get_text() for t in ax.texts]
    assert "1.04 [0.97, 1.12] inconclusive" in notes and "n/a (insufficient)" in notes
    assert "log scale" in ax.get_xlabel() and "0.9875" in ax.get_xlabel()


def test_sample_figure_starts_at_zero_and_shows_n(tmp_path):
    plots.sample_distributions(["a"], [[10.0, 11.0, 12.0]], [[5.0, 6.0]], tmp_path / "d.png")
    ax = plots.LAST_FIGURE[0].axes[0]
    assert ax.get_ylim()[0] == 0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["baseline\nn=3", "final\nn=2"]
