"""The next SKILL.md step from the evidence on disk: the procedure's state has one owner (#27).

:func:`next_steps` reads the operator folder (manifest, correctness runs, rounds, quick screens,
ledger, candidates, selection, confirm log, the final files) and returns the step(s) to run next:
each a SKILL step key with every value the evidence fixes (``values``) and, where the step needs the
agent's judgement, ``needs``: placeholder → what is needed and the allowed values. It never decides
what a frozen rule decides: the item decision is the formal compare's ``item_acceptance``, the
promotion is the quick compare's ``promotion.promote``, the confirm end is confirm's ``verdict``.
``scripts/perf_next.py`` renders the commands from SKILL.md's step blocks; the demo runs on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from . import candidates, ledger as ledger_mod, ledger_gates, search as search_mod, way_forward
from .. import fsio
from ..contract import manifest as manifest_mod, protocol
from ..errors import ContractError
from ..measure import backends, correctness, evidence

PERF = protocol.PERF_DIR
BOTTLENECK_DIR = f"{PERF}/bottleneck"   # step 11's profiles: terminal_evidence_<round>.json
# standalone use (no dispatch): the documented default target (SKILL "Reads and freezes")
STANDALONE_TARGET = {"TARGET_IDS": "all_p0", "SELECTION_MODE": "all_p0_no_questions"}
# closing without an experiment, by source kind (docs/ledger.md)
CLOSE_STATUSES = {"kb_selected": ("already_implemented", "not_triggered"), "other": ("not_applicable", "unsupported")}
FINAL_KEYS = ("final_compare", "terminal", "report", "verify")   # steps that take the final steps' values
CHOICES = ("hypothesis", "bottleneck_profile", "derived_add")   # a first step of these: the listed steps are alternatives
# what the chosen version's final files describe besides performance.json: a later change makes them stale
FINAL_INPUTS = (f"{PERF}/{protocol.LEDGER_NAME}", f"{PERF}/{protocol.CANDIDATES_NAME}", f"{PERF}/confirm.json")


@dataclass
class State:
    """What the evidence says (gathered once; the decision below is pure over it)."""

    op: Path
    man: Any = None
    code_sha: str = ""
    runs: list[dict] = field(default_factory=list)          # correctness records, oldest first
    rounds: list[dict] = field(default_factory=list)        # complete formal rounds: name, id, sha, partner sha
    quicks: list[dict] = field(default_factory=list)        # complete quick screens: name, id, sha, compare
    ledger: dict | None = None
    register: list[dict] = field(default_factory=list)      # candidates.json entries
    selection: dict | None = None
    confirm: list[dict] = field(default_factory=list)
    perf: dict | None = None
    files: dict[str, float] = field(default_factory=dict)   # final files -> mtime
    register_sha: str | None = None                           # sha256 of candidates.json


def _json(path: Path) -> Any:
    return fsio.read_json(path, what=path.name) if path.is_file() else None


def gather(op_dir: str | Path) -> State:
    root = Path(op_dir)
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "is not a directory", "pass the operator directory")
    st = State(root)
    path = root / protocol.MANIFEST_NAME
    st.man = manifest_mod.load_manifest(path) if path.is_file() else None
    st.code_sha = evidence.executable_sha256(root, evidence.source_files(root, st.man))
    runs_dir = correctness.runs_dir(root)
    st.runs = [fsio.read_json(p, what="correctness run") for p in sorted(runs_dir.glob("c*.json"))] \
        if runs_dir.is_dir() else []
    for row in evidence.list_rounds(root):
        if row["status"] == "complete" and row["mode"] == "compare":
            col = fsio.read_json(row["path"] / evidence.COLLECTION_JSON, what="collection.json")
            st.rounds.append({"name": row["name"], "id": row["collection_id"], "sha": col["executable_sha256"],
                              "partner": (col.get("paired") or {}).get("baseline_executable_sha256")})
    quick_root = root / PERF / evidence.QUICK_DIR
    for folder in sorted(quick_root.glob(f"{evidence.QUICK_PREFIX}*")) if quick_root.is_dir() else []:
        quick = _json(folder / protocol.QUICK_NAME) or {}
        if quick.get("status") == "complete":
            st.quicks.append({"name": folder.name, "id": quick["collection_id"], "sha": quick["executable_sha256"],
                              "compare": _json(folder / "quick_compare.json"),
                              "partner": (quick.get("paired") or {}).get("baseline_executable_sha256")})
    led = root / PERF / protocol.LEDGER_NAME
    st.ledger = ledger_mod.load_ledger(led) if led.is_file() else None
    st.register = (_json(root / PERF / protocol.CANDIDATES_NAME) or {}).get("candidates", [])
    if (root / PERF / protocol.CANDIDATES_NAME).is_file():
        st.register_sha = fsio.sha256_file(root / PERF / protocol.CANDIDATES_NAME)
    st.selection = _json(root / PERF / protocol.SELECTION_NAME)
    st.confirm = (_json(root / PERF / "confirm.json") or {}).get("attempts", [])
    st.perf = _json(root / protocol.PERFORMANCE_JSON)
    for name in ("docs/perf/terminal_evidence.json", protocol.PERFORMANCE_REPORT_MD, "docs/perf/stage5_check.json",
                 f"{PERF}/{protocol.SELECTION_NAME}", "docs/perf/platform_cpu.json", protocol.PERFORMANCE_JSON,
                 protocol.GOLDEN_REPORT_NAME, *FINAL_INPUTS):
        if (root / name).is_file():
            st.files[name] = (root / name).stat().st_mtime
    return st


def step(key: str, why: str, values: dict[str, Any] | None = None, needs: dict[str, str] | None = None) -> dict:
    return {"key": key, "why": why, "values": values or {}, "needs": needs or {}}


def _run(st: State, sha: str) -> dict | None:
    found = [r for r in st.runs if r.get("executable_sha256") == sha]
    return found[-1] if found else None


def _after(record: dict | None, mtime: float | None) -> bool:
    if record is None or mtime is None:
        return False
    return datetime.fromisoformat(record["created_at"].replace("Z", "+00:00")).timestamp() >= int(mtime)


def _bands() -> str:
    return ", ".join(f"{b} {v:g}" for b, v in protocol.NOISE_BAND_BY_BACKEND.items())


def prepare(st: State) -> list[dict] | None:
    """SKILL steps 1-10 (None once they are done)."""
    run = _run(st, st.code_sha)
    if st.man is None:
        if run is None:
            return [step("correctness", "no correctness run of the code in place")]
        if not run["all_passed"]:
            return [step("stop", "the unchanged code fails its own tests: Stage 4 work, not Stage 5")]
        return [step("freeze", "no PERFORMANCE_CASES.json", {"DEVICE": "0"}, {
            "WARMUP": f"the backend's default: {backends.defaults_text('default_warmup')}",
            "REPEATS": f"the backend's default: {backends.defaults_text('default_repeats')}",
            "NOISE_BAND": "default by backend, the band its confirm "
            f"step can confirm: {_bands()} (docs/statistics.md; widen only before any result, with --noise-band-reason)",
            "TARGET_IDS": "the dispatch's optimization_target.case_ids verbatim; standalone (no dispatch): all_p0",
            "SELECTION_MODE": "the dispatch's selection_mode; standalone: all_p0_no_questions",
            "BACKEND": "cpu | msprof | pypto-sim", "OP_NAME": "cpu and pypto-sim: the kernel function "
            "test_<op>.py's wrapper launches once per call; msprof: the Op Name from discovery"})]
    name = st.op.name
    proto = st.man.protocol
    frozen = {"DEVICE": str(proto.device_id), "WARMUP": str(proto.warmup), "REPEATS": str(proto.repeats),
              "BACKEND": proto.backend}
    if protocol.GOLDEN_REPORT_NAME not in st.files:
        return [step("golden", "no GOLDEN_PERF_REPORT.json", {**frozen, "GOLDEN_FILE": f"{st.op}/{name}_golden.py",
                                                               "GOLDEN_FUNCTION": f"{name}_golden",
                                                               "GOLDEN_FACTORY": "golden_cases"},
                     {"GOLDEN_FUNCTION": f"the golden file's reference function (default {name}_golden)",
                      "GOLDEN_FACTORY": "the golden file's case factory (default golden_cases)"})]
    if proto.backend == "cpu" and "docs/perf/platform_cpu.json" not in st.files:
        return [step("platform", "cpu: no platform roof of this host")]
    if not st.rounds:
        return [step("preflight", "no formal round yet"), step("baseline", "the formal baseline v000")]
    base = st.rounds[0]
    if not st.register and st.code_sha != base["sha"]:
        return [step("stop", f"the code in place is not the baseline round {base['name']}'s code and no version is "
                     "recorded yet to restore: put the baseline code back")]
    if st.ledger is None:
        # no --sources-dir: ledger.py takes the operator's own sources/, else the plugin's references
        return [step("ledger_init", "no ledger", {"SOURCES_DIR": None}),
                step("ledger_show", "read and order the enumerated items (SKILL step 8)")]
    failing = ledger_gates.gate_failures(st.ledger, st.man, ledger_gates.bound_evidence(st.op))
    if failing:
        return [step("close_gated", f"{len(failing)} item(s) whose recorded gate fails here: "
                     + ", ".join(f"{r['item_id']} (gate:{r['gate']})" for r in failing))]
    if not st.register:
        open_kb = _open(st, ("kb_selected",))
        if open_kb:
            return [_close_preset(st, open_kb, base)]
        run = _run(st, base["sha"])
        if run is None:
            return [step("correctness", "the baseline code has no correctness run")]
        return [step("record_baseline", "v000 is not recorded", {"BASELINE_ROUND": base["name"],
                     "RUN_ID": run["run_id"]}, {"COMPLIANCE": "one line: one kernel, one launch, wrapper contract"})]
    return None


def _open(st: State, kinds: tuple[str, ...]) -> list[dict]:
    return [i for i in st.ledger["items"] if i["source_kind"] in kinds and not ledger_mod.is_terminal(i["status"])]


def _close_preset(st: State, items: list[dict], base: dict) -> dict:
    item = items[0]
    gates = ", ".join(f"gate:{k} ({v})" for k, v in (item.get("gates") or {}).items()) or "none recorded"
    run = _run(st, base["sha"])
    return step("close_preset", f"{len(items)} open item(s); next in source order: {item['item_id']}",
                {"ITEM_ID": item["item_id"], "CODE_REF": _test_file(st),
                 "RUN_ID": run and run["run_id"], "BASELINE_COLLECTION": base["id"]},
                {"STATUS": " | ".join(CLOSE_STATUSES["kb_selected" if item["source_kind"] == "kb_selected" else "other"])
                 + " (or start an experiment: step hypothesis)",
                 "APPLICABILITY": " | ".join(ledger_mod.APPLICABILITY), "GROUNDS": f"why; recorded gates: {gates}",
                 "NOTE": "the evidence-based conclusion"})


def _test_file(st: State) -> str:
    return correctness.test_module(st.op).name


def _best(st: State) -> dict:
    """The last recorded version that links no rejected item (a stage5_check FAIL rejects one)."""
    items = (st.ledger or {}).get("items", [])
    best = next(c for c in reversed(st.register) if not candidates.rejected_items(c, items))
    rnd = next(r for r in st.rounds if r["id"] == best["formal_collection_id"])
    return {"version": best["version_id"], "sha": best["executable_sha256"], "round": rnd["name"], "id": rnd["id"]}


def _best_values(b: dict) -> dict[str, str]:
    return {"BEST_VERSION": b["version"], "BEST_ROUND": b["round"], "BEST_COLLECTION": b["id"]}


def explore(st: State, overlap: str | None = None) -> list[dict] | None:
    """SKILL steps 11-20: one item per experiment (None once every item is closed and the sweep recorded)."""
    b = _best(st)
    under = [i for i in _open(st, protocol.SOURCE_KINDS) if i.get("hypothesis")]
    if not under and sweep_fresh(st.ledger) and not _open(st, protocol.SOURCE_KINDS):
        return None      # the loop is over: the finish puts the chosen version in place
    accepted = under and next((c for c in st.register if under[0]["item_id"] in (c.get("items") or [])), None)
    if accepted:   # accepted and recorded: it is the best now; close against the best before it
        return [_close_accepted(st, under[0], accepted)]
    known = {c["executable_sha256"] for c in st.register}
    if st.code_sha != b["sha"] and (not under or st.code_sha in known):   # never an edit of the item under work
        return [step("restore", f"the code in place is not the current best {b['version']}",
                     {"VERSION_ID": b["version"]})]
    if not under:
        presets = _open(st, protocol.PRESET_SOURCE_KINDS)
        if presets:
            if overlap is not None:
                return [_close_overlap(st, presets[0], overlap)]
            first = _close_preset(st, presets, st.rounds[0])
            ids = ", ".join(i["item_id"] for i in presets)
            done = ", ".join(i["item_id"] for i in _experimented(st))
            steps = [step("hypothesis", f"next item in source order: {presets[0]['item_id']} (or close it: "
                          "step close_preset)", {"ITEM_ID": presets[0]["item_id"]},
                          {"ITEM_ID": f"default: source order; open preset items: {ids}",
                           "HYPOTHESIS": "mechanism; change; risk; stop condition", "METRIC": "the expected metric"}),
                     first]
            if done:   # only with a closed experiment to name
                steps.append(step("overlap", f"or close {presets[0]['item_id']} as the overlap of a closed experiment",
                                  {}, {"OVERLAP_ITEM": f"the closed experiment it repeats: {done}"}))
            return steps
        if not sweep_fresh(st.ledger):
            profile = f"{BOTTLENECK_DIR}/terminal_evidence_{b['round']}.json"
            sweep = step("sweep", "or, with no derived item left, the final sweep", {"EXAMINED": _examined(st)},
                         {"SCOPE": "what was examined", "FINDINGS": "--finding TEXT MAPS_TO NOTE per residual"})
            if (st.op / profile).is_file():
                return [step("derived_add", f"the best {b['version']} is profiled ({profile}): register a "
                             "derived item on it (optional)", {"BEST_ROUND": b["round"]},
                             {"ITEM_ID": "a new item id", "TITLE": "one line", "METRIC": "the expected metric",
                              "HYPOTHESIS": "mechanism from the profile; change; risk; stop condition"}), sweep]
            return [step("bottleneck_profile", "every preset item is closed: profile the best for a derived item "
                         "(optional)", _best_values(b)), sweep]
        return None
    item = under[0]
    common = {"ITEM_ID": item["item_id"], **_best_values(b), "CODE_REF": _test_file(st)}
    record = search_mod.load_record(st.op, item["item_id"]) if item.get("search") else None
    if item.get("search") and (record or {}).get("status") != "complete":
        return [step("tune", f"{item['item_id']}: the frozen search is not measured", common)]
    if st.code_sha == b["sha"]:
        return [step("edit", f"{item['item_id']}: edit {_test_file(st)} from {b['version']} (one idea, S5-2), "
                     "then step correctness; or freeze a search over a parameter space (step tune_declare)", common, {"code edit": item.get("hypothesis") or ""})]
    run = _run(st, st.code_sha)
    if run is None:
        return [step("correctness", "the edited code has no correctness run")]
    common["RUN_ID"] = run["run_id"]
    rejected = {**common, "STATUS": "rejected", "RELATION": None, "QUICK_ID": None, "FORMAL_IDS": None,
                "HYPOTHESIS": item.get("hypothesis")}
    if not run["all_passed"]:
        failed = ", ".join(c.get("id", "?") for c in run.get("cases", []) if not c.get("passed", True)) or "see the run"
        return [step("close_item", "the edit fails a test", {**rejected, "REASON_CODE": "correctness_failed"},
                     {"NOTE": f"which test failed ({failed} in {run['run_id']})"})]
    quick = next((q for q in reversed(st.quicks) if q["sha"] == st.code_sha and q["partner"] == b["sha"]), None)
    if quick is None:
        return [step("quick", f"no quick screen of the edited code paired with {b['version']}", common)]
    rejected["QUICK_ID"] = quick["id"]
    qc = quick["compare"]
    if qc is None or qc["baseline_collection_id"] != b["id"]:
        return [step("quick_compare", "the screen is not compared with the best", {"QUICK_ID": quick["id"], **common})]
    promo = qc["promotion"]
    if not promo["promote"]:
        mean = promo["mean_case_speedup"]
        numbers = (f"quick mean speed-up {'n/a' if mean is None else f'{mean:.3f}'} vs {b['version']} (rule: "
                   f"{promo['rule']}, threshold {promo['threshold']}); slower target cases: "
                   f"{', '.join(promo['slower_target_cases']) or 'none'}")
        return [step("close_item", f"not promoted by the frozen rule ({promo.get('rule')})",
                     {**rejected, "REASON_CODE": "quick_not_promoted"}, {"NOTE": f"the screen's numbers: {numbers}"})]
    formal = next((r for r in reversed(st.rounds) if r["sha"] == st.code_sha and r["partner"] == b["sha"]), None)
    if formal is None:
        return [step("paired_formal", f"promoted: formal round paired with {b['version']}", common)]
    decided = (st.perf or {}).get("item_acceptance") if (st.perf or {}).get("final_collection_id") == formal["id"] \
        else None
    if decided is None:
        return [step("formal_compare", "the paired round is not compared", {**common, "ROUND": formal["name"]})]
    ids = [formal["id"], b["id"]]
    if decided["status"] != "accepted":
        return [step("close_item", f"decided {decided['status']}/{decided['reason_code']} by {decided['rule']}",
                     {**rejected, "FORMAL_IDS": ids, "REASON_CODE": decided["reason_code"]},
                     {"NOTE": decided["note"]})]
    return [step("record", "accepted: record the version", {**common, "ROUND": formal["name"]},
                 {"VERSION_ID": "a new version id", "COMPLIANCE": "one line"})]


def _close_accepted(st: State, item: dict, cand: dict) -> dict:
    before = st.register[st.register.index(cand) - 1]
    prev = {"version": before["version_id"], "round": before["round"], "id": before["formal_collection_id"]}
    run = _run(st, cand["executable_sha256"])
    quick = next((q for q in reversed(st.quicks) if q["sha"] == cand["executable_sha256"]), None)
    perf = st.perf or {}
    note = perf["item_acceptance"]["note"] if perf.get("final_collection_id") == cand["formal_collection_id"] \
        else f"accepted by the formal compare {cand['round']} vs {prev['round']}"
    return step("close_item", f"{item['item_id']}: accepted and recorded as {cand['version_id']}", {
        "ITEM_ID": item["item_id"], **_best_values(prev), "CODE_REF": f"{PERF}/versions/{cand['version_id']}",
        "STATUS": "accepted", "REASON_CODE": None, "RUN_ID": run and run["run_id"], "RELATION": None,
        "QUICK_ID": quick and quick["id"], "FORMAL_IDS": [cand["formal_collection_id"], prev["id"]],
        "HYPOTHESIS": item.get("hypothesis")}, {"NOTE": note})


def _experimented(st: State) -> list[dict]:
    return [i for i in st.ledger["items"] if ledger_mod.is_terminal(i["status"]) and i["evidence"].get("quick")]


def _close_overlap(st: State, item: dict, other_id: str) -> dict:
    """Close ``item`` with the status and evidence of the closed experiment ``other_id`` (SKILL step 20:
    an item whose experiment is another's); the agent's judgement is which item that is."""
    other = next((i for i in _experimented(st) if i["item_id"] == other_id), None)
    if other is None:
        raise ContractError(st.op / PERF / protocol.LEDGER_NAME, "--overlap", f"{other_id!r} is not a closed "
                            "item with an experiment", "name one: " + (", ".join(i["item_id"] for i in
                                                                            _experimented(st)) or "none yet"))
    ev = other["evidence"]
    return step("close_item", f"{item['item_id']}: the experiment of {other_id} ({other['status']})", {
        "ITEM_ID": item["item_id"], "STATUS": other["status"], "REASON_CODE": other.get("reason_code"),
        "RUN_ID": ev.get("correctness"), "QUICK_ID": ev.get("quick") or None, "FORMAL_IDS": ev.get("formal") or None,
        "CODE_REF": ev.get("code_ref"), "BEST_VERSION": ev.get("restore_point"), "HYPOTHESIS": ev.get("mechanism"),
        "RELATION": ["overlap", other_id]}, {"NOTE": f"why it is the same experiment; {other_id} concluded: "
                                             f"{other['history'][-1].get('note', '')}"})


def _examined(st: State) -> list[str]:
    profiles = sorted(p.relative_to(st.op).as_posix() for p in (st.op / BOTTLENECK_DIR).glob("*.json")) \
        if (st.op / BOTTLENECK_DIR).is_dir() else []
    return [f"{PERF}/{protocol.LEDGER_NAME}", f"{PERF}/{protocol.CANDIDATES_NAME}",
            *(f"{PERF}/{r['name']}" for r in st.rounds), *profiles]


def sweep_fresh(ledger: dict) -> bool:
    """The final sweep is recorded and no edit of the ledger came after it (docs/ledger.md)."""
    sweep = ledger.get("sweep")
    return sweep is not None and sweep.get("at_revision") == ledger.get("revision")


def _selection_stale(st: State) -> str | None:
    """Why selection.json does not rank what is recorded now (None: it does)."""
    if st.selection is None:
        return "no selection yet"
    if ((st.selection.get("inputs") or {}).get("candidates") or {}).get("sha256") != st.register_sha:
        return "selection.json ranks another candidates.json than the one recorded now"
    return None


def finish(st: State) -> list[dict]:
    """SKILL steps 21-31."""
    selected = st.files.get(f"{PERF}/{protocol.SELECTION_NAME}")
    stale = _selection_stale(st)
    if stale:
        return [step("ledger_check", "the sweep is recorded"), step("choose", stale)]
    chosen = st.selection["chosen"]
    cand = next(c for c in st.register if c["version_id"] == chosen)
    rejected = candidates.rejected_items(cand, st.ledger["items"]) if st.ledger else []
    if rejected:
        return [step("ledger_check", "the ledger is closed again"),
                step("choose", f"the chosen {chosen} links rejected {', '.join(rejected)}: choose again")]
    if st.code_sha != cand["executable_sha256"]:
        return [step("restore", f"the chosen {chosen} is not in place", {"VERSION_ID": chosen})]
    if not _after(_run(st, st.code_sha), selected):
        return [step("stage4", "chosen code in place: static gates"), step("correctness", "then step 1 on it")]
    partner = st.selection.get("confirm_partner")
    partner_sha = next((c["executable_sha256"] for c in st.register if c["version_id"] == partner), None)
    mine = [a for a in st.confirm if a.get("executable_sha256") == st.code_sha]
    used = {a["final_collection_id"] for a in mine}
    fresh = [r for r in st.rounds if r["sha"] == st.code_sha and r["partner"] == partner_sha and r["id"] not in used
             and r["id"] != cand["formal_collection_id"]]
    if not mine or mine[-1].get("verdict") == "remeasure":
        if not fresh:
            return [step("confirm_round", f"confirm paired with {partner}", {"CONFIRM_PARTNER": partner})]
        return [step("confirm", "the confirm round is not evaluated", {"CONFIRM_ROUND": fresh[-1]["name"]})]
    base_sha, base = st.register[0]["executable_sha256"], st.rounds[0]
    last = max(st.rounds.index(r) for r in st.rounds if r["id"] in used)
    final = [r for r in st.rounds[last + 1:] if r["sha"] == st.code_sha and r["partner"] == base_sha]
    if not final:
        return [step("final_formal", "no final round paired with v000 after confirm")]
    values = {"FINAL_ROUND": final[-1]["name"], "BASELINE_ROUND": base["name"],
              "TARGET_IDS": list(st.man.target_case_ids), "SELECTION_MODE": st.man.selection_mode}
    if (st.perf or {}).get("final_collection_id") != final[-1]["id"]:
        return [step("final_compare", "the final round is not compared", values)]
    newest = st.files[protocol.PERFORMANCE_JSON]
    for key, name, also in (("terminal", "docs/perf/terminal_evidence.json", ()),
                            ("report", protocol.PERFORMANCE_REPORT_MD, FINAL_INPUTS + (f"{PERF}/{protocol.SELECTION_NAME}",)),
                            ("verify", "docs/perf/stage5_check.json", ())):
        newest = max([newest, *(st.files.get(n, 0) for n in also)])
        if st.files.get(name, 0) < newest:
            return [step(key, f"{name} is missing or older than what it describes", values)]
        newest = st.files[name]
    verdict = _json(st.op / "docs/perf/stage5_check.json") or {}
    if verdict.get("verdict") == "FAIL":
        return after_fail(st, verdict, values)
    return [step("done", f"stage5_check: {verdict.get('verdict', verdict.get('status', '?'))}", values)]


def after_fail(st: State, verdict: dict, values: dict) -> list[dict]:
    """The way forward after a FAIL (decide/way_forward.py owns the rule); a rebuilt step gets the
    final steps' values."""
    delivered = next((c for c in st.register if c["executable_sha256"] == st.code_sha
                      and c["version_id"] not in candidates.superseded({"candidates": st.register})), None)
    planned = way_forward.plan(verdict.get("failures") or [], delivered, st.register, (st.ledger or {}).get("items", []))
    return [step(key, why, vals or (values if key in FINAL_KEYS else {})) for key, why, vals in planned]


def next_steps(op_dir: str | Path, overlap: str | None = None) -> dict[str, Any]:
    """The next step(s); ``overlap`` (the agent's judgement, ``perf_next.py --overlap ITEM``) closes the next
    preset item with the evidence of the closed experiment ITEM."""
    st = gather(op_dir)
    steps = prepare(st) or explore(st, overlap) or finish(st)
    for s in steps:   # a search item's close note cites its record (docs/ledger.md "Searches")
        item = s["key"] == "close_item" and st.ledger and next(
            (i for i in st.ledger["items"] if i["item_id"] == s["values"].get("ITEM_ID") and i.get("search")), None)
        if item and "NOTE" in s["needs"]:
            s["needs"]["NOTE"] += f" (search: {search_mod.record_rel(item['item_id'])})"
    mode = "choice" if steps[0]["key"] in CHOICES else "sequence"
    return {"op_dir": str(st.op), "code_sha256": st.code_sha, "next": steps[0]["key"], "mode": mode, "steps": steps}
