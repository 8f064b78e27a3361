"""Protocol constants: the single home of every frozen number and name (STYLE habit 10)."""

from __future__ import annotations

SEED = 42
MANIFEST_NAME = "PERFORMANCE_CASES.json"
MANIFEST_SCHEMA_VERSION = 2
GOLDEN_REPORT_NAME = "GOLDEN_PERF_REPORT.json"
GOLDEN_REPORT_MD = "GOLDEN_PERF_REPORT.md"
GOLDEN_SCHEMA_VERSION = 2
GOLDEN_ITERATIONS = 1
GOLDEN_AGGREGATION = "median_of_repeat_totals"

PERF_DIR = "docs/perf"                      # relative to the operator directory
ROUND_PREFIX = "round_"
ROUND_DIGITS = 3
LEDGER_NAME = "ledger.json"
CANDIDATES_NAME = "candidates.json"
SELECTION_NAME = "selection.json"
VERSIONS_DIR = "versions"                   # docs/perf/versions/<version id>: saved code of each tried version
STAGE5_CHECK_NAME = "stage5_check.json"
QUICK_NAME = "quick_performance.json"
# Raw evidence format: ``format_version`` of collection.json, quick_performance.json, measurement.json,
# evidence_status.json and the cpu samples.csv; 0 = written before the field (docs/architecture.md).
EVIDENCE_FORMAT_VERSION = 1
EVIDENCE_FORMAT_VERSIONS = (0, 1)
PERFORMANCE_JSON = "performance.json"
PERFORMANCE_LOG = "performance.log"
PERF_REPORT_MD = "perf_report.md"
PERFORMANCE_REPORT_MD = "PERFORMANCE_REPORT.md"
STATE_NAME = ".orchestrator_state.json"
FIGURES_DIR = "docs/perf/figures"

BACKENDS = ("msprof", "cpu", "pypto-sim")
DEFAULT_WARMUP = 3
DEFAULT_REPEATS = 10
AGGREGATIONS = ("trimmed_mean", "median")
DEFAULT_AGGREGATION = "median"
SELECTION_MODES = ("user_selected", "single_p0", "all_p0_no_questions")
AGGREGATE_METRIC = "mean_case_speedup"
TIE_BREAK = "smallest_evaluation_order"
TIMING_SCOPES = {"msprof": "pypto_target_kernel", "cpu": "cpu_kernel_call", "pypto-sim": "pypto_sim_total_cycles"}
# Deterministic backends (same code, same inputs -> the same time): repeats only prove determinism,
# so the frozen decision needs DETERMINISTIC_MIN_REPEATS samples (zero spread is exact, not noise).
DETERMINISTIC_BACKENDS = ("pypto-sim",)
JOBS_ENV = "PERFTUNE_JOBS"   # processes side by side on a deterministic backend (rounds, P10, tests); else the cores
SLOTS_ENV = "PERFTUNE_SLOTS"   # a search's shared slot files: each started process holds one (measure/slots.py)
DETERMINISTIC_MIN_REPEATS = 2

DECISION_METHODS = ("bootstrap", "relative_band")
DEFAULT_DECISION = {
    "method": "bootstrap",
    "confidence": 0.95,
    "noise_band": 0.01,
    "resamples": 10000,
    "rng_seed": SEED,
    "min_repeats": 5,
    "multiplicity": "bonferroni",   # per-case CI level 1-(1-c)/k over the k target cases
}
# the band each backend's confirm step can confirm (docs/statistics.md "The default band per backend"):
# cpu: the median smallest δ that confirms a paired A/A confirm on this 2-core host (0.80 over 10 pairs at
# load 12-19, benchmarks/aa/confirm_band.py on benchmarks/results/aa.json); pypto-sim: exact cycles, any
# band confirms; msprof: the contract's 1 % (no NPU figure here to derive another)
NOISE_BAND_BY_BACKEND = {"cpu": 0.8, "pypto-sim": 0.01, "msprof": 0.01}
MULTIPLICITY = ("bonferroni", "none")
AGGREGATE_METRICS = ("mean_case_speedup", "geomean_speedup")
# quick -> formal promotion: evidence of a gain over the item's case scope (docs/statistics.md)
PROMOTION_RULES = ("suite_ci_low_above_threshold", "suite_point_above_band")
PROMOTION_SCOPES = ("item_cases", "target_cases")
DEFAULT_PROMOTION = {"quick_min_speedup": 1.0, "rule": "suite_ci_low_above_threshold", "scope": "item_cases"}
# item acceptance after the formal compare against the current best (docs/statistics.md)
ACCEPTANCE_RULES = ("suite_ci_low_above_one_no_slower_target",)
DEFAULT_ACCEPTANCE = {"rule": "suite_ci_low_above_one_no_slower_target"}
DEFAULT_MAX_REMEASUREMENTS = 1  # re-measurements (supersedes, confirm retries) per version
DEFAULT_PROCESSES = 1           # processes a case's repeats are spread over (cpu backend)
# stage5_check P10: the verifier skips its re-measurement (disclosed) when the final round's duration
# suggests it takes longer than this; frozen at freeze, never a verifier flag (docs/stage5-check.md)
DEFAULT_REMEASURE_BUDGET_S = 900.0
RELATIVE_BAND_MIN_REPEATS = 3   # relative_band (upstream-compatible) floor: min(min_repeats, 3)

VERDICTS = ("faster", "slower", "equivalent", "inconclusive", "insufficient")

# msprof metric groups, in collection order; PipeUtilization carries the canonical timing.
METRIC_GROUPS = (
    "PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0",
    "MemoryUB", "L2Cache", "ResourceConflictRatio",
)
CANONICAL_METRIC = "PipeUtilization"
TIMING_COLUMN = "Task Duration(us)"
OP_NAME_COLUMN = "Op Name"

# Bound routing (diagnostic only, never a verdict).
BOUND_ROUTE_HIGH = 0.80
BOUND_ROUTE_MAX = 0.70
BOUND_LABELS = (
    "insufficient_evidence", "no_dominant_pipe", "mixed",
    "compute_candidate", "data_movement_candidate", "scalar_candidate",
)
# Per-operator diagnosis over all launches (profiler/diagnosis.py owns the rule, D1-D7).
DIAGNOSIS_LABELS = (
    "aicpu_bound", "insufficient_evidence", "occupancy_bound", "cube_bound", "vector_bound", "mte2_bound",
    "mte3_bound", "data_movement_bound", "scalar_bound", "launch_bound", "latency_bound",
)
# The bound families of the knowledge base (cards, methods, templates: bound_hint; case library: bound) a
# label routes to, first family first (knowledge/cases.py reads it; a route is never empty: tests/knowledge).
DIAGNOSIS_FAMILIES = {
    "cube_bound": ("compute",), "vector_bound": ("compute",), "mte2_bound": ("data_movement",),
    "mte3_bound": ("data_movement",), "data_movement_bound": ("data_movement",), "scalar_bound": ("scalar",),
    "latency_bound": ("wait",), "launch_bound": ("wait", "any"), "occupancy_bound": ("any",),
    "aicpu_bound": ("any",), "insufficient_evidence": ("any",), "no_dominant_pipe": ("wait", "any"),
}
DIAGNOSIS_SERIAL_SUM = 0.90       # vec + mte2 + mte3 of the vector side (msprof-analyze's vector-operator rule)
DIAGNOSIS_LAUNCH_US = 20.0        # below it nothing dominating = launch-bound (msprof-analyze's "no bound" minimum task)
DIAGNOSIS_WAVE_EFFICIENCY = 0.80  # blocks / (waves x cores) below it: the last wave leaves cores idle
DIAGNOSIS_BLOCK_SPREAD = 0.30     # (max - min) / max of per-block core time above it: severe imbalance (msprof-guide MS-4)

DEFAULT_TARGET_METRIC = "golden_per_iteration_us / final_us"
DEFAULT_TARGET_THRESHOLD = 1.0
TARGET_STATUSES = ("met", "not_met", "unavailable", "unproven")  # unproven: user speed-up target only

# Device environment rule (upstream bug: setting both renumbers the card).
DEVICE_ENV = "TILE_FWK_DEVICE_ID"
VISIBLE_DEVICES_ENV = "ASCEND_RT_VISIBLE_DEVICES"
SELECTED_CASE_MARKER = "PYPTO_PERF_SELECTED_CASE="

# Ledger vocabulary (DESIGN §4.5).
SOURCE_KINDS = ("kb_selected", "general_method", "knowledge_card", "template", "bottleneck_derived")
PRESET_SOURCE_KINDS = SOURCE_KINDS[:4]
NON_TERMINAL_STATUSES = ("pending", "unknown", "enabler", "blocked")
KB_TERMINAL_STATUSES = ("already_implemented", "not_triggered", "implemented")
OTHER_TERMINAL_STATUSES = ("accepted", "rejected", "not_applicable", "unsupported")
REASON_CODES = (
    "quick_not_promoted", "control_faster", "no_stable_gain", "correctness_failed",
    "mechanism_mismatch", "slower", "contract_violation", "superseded",
)
RELATION_KINDS = ("overlap", "requires", "enables", "conflict", "covers", "reopens")

# Terminal evidence (DESIGN §8 P8).
ROOFLINE_IDEAL = ("compute_bound", "data_movement_bound", "balanced_compute_movement")
ROOFLINE_RESIDUAL = ("scalar_bound", "wait_bound", "unattributed_residual")  # the last: cpu (no wait evidence)
PIPELINE_ALLOWED = ("proven", "not_applicable_with_dag", "residual_not_overlapped")
NOT_EVALUABLE = ("insufficient_evidence", "unverified", "unknown")
