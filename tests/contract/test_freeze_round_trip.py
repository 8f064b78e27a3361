"""Values round-trip at freeze (#27 Deliver 5): `--target-case-ids all_p0` as operator-format.md writes it, and
`--noise-band-reason` frozen with a widened band."""

import json

from conftest import run_script


def freeze(op, *extra):
    return run_script("freeze_cases.py", "freeze", "--op-dir", op, "--selection-mode", "all_p0_no_questions",
                      "--backend", "cpu", "--op-name", "softmax_kernel", "--json", *extra)


def test_all_p0_freezes_every_p0_case_and_the_band_reason_is_frozen(op_dir):
    proc = freeze(op_dir, "--target-case-ids", "all_p0", "--noise-band", "0.05", "--noise-band-reason",
                  "shared 2-core host: unpaired rounds drift by a few per cent")
    assert proc.returncode == 0, proc.stderr
    man = json.loads((op_dir / "PERFORMANCE_CASES.json").read_text())
    p0 = [c["id"] for c in man["cases"] if c.get("p0", True)]
    assert man["optimization_target"]["case_ids"] == p0 and len(p0) >= 2
    assert man["protocol"]["decision"]["noise_band_reason"].startswith("shared 2-core host")


def test_without_a_reason_the_decision_block_is_unchanged(op_dir):
    proc = freeze(op_dir, "--target-case-ids", "all_p0")
    assert proc.returncode == 0, proc.stderr
    assert "noise_band_reason" not in json.loads((op_dir / "PERFORMANCE_CASES.json").read_text())["protocol"]["decision"]
