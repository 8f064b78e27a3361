"""Input attestation: inputs and outputs of the op call told apart by their digests."""

from __future__ import annotations

import json

import numpy as np

from conftest import freeze_example, run_script
from perftune.measure import attestation, correctness


def kernel(x, out):
    out[...] = x * 2


def test_written_arguments_are_outputs_and_the_rest_inputs():
    x, out = np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((2, 3), np.float32)
    pre = attestation.before((x, out), {"scale": 2})
    kernel(x, out)
    record = attestation.after(pre, (x, out), {"scale": 2}, None, "wrapper")
    assert [i["arg"] for i in record["inputs"]] == ["0", "scale"] and [o["arg"] for o in record["outputs"]] == ["1"]
    first = record["inputs"][0]
    assert (first["shape"], first["dtype"], first["contiguous"]) == ([2, 3], "float32", True)
    assert attestation.input_key(record) == [((2, 3), "float32", first["sha256"])]
    other = attestation.describe(x.T, "0")
    assert other["contiguous"] is False and other["sha256"] != first["sha256"]


def test_formal_round_and_correctness_record_what_the_op_received(op_dir):
    freeze_example(op_dir, repeats=2, warmup=0)
    proc = run_script("collect_perf.py", "formal", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    found = sorted((op_dir / "docs/perf/round_001").rglob("attestation.json"))
    assert len(found) == 8
    record = json.loads(found[0].read_text())
    assert record["caller"] == "softmax_wrapper" and len(record["inputs"]) == 1 and len(record["outputs"]) == 1
    _, run = correctness.run_all(op_dir, at="2026-01-01T00:00:00Z")
    probe = run["cases"][0]["probe"]
    assert probe["applied_gate"] == {"atol": [1e-6], "rtol": [1e-5], "min_matched": [0.999]}
    assert probe["measured"]["meets_frozen_gate"] and all(p["meets_frozen_gate"] for p in probe["probes"])
    assert [p["seed"] for p in probe["probes"]] == [4243, 4244]
