"""Gates: items enumerated from the shipped references carry their gates; not_applicable names one."""

import json
import shutil
import re

from conftest import ROOT, assert_one_line_error, freeze_example, run_script
from perftune.contract import schemas
from perftune.decide import ledger_sources

REFS = ROOT / "skills" / "pypto-pro-op-perf-tune" / "references"


def test_gates_are_parsed_from_markdown_bullets_and_template_headers():
    md = "# x\n\n## Gates\n- **platform**: 950 only\n- **bound**: wait\n- **other**: ignored\n\n## Action\n- **dtype**: no\n"
    assert ledger_sources.parse_gates(md) == (("platform", "950 only"), ("bound", "wait"))
    tmpl = "# template-x: y\n# Gates: platform=950; dtype=any;\n#        shape=s; bound=wait.\n# Source: a/b:c\nimport x\n"
    assert ledger_sources.parse_gates(tmpl) == (("platform", "950"), ("dtype", "any"), ("shape", "s"), ("bound", "wait"))
    assert ledger_sources.parse_gates("# general-01\nno gates here\n") == ()


def test_not_applicable_needs_a_gate_reference(op_dir):
    freeze_example(op_dir)
    proc = run_script("ledger.py", "init", "--op-dir", str(op_dir), "--sources-dir", str(REFS), "--json")
    assert proc.returncode == 0, proc.stderr
    led = json.loads((op_dir / "docs/perf/ledger.json").read_text())
    schemas.validate(led, "ledger")
    presets = [i for i in led["items"] if i["source_kind"] != "kb_selected"]
    assert len(presets) == 31 + 19 + 6 and all(set(ledger_sources.GATE_KEYS) <= set(i["gates"]) <= set(
        ledger_sources.GATE_KEYS + ledger_sources.OPTIONAL_GATE_KEYS) for i in presets)
    base = ["ledger.py", "update", "--op-dir", str(op_dir), "--item", "card-cube-01", "--status", "not_applicable",
            "--note", "softmax has no matmul", "--applicability", "not_applicable"]
    assert_one_line_error(run_script(*base, "--grounds", "no cube work in this operator"), 2, "gate:platform")
    proc = run_script(*base, "--grounds", "gate:shape — softmax has no matmul operands")
    assert proc.returncode == 0, proc.stderr
    item = next(i for i in json.loads((op_dir / "docs/perf/ledger.json").read_text())["items"]
                if i["item_id"] == "card-cube-01")
    assert item["status"] == "not_applicable" and item["gates"]["platform"].startswith("Ascend 950PR/950DT")


def test_close_gated_closes_every_item_whose_recorded_gate_fails_in_one_command(op_dir):
    """#27 Deliver 3: on cpu every Ascend-only item closes as not_applicable with its gate as grounds; the
    operator-independent ones stay for the agent's judgement."""
    freeze_example(op_dir)
    assert run_script("ledger.py", "init", "--op-dir", str(op_dir), "--sources-dir", str(REFS)).returncode == 0
    before = json.loads((op_dir / "docs/perf/ledger.json").read_text())
    proc = run_script("ledger.py", "close-gated", "--op-dir", str(op_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    led = json.loads(proc.stdout)
    schemas.validate(led, "ledger")
    gates = {i["item_id"]: i.get("gates", {}) for i in before["items"]}
    closed = [i for i in led["items"] if i["status"] == "not_applicable"]
    ascend = [k for k, g in gates.items() if any(w in g.get("platform", "") for w in ("Ascend", "950", "cube"))]
    # #38 Deliver 5: the general methods whose mechanism a numpy stand-in does not have (cores, blocks, pipes,
    # sync, scalar unit, device tasks, on-chip buffers, GM transfers, load layouts) close by backend as well
    no_cpu = [f"general-{n:02d}" for n in (4, 5, 10, 11, 14, 16, 17, 18, 20)]
    assert sorted(i["item_id"] for i in closed) == sorted(ascend + no_cpu) and len(closed) >= 39
    grounds = {i["item_id"]: i["applicability"]["grounds"] for i in closed}
    assert all(grounds[k].startswith("gate:platform — the frozen backend is cpu") for k in ascend)
    assert all(grounds[k].startswith("gate:backend — the frozen backend is cpu; the item: not cpu") for k in no_cpu)
    still = [i for i in led["items"] if i["status"] == "pending" and i["source_kind"] != "kb_selected"]
    assert still and all(gates[i["item_id"]]["platform"].startswith(("any (operator", "PyPTO")) for i in still)
    # idempotent: a second run closes nothing more
    again = json.loads(run_script("ledger.py", "close-gated", "--op-dir", str(op_dir), "--json").stdout)
    assert [i["status"] for i in again["items"]] == [i["status"] for i in led["items"]]


def test_a_dtype_list_gate_fails_only_when_no_frozen_case_has_the_dtype(op_dir):
    from perftune.contract import manifest
    from perftune.decide import ledger_gates
    freeze_example(op_dir)
    man = manifest.load_manifest(op_dir / "PERFORMANCE_CASES.json")   # float32 and float16 cases
    assert ledger_gates.failed_gate({"platform": "any (operator-independent)", "dtype": "FP16/BF16"}, man) is None
    assert ledger_gates.failed_gate({"dtype": "BF16"}, man)[0] == "dtype"
    assert ledger_gates.failed_gate({"dtype": "dtypes supported by the vf.* ops used"}, man) is None


def _profile(op_dir, name, statuses):
    path = op_dir / "docs/perf/bottleneck" / f"terminal_evidence_{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cases": [{"case": c, "roofline_terminal": {"status": s}} for c, s in statuses]}))


def test_a_bound_gate_closes_only_once_profiled_and_only_when_every_case_contradicts_it(op_dir):
    """#27 Deliver 3: a plain bound-label gate (general-03: data_movement_candidate) closes not_applicable
    when every case of the newest step-11 profile has a bound that does not satisfy it; nothing before a
    profile, nothing when one case is undecided or satisfies it, never a qualified gate or an item under
    experiment."""
    from perftune.contract import manifest
    from perftune.decide import ledger_gates
    freeze_example(op_dir)
    assert run_script("ledger.py", "init", "--op-dir", str(op_dir), "--sources-dir", str(REFS)).returncode == 0
    gated = json.loads(run_script("ledger.py", "close-gated", "--op-dir", str(op_dir), "--json").stdout)
    pending = {i["item_id"] for i in gated["items"] if i["status"] == "pending"}
    assert {"general-03", "general-07", "general-01"} <= pending           # no bound evidence yet: all stay
    _profile(op_dir, "round_001", [("a", "compute_bound"), ("b", "unattributed_residual")])
    led = json.loads(run_script("ledger.py", "close-gated", "--op-dir", str(op_dir), "--json").stdout)
    assert {i["item_id"] for i in led["items"] if i["status"] == "pending"} == pending   # b decides nothing
    _profile(op_dir, "round_002", [("a", "compute_bound"), ("b", "balanced_compute_movement")])
    proc = run_script("ledger.py", "close-gated", "--op-dir", str(op_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    led = json.loads(proc.stdout)
    schemas.validate(led, "ledger")
    status = {i["item_id"]: i for i in led["items"]}
    closed = {k for k in pending if status[k]["status"] == "not_applicable"}
    # balanced satisfies data movement and compute: only the scalar-only gates fail
    assert {"general-01", "general-02"} <= closed and not closed & {"general-03", "general-07"}
    grounds = status["general-01"]["applicability"]["grounds"]
    assert grounds.startswith("gate:bound — every case of docs/perf/bottleneck/terminal_evidence_round_002.json")
    man = manifest.load_manifest(op_dir / "PERFORMANCE_CASES.json")
    bounds = {"file": "p.json", "cases": {"a": "data_movement_bound"}}
    assert ledger_gates.failed_gate({"bound": "compute_candidate"}, man, bounds)[0] == "bound"
    assert ledger_gates.failed_gate({"bound": "compute_candidate or data_movement_candidate"}, man, bounds) is None
    assert ledger_gates.failed_gate({"bound": "compute_candidate on aiv"}, man, bounds) is None   # qualified
    item = {"item_id": "x", "status": "pending", "source_kind": "general_method", "gates": {"bound": "compute_candidate"}}
    assert ledger_gates.gate_failures({"items": [item]}, man, bounds)
    assert not ledger_gates.gate_failures({"items": [{**item, "hypothesis": "under way"}]}, man, bounds)
def _pypto_sim_ledger(tmp_path, arch):
    """examples/pypto_softmax frozen on pypto-sim (chip ``arch``) with the plugin's references as sources."""
    import shutil
    op = tmp_path / arch / "pypto_softmax"
    shutil.copytree(ROOT / "examples" / "pypto_softmax", op, ignore=shutil.ignore_patterns("__pycache__", "docs",
                                                                                          "variants"))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "r512_c1024_fp32",
                      "--selection-mode", "user_selected", "--backend", "pypto-sim", "--sim-arch", arch,
                      "--op-name", "pypto_softmax_kernel", "--warmup", "0", "--repeats", "2")
    return op, proc


def test_on_pypto_sim_close_gated_leaves_only_what_a_simulated_kernel_can_apply(tmp_path):
    """#30 Deliver 5: on pypto-sim every PyPTO-Pro card and template and the scheduler/sync methods close
    by their backend gate (A2A3 and A5 alike; on A2A3 the 950-only cards close by platform first); the
    tile-, loop- and fusion-level methods and cards stay: 56 presets -> 16 pending (A2A3), 21 (A5)."""
    import importlib.util
    from perftune.decide import ledger_gates
    for arch in ("A2A3", "A5"):
        op, proc = _pypto_sim_ledger(tmp_path, arch)
        if importlib.util.find_spec("pypto") is None:   # without the extra the freeze stops with the install line
            assert_one_line_error(proc, 3, "pypto is not installed")
            return
        assert proc.returncode == 0, proc.stderr
        assert run_script("ledger.py", "init", "--op-dir", op, "--sources-dir", REFS).returncode == 0
        before = json.loads((op / "docs/perf/ledger.json").read_text())
        proc = run_script("ledger.py", "close-gated", "--op-dir", op, "--json")
        assert proc.returncode == 0, proc.stderr
        led = json.loads(proc.stdout)
        schemas.validate(led, "ledger")
        presets = [i for i in before["items"] if i["source_kind"] != "kb_selected"]
        closed = {i["item_id"]: i["applicability"]["grounds"] for i in led["items"] if i["status"] == "not_applicable"}
        pending = sorted(i["item_id"] for i in led["items"] if i["status"] == "pending" and i["source_kind"] != "kb_selected")
        assert len(presets) == 56 and len(closed) + len(pending) == 56
        general = [f"general-{n:02d}" for n in (1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 15, 16, 17, 19, 20)]   # not cpu: pending here
        tile_cards = ["card-cross-04", "card-mem-02", "card-mem-03", "card-vec-01", "card-vec-07"]  # 950: not on A2A3
        assert pending == sorted(["card-cube-07", *general, *(tile_cards if arch == "A5" else [])])
        by_backend = {k for k, g in closed.items() if g.startswith("gate:backend — the frozen backend is pypto-sim")}
        by_chip = {k for k, g in closed.items() if g.startswith("gate:platform — the frozen simulator chip is A2A3")}
        assert by_backend | by_chip == set(closed) and (arch == "A2A3" or not by_chip)
        assert all(i["item_id"] in closed for i in presets if i["source_kind"] == "template")
    man = __import__("perftune.contract.manifest", fromlist=["x"]).load_manifest(op / "PERFORMANCE_CASES.json")
    assert ledger_gates.failed_gate({"backend": "not msprof (a card-only counter)"}, man) is None
    assert ledger_gates.failed_gate({"backend": "not cpu/pypto-sim (why)"}, man)[0] == "backend"


def _occupancy_profile(op_dir, name, cases):
    """A step-11 profile whose cases carry the diagnosis' occupancy (``{case: (limited, spread)}``)."""
    def case(c, limited, spread):
        occ = {"decided": True, "limited": limited, "reason": f"{c}: 96 blocks on 48 aiv cores" +
               (" = 3 waves, wave efficiency 0.67 < 0.8" if limited else " = 2 waves, wave efficiency 1.00 >= 0.8")}
        block = {"spread": spread, "severe": spread > 0.3, "what": "aiv_time(us) per block"} if spread else None
        return {"case": c, "roofline_terminal": {"status": "compute_bound"},
                "profiler": {"diagnosis": {"figures": {"occupancy": occ, "block_spread": block}}}}
    path = op_dir / "docs/perf/bottleneck" / f"terminal_evidence_{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cases": [case(c, *v) for c, v in cases.items()]}))


def test_an_occupancy_gate_closes_the_block_dim_methods_only_when_no_case_is_limited(op_dir):
    """#37 Deliver 2: general-04 / general-14 (imbalance, tail) need an occupancy-limited case; a profile whose
    every case fills the cores with an even spread closes them; one limited or severe case keeps them."""
    freeze_example(op_dir)
    # the example is frozen on cpu, where general-04/14 close by their backend gate first (#38 Deliver 5):
    # the operator's own sources, with that gate naming pypto-sim only, keep the occupancy gate the decider
    sources = op_dir / "occupancy_sources"
    shutil.copytree(REFS, sources)
    for name in ("general-04", "general-14"):
        path = sources / "general-methods" / f"{name}.md"
        path.write_text(re.sub(r"^- \*\*backend\*\*: not cpu/pypto-sim .*$", "- **backend**: not pypto-sim (why)",
                               path.read_text(), flags=re.M))
    assert run_script("ledger.py", "init", "--op-dir", str(op_dir), "--sources-dir", str(sources)).returncode == 0
    gated = {"general-04", "general-14"}

    def pending(name, cases):
        _occupancy_profile(op_dir, name, cases)
        proc = run_script("ledger.py", "close-gated", "--op-dir", str(op_dir), "--json")
        assert proc.returncode == 0, proc.stderr
        return {i["item_id"]: i for i in json.loads(proc.stdout)["items"] if i["item_id"] in gated}

    items = pending("round_001", {"a": (False, 0.05), "b": (False, 0.45)})        # b: per-block spread 45 %
    assert {k for k, i in items.items() if i["status"] == "pending"} == gated
    items = pending("round_002", {"a": (True, None), "b": (False, None)})          # a: a short last wave
    assert {k for k, i in items.items() if i["status"] == "pending"} == gated
    items = pending("round_003", {"a": (False, 0.05), "b": (False, None)})
    assert {i["status"] for i in items.values()} == {"not_applicable"}
    grounds = items["general-04"]["applicability"]["grounds"]
    assert grounds.startswith("gate:occupancy — no case of docs/perf/bottleneck/terminal_evidence_round_003.json")
