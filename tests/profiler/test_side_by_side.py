"""Side by side (issue 37 Deliver 6): on the real captures of tests/fixtures/real_profiler, the project's
diagnosis (``profiler_inspect.py --json``) against hand-checked labels and against the recorded output of
msprof-analyze 26.2.0's advisor and mindstudio-agent 26.1.3's bound analyser (peer_outputs/PROVENANCE.md).
Every hand figure was computed with cut/sort/awk from the file (PROVENANCE.md of each folder), never by
running the readers. The table of docs/ascend-stage5.md "Side by side" must state the same rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import call_script

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "real_profiler"
PEERS = CORPUS / "peer_outputs"
CANN9 = CORPUS / "cannbot_add_cann9"
SIGMOID = CORPUS / "tilelang_sigmoid_trace_data"

# capture, folder, op (None: the msOpProf folder), hand label, advisor file, advisor verdict,
# MindStudio file, MindStudio verdict
ROWS = [
    ("ascendc add", CANN9 / "ascendc_b1", "add_kernel", "launch_bound",
     "ascendc_add.txt", "Operator Dynamic Shape Issues", "ascendc_add.json", "无 bound"),
    ("aclnnAdd", CANN9 / "torch_b1", "aclnnAdd_AddAiCore_Add", "launch_bound",
     "torch_add.txt", "Operator Dynamic Shape Issues", "torch_add.json", "无 bound"),
    ("pypto add", CANN9 / "pypto_b1", "PYPTO_add_binary_kernel", "scalar_bound",
     "pypto_add.txt", "Operator Dynamic Shape Issues", "pypto_add.json", "LATENCY/SYNC 可疑"),
    ("tilelang sigmoid op_summary.csv", SIGMOID, "main_kernel", "mte2_bound",
     "sigmoid_as_committed.txt", "no optimization suggestions", "sigmoid_opsummary.json", "SCALAR BOUND"),
    ("tilelang sigmoid msOpProf", SIGMOID, None, "vector_bound",
     None, None, "sigmoid_pipeutil.json", "LATENCY/SYNC 可疑"),
    ("msinsight FlashAttentionScore", CORPUS / "msinsight_kernel_parse", "FlashAttentionScore", "insufficient_evidence",
     "kernel_parse_renamed.txt", "AICPU Issues", "kernel_parse.json", "LATENCY/SYNC 可疑"),
    ("msinsight trans_Cast_5", CORPUS / "msinsight_kernel_parse", "trans_Cast_5", "aicpu_bound",
     "kernel_parse_renamed.txt", "AICPU Issues", "kernel_parse.json", "LATENCY/SYNC 可疑"),
]


@pytest.fixture(scope="module")
def reports() -> dict[Path, dict]:
    out = {}
    for folder in dict.fromkeys(row[1] for row in ROWS):
        prof = next(folder.glob("PROF_*"), folder)
        proc = call_script("profiler_inspect.py", prof, "--json")
        assert proc.returncode == 0, proc.stderr
        out[folder] = json.loads(proc.stdout)
    return out


def diagnosis_of(report: dict, op: str | None) -> dict:
    if op is None:
        (item,) = report["msopprof_diagnoses"]
        return item["diagnosis"]
    (item,) = [o for o in report["ops"] if o["exact_op_name"] == op]
    return item["diagnosis"]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_project_label_is_the_hand_reading_and_has_a_next_step(reports, row):
    found = diagnosis_of(reports[row[1]], row[2])
    assert found["label"] == row[3], found["rule"]
    assert found["next"]["families"] and "cases.py" in found["next"]["command"]


def test_the_figures_that_decided_each_label(reports):
    add = diagnosis_of(reports[CANN9 / "ascendc_b1"], "add_kernel")
    assert (add["rule_id"], add["side"], add["figures"]["launches"]) == ("D6", "aiv", 10)
    assert add["figures"]["duration_us"]["median"] == pytest.approx(9.8)
    assert add["figures"]["ratios"]["aiv_mte2_ratio"]["median"] == pytest.approx(0.689)   # highest, not > 0.7
    assert add["figures"]["vec_mte2_mte3_sum"] == pytest.approx(0.0375 + 0.689 + 0.14)      # 0.8665 < 0.9
    assert add["figures"]["occupancy"]["reason"] == "blocks not written (0 or N/A)"        # Block Num 0 in CANN 9
    torch = diagnosis_of(reports[CANN9 / "torch_b1"], "aclnnAdd_AddAiCore_Add")
    assert torch["figures"]["duration_us"]["median"] == pytest.approx(2.77)
    assert torch["figures"]["ratios"]["aiv_scalar_ratio"]["median"] == pytest.approx(0.5465)
    pypto = diagnosis_of(reports[CANN9 / "pypto_b1"], "PYPTO_add_binary_kernel")
    assert (pypto["rule_id"], pypto["side"], pypto["figures"]["launches"]) == ("D4", "aic", 10)   # control rows not counted
    assert pypto["figures"]["ratios"]["aic_scalar_ratio"]["median"] == pytest.approx(0.9845)
    assert pypto["figures"]["duration_us"]["median"] == pytest.approx(47.9205)


def test_the_idle_side_of_a_vector_kernel_never_decides(reports):
    sig = diagnosis_of(reports[SIGMOID], "main_kernel")
    assert (sig["side"], sig["rule_id"], sig["figures"]["launches"]) == ("aiv", "D4", 11)
    ratios = {c: v["median"] for c, v in sig["figures"]["ratios"].items()}
    assert ratios == pytest.approx({"aiv_vec_ratio": 0.532, "aiv_mte2_ratio": 0.811, "aiv_mte3_ratio": 0.36,
                                    "aiv_scalar_ratio": 0.036})
    assert sig["other_side"]["side"] == "aic"
    assert sig["other_side"]["ratios"]["aic_scalar_ratio"]["median"] == pytest.approx(0.873)   # MindStudio's "SCALAR"
    assert sig["figures"]["duration_us"]["median"] == pytest.approx(226.62)
    assert sig["figures"]["occupancy"]["blocks"] == 192            # MIX_AIC: the vector side's Mix Block Num
    block = diagnosis_of(reports[SIGMOID], None)
    assert (block["side"], block["rule_id"]) == ("aiv", "D4")
    assert block["figures"]["ratios"]["aiv_vec_ratio"]["median"] == pytest.approx(0.820387, abs=1e-6)
    assert block["figures"]["block_spread"]["spread"] == pytest.approx(0.037834, abs=1e-6)


def test_recorded_peer_verdicts_are_what_the_table_says():
    for row in ROWS:
        if row[4]:
            text = (PEERS / "msprof_analyze_advisor" / row[4]).read_text(encoding="utf-8")
            categories = re.findall(r"^\| \d+\s+\| ([^|]+?)\s+\|", text, re.M)
            assert row[5] in categories or row[5] in text, (row[0], categories)
        verdict = json.loads((PEERS / "mindstudio_bound_analyzer" / row[6]).read_text(encoding="utf-8"))["bound"]
        assert verdict == row[7], row[0]
    renamed = (PEERS / "msprof_analyze_advisor" / "sigmoid_renamed.txt").read_text(encoding="utf-8")
    assert "Found all operators are dynamic shape" in renamed      # OP State N/A read as dynamic shape


def test_docs_table_states_the_same_rows():
    text = (ROOT / "docs" / "ascend-stage5.md").read_text(encoding="utf-8")
    section = text.split("### Side by side", 1)[1].split("\n#", 1)[0]
    rows = [[c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ") and not line.startswith("| capture")]
    table = {r[0]: r for r in rows}
    for row in ROWS:
        assert row[0] in table, row[0]
        cells = table[row[0]]
        assert cells[1] == row[3] and cells[4].startswith(row[3]), cells          # project label = hand reading
        assert (row[5] or "not read") in cells[2] and row[7] in cells[3], cells
