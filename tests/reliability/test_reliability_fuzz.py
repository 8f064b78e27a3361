"""Property tests (hypothesis) for the parsers and the statistics: only documented errors, exact laws.

Documented error types: the readers and parsers raise only ``ContractError`` (exit 2);
``canonical_shape``/``canonical_dtype`` raise only ``ValueError`` (their callers turn it into a
ContractError naming the row). Statistics guarantees tested here, as implemented in perftune.decide.stats:
the point speed-up is inverted exactly (to rounding) by swapping the arms; a paired CI is inverted
exactly too (one shared index draw); an independent CI only approximately (each arm's resampling
stream changes sides): its inverted bounds are the same quantiles within Monte Carlo error;
permuting the repeats (or the pairs) changes nothing at all, CI and verdict included, because each
arm is sorted before resampling (this property found the bug fixed in 763bcf5).
The A/A drift check deliberately reads the recorded repeat order (docs/statistics.md), so it is
not expected to be permutation invariant.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from perftune.profiler import msprof_csv
from perftune.decide import stats
from perftune.errors import ContractError
from perftune.contract.manifest import Decision, canonical_dtype, canonical_shape, parse_manifest, parse_spec

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TARGET = "softmax_kernel"


# ------------------------------------------------------------------ msprof CSV reader

HEADERS = st.sampled_from([
    ["Op Name", "Task Duration(us)"], ["Name", "Duration(us)"], ["Op Name", "Task Duration（us）"],
    ["\ufeffOp Name", "Task Type", "Task Duration(us)", "aiv_time(us)"], ["Op_Name", "task duration (us)"],
    ["Op Name", "Op Name"], ["Op Name"], ["", "Task Duration(us)"], ["Device Id", "Op Name", "Task Duration(us)"],
])
CELLS = st.one_of(
    st.sampled_from(["N/A", "", " ", "nan", "inf", "-inf", "-1", "0", "1e3", "12.5", "1,5", '"', TARGET,
                     f" {TARGET}\t", TARGET.upper(), "x\x00y"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)


@st.composite
def op_summary_text(draw):
    header = draw(HEADERS)
    rows = draw(st.lists(st.lists(CELLS, min_size=len(header) - 1, max_size=len(header) + 1), max_size=6))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [",".join(header)] + [",".join(row) for row in rows]
    return newline.join(lines) + draw(st.sampled_from(["", newline]))


@FAST
@given(text=op_summary_text())
def test_op_summary_reader_raises_only_contract_errors_and_selects_exactly(text):
    try:
        frame = msprof_csv.read_op_summary(text, "op_summary_PipeUtilization.csv")
        row = msprof_csv.select_target_row(frame, TARGET, "op_summary_PipeUtilization.csv")
    except ContractError as exc:
        assert "\n" not in exc.line()
        return
    assert row.op_name == TARGET and math.isfinite(row.duration_us) and row.duration_us > 0
    names = frame[msprof_csv.OP_NAME].str.strip()
    assert int((names == TARGET).sum()) == 1  # exactly one row, never the longest, never fuzzy


@FAST
@given(data=st.binary(max_size=200))
def test_csv_bytes_of_any_kind_give_text_or_a_contract_error(data):
    try:
        text = msprof_csv.decode(data, "op_summary.csv")
        msprof_csv.read_op_summary(text, "op_summary.csv")
    except ContractError:
        pass


# ------------------------------------------------------------------ manifest and SPEC parsers

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10), st.floats(allow_nan=False), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=5)),
    max_leaves=20)
VALID = {
    "schema_version": 2,
    "cases": [{"id": "a", "shape": "[4,8]", "dtype": "fp16", "p0": True, "test_function": "test_a"},
              {"id": "b", "shape": "4x8", "dtype": "float32", "p0": True, "test_function": "test_b"}],
    "optimization_target": {"case_ids": ["a"], "selection_mode": "user_selected"},
    "protocol": {"backend": "cpu", "device_id": 0, "seed": 42, "warmup": 0, "repeats": 3, "op_name": "k",
                 "timing_scope": "cpu_kernel_call", "aggregation": "median", "aggregate_metric": "mean_case_speedup",
                 "tie_break": "smallest_evaluation_order",
                 "decision": {"method": "bootstrap", "confidence": 0.95, "noise_band": 0.01, "resamples": 10000,
                              "rng_seed": 42, "min_repeats": 5},
                 "promotion": {"quick_min_speedup": 1.0}},
}


def test_the_valid_manifest_used_for_mutation_parses():
    parsed = parse_manifest(json.loads(json.dumps(VALID)))
    assert parsed.case_ids == ("a", "b") and parsed.case("b").shape == "[4,8]" and parsed.case("a").dtype == "float16"


@FAST
@given(obj=JSON_VALUES)
def test_parse_manifest_on_any_json_value_raises_only_contract_errors(obj):
    try:
        parse_manifest(obj, "PERFORMANCE_CASES.json")
    except ContractError:
        pass


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _paths(value, prefix + (index,))


ALL_PATHS = [p for p in _paths(VALID) if p]


@FAST
@given(path=st.sampled_from(ALL_PATHS), value=JSON_VALUES, delete=st.booleans())
def test_one_mutated_field_is_accepted_or_a_contract_error(path, value, delete):
    obj = json.loads(json.dumps(VALID))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    try:
        manifest = parse_manifest(obj)
    except ContractError as exc:
        assert exc.file == "PERFORMANCE_CASES.json" and exc.field != "-"
        return
    assert set(manifest.target_case_ids) <= set(manifest.case_ids)
    assert len(set(manifest.case_ids)) == len(manifest.case_ids)


@FAST
@given(body=st.lists(st.lists(st.one_of(st.text(max_size=8), st.sampled_from(["[4,8]", "fp16", "yes", "no", "a"])),
                              min_size=1, max_size=6), max_size=5),
       header=st.sampled_from(["| id | shape | dtype | p0 |", "| id | shape | dtype |", "| shape | dtype |",
                               "| id | shape | dtype | p0 | test_function | params |"]),
       target=st.sampled_from(["", "user_target: speedup >= 1.2", "user_target: joy >= 1", "user_target: speedup >= 1\n"
                               "user_target: speedup >= 2"]))
def test_parse_spec_raises_only_contract_errors(body, header, target):
    rows = ["| " + " | ".join(row) + " |" for row in body]
    text = "\n".join(["# Op", "## Performance P0 cases", header, "|---|---|---|", *rows, "", target])
    try:
        info = parse_spec(text)
    except ContractError:
        return
    for case in info.cases:
        assert canonical_shape(case.shape) == case.shape and canonical_dtype(case.dtype) == case.dtype


# ------------------------------------------------------------------ shape/dtype canonicalisation

DIMS = st.lists(st.integers(1, 10_000), min_size=1, max_size=4)


@FAST
@given(text=st.text(max_size=30))
def test_canonicalisers_return_text_or_value_error_and_are_idempotent(text):
    for canon in (canonical_shape, canonical_dtype):
        try:
            out = canon(text)
        except ValueError:
            continue
        assert canon(out) == out


@FAST
@given(dims=DIMS, name=st.sampled_from(["", "x", "w_1"]))
def test_every_shape_spelling_joins_to_one_canonical_form(dims, name):
    spellings = [f"[{','.join(map(str, dims))}]", f"({', '.join(map(str, dims))})", "x".join(map(str, dims))]
    if len(dims) == 1:
        spellings[1] = f"({dims[0]},)"  # python tuple spelling
    if name:
        spellings = [f"{name}:{s}" for s in spellings[:2]]
    wanted = (f"{name}:" if name else "") + "[" + ",".join(map(str, dims)) + "]"
    for spelling in spellings:
        try:
            assert canonical_shape(spelling) == wanted
        except ValueError:
            assert spelling.endswith(",)")  # a trailing comma is refused rather than guessed


@pytest.mark.parametrize("alias, canon", [("fp16", "float16"), ("torch.float32", "float32"), ("bf16", "bfloat16"),
                                          ("np.float64", "float64"), ("x:fp16, w:fp32", "x:float16,w:float32")])
def test_dtype_aliases(alias, canon):
    assert canonical_dtype(alias) == canon


# ------------------------------------------------------------------ statistics

SAMPLES = st.lists(st.floats(1.0, 1e6, allow_nan=False, allow_infinity=False), min_size=5, max_size=12)
DECISION = Decision(method="bootstrap", confidence=0.95, noise_band=0.01, resamples=2000, rng_seed=42, min_repeats=5)


@SLOW
@given(b=SAMPLES, c=SAMPLES, aggregation=st.sampled_from(["median", "trimmed_mean"]))
def test_ci_contains_the_point_and_swapping_inverts_the_point(b, c, aggregation):
    r = stats.compare_samples(b, c, DECISION, aggregation=aggregation)
    s = stats.compare_samples(c, b, DECISION, aggregation=aggregation)
    assert r.ci_low <= r.point * (1 + 1e-12) and r.point <= r.ci_high * (1 + 1e-12)
    assert r.point * s.point == pytest.approx(1.0, rel=1e-12)
    assert r.mann_whitney_p == pytest.approx(s.mann_whitney_p, rel=1e-9)
    assert r.prob_candidate_faster + s.prob_candidate_faster == pytest.approx(1.0, abs=1e-9)


def _cdf_band(draws: np.ndarray, x: float) -> tuple[float, float]:
    """The empirical CDF of ``draws`` just below and at ``x`` (ties make it a band)."""
    eps = 1e-9 * max(1.0, abs(x))
    return float(np.mean(draws < x - eps)), float(np.mean(draws <= x + eps))


@SLOW
@given(b=SAMPLES, c=SAMPLES, aggregation=st.sampled_from(["median", "trimmed_mean"]))
def test_swapping_inverts_the_independent_ci_within_monte_carlo_error(b, c, aggregation):
    """Swapped bounds, inverted, are the 2.5 % / 97.5 % quantiles of the original bootstrap law up to
    Monte Carlo error (0.02 in probability is > 4 standard errors at 2000 resamples); the arms'
    index streams change sides, so exact equality is not what the implementation promises."""
    s = stats.compare_samples(c, b, DECISION, aggregation=aggregation)
    draws = stats.log_speedup_draws(np.asarray(b, float), np.asarray(c, float), aggregation, DECISION.resamples,
                                    np.random.default_rng(DECISION.rng_seed))
    for bound, level in ((1.0 / s.ci_high, 0.025), (1.0 / s.ci_low, 0.975)):
        below, at = _cdf_band(draws, math.log(bound))
        assert below - 0.02 <= level <= at + 0.02, (bound, level, below, at)


@SLOW
@given(pairs=st.lists(st.tuples(st.floats(1.0, 1e6), st.floats(1.0, 1e6)), min_size=5, max_size=12), data=st.data())
def test_permuting_pairs_changes_nothing(pairs, data):
    shuffled = data.draw(st.permutations(pairs))
    r = stats.compare_samples([p[0] for p in pairs], [p[1] for p in pairs], DECISION, paired=True)
    q = stats.compare_samples([p[0] for p in shuffled], [p[1] for p in shuffled], DECISION, paired=True)
    assert (q.point, q.ci_low, q.ci_high, q.verdict) == (r.point, r.ci_low, r.ci_high, r.verdict)


@SLOW
@given(pairs=st.lists(st.tuples(st.floats(1.0, 1e6), st.floats(1.0, 1e6)), min_size=5, max_size=12))
def test_swapping_a_paired_comparison_inverts_its_ci_exactly(pairs):
    assume(not any((c, b) in pairs for b, c in pairs if b != c))  # mirror pairs: order tie, see stats.py
    b, c = [p[0] for p in pairs], [p[1] for p in pairs]
    r = stats.compare_samples(b, c, DECISION, paired=True)
    s = stats.compare_samples(c, b, DECISION, paired=True)
    assert s.ci_low * r.ci_high == pytest.approx(1.0, rel=1e-9)
    assert s.ci_high * r.ci_low == pytest.approx(1.0, rel=1e-9)
    assert r.point * s.point == pytest.approx(1.0, rel=1e-12)


@SLOW
@given(b=SAMPLES, c=SAMPLES, data=st.data())
def test_permuting_samples_changes_nothing(b, c, data):
    pb = data.draw(st.permutations(b))
    pc = data.draw(st.permutations(c))
    r = stats.compare_samples(b, c, DECISION)
    p = stats.compare_samples(pb, pc, DECISION)
    assert p.point == r.point and (p.n_baseline, p.n_candidate) == (r.n_baseline, r.n_candidate)
    assert p.mann_whitney_p == pytest.approx(r.mann_whitney_p, rel=1e-12)
    assert (p.ci_low, p.ci_high, p.verdict) == (r.ci_low, r.ci_high, r.verdict)


@FAST
@given(b=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=8),
       c=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=8))
def test_any_samples_give_a_result_and_bad_ones_are_insufficient_never_zero(b, c):
    r = stats.compare_samples(b, c, DECISION)
    bad = stats.sample_problem(b, 5) or stats.sample_problem(c, 5)
    if bad:
        assert r.verdict == "insufficient" and r.ci_low is None and r.ci_high is None
        assert r.point is None or (math.isfinite(r.point) and r.point > 0)
    else:
        assert math.isfinite(r.point) and r.point > 0


@SLOW
@given(per_case=st.lists(st.tuples(SAMPLES, SAMPLES), min_size=1, max_size=3))
def test_suite_score_lies_between_case_speedups_and_its_ci_holds_it(per_case):
    cases = {f"c{i}": pair for i, pair in enumerate(per_case)}
    suite = stats.suite_score(cases, list(cases), DECISION)
    points = [stats.aggregate(b, "median") / stats.aggregate(c, "median") for b, c in per_case]
    assert min(points) * (1 - 1e-12) <= suite.mean_case_speedup <= max(points) * (1 + 1e-12)
    assert suite.geomean_speedup <= suite.mean_case_speedup * (1 + 1e-12)
    assume(suite.ci_low is not None)
    assert suite.ci_low <= suite.ci_high


def test_sample_order_is_read_by_the_aa_drift_check_on_purpose():
    """Documented exception to permutation invariance: a drifting baseline proves its own noise."""
    drifting = [100.0 + i for i in range(10)]
    assert stats.aa_noise(drifting, DECISION, "median") > 0
    assert stats.aa_noise(sorted(drifting, key=lambda v: (v % 2, v)), DECISION, "median") == 0.0
    assert np.isclose(stats.aggregate(drifting, "median"), 104.5)
