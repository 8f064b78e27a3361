"""Check ids: one catalogue (verify/checks.py), and every doc, prompt and the code name exactly its ids.

Like the failure categories against errors.py (tests/plugin/test_agent_layer.py): docs/stage5-check.md,
the verifier prompt, commands/stage5-check.md and the verifier's code must name the catalogue's ids,
no more and no fewer; the Stage 4 gate numbers G1-G15 are tested against stage4.GATES / AGENT_GATES;
every S5-4 lever and EV/PB rule maps to an existing check or judgement id.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT
from perftune.verify import checks, stage4, stage5

DOC = ROOT / "docs" / "stage5-check.md"
AGENT = ROOT / "agents" / "pypto-pro-op-verifier.md"
COMMAND = ROOT / "commands" / "stage5-check.md"
SKILL = ROOT / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md"
REFS = SKILL.parent / "references"
P_ID = re.compile(r"(?<![\w.])((?:IN|P\d+)\.[a-z][a-z0-9_]*)\b")
INPUTS = {f"{g}.inputs" for g in checks.GATE_IDS[1:]}
P_IDS = {c.id for c in checks.P_CHECKS}


def check_table(text: str) -> list[str]:
    """The check ids of the first column of docs/stage5-check.md's check table, in order."""
    table = text.split("| check | checks | category on failure |", 1)[1].split("\n\n", 1)[0]
    return [cid for row in table.splitlines()[2:] for cid in P_ID.findall(row.split(" | ")[0])]


def id_differences(named: set[str], catalogue: set[str]) -> tuple[list[str], list[str]]:
    """(ids named but not catalogued, catalogued ids not named)."""
    return sorted(named - catalogue), sorted(catalogue - named)


def prompt_ids(text: str) -> set[str]:
    named = set(P_ID.findall(text))
    return named | INPUTS if "`<gate>.inputs`" in text else named


def code_ids() -> set[str]:
    """Check ids written as literals in the verifier's code (``.inputs`` ids are built per gate)."""
    folder = ROOT / "scripts" / "perftune" / "verify"
    found = set()
    for path in folder.glob("*.py"):
        if path.name != "checks.py":
            found.update(re.findall(r"[\"']((?:IN|P\d+)\.[a-z][a-z0-9_]*)[\"']", path.read_text()))
    return found


def test_the_catalogue_covers_every_gate_once_with_unique_well_formed_ids():
    ids = [c.id for c in checks.CHECKS]
    assert len(ids) == len(set(ids))
    assert checks.GATE_IDS[1:] == tuple(g for g, _, _ in stage5.GATES)
    assert {c.gate for c in checks.P_CHECKS} == set(checks.GATE_IDS)
    assert all(re.fullmatch(r"(IN|P\d+)\.[a-z][a-z0-9_]*", c.id) and c.id.startswith(c.gate + ".") for c in checks.P_CHECKS)
    assert [c.id for c in checks.S4_CHECKS] == [f"S4.{g.id}" for g in stage4.GATES]


def test_a_finding_refuses_an_uncatalogued_id_and_one_under_another_gate():
    assert checks.Finding("P2", "performance_evidence_invalid", "m", check="P2.fingerprint").check == "P2.fingerprint"
    for gate, check in (("P2", "P2.made_up"), ("P3", "P2.fingerprint"), ("P2", "")):
        with pytest.raises(ValueError, match="not in the catalogue"):
            checks.Finding(gate, "performance_evidence_invalid", "m", check=check)


def test_problems_become_findings_with_the_default_or_their_own_check():
    found = checks.findings("P9.attestation", [("cheating", "case a: other inputs"),
                                               ("cheating", "x", "P9.precision_gate", "atol 1e-5", "atol 1e-2")])
    assert [(f.check, f.expected, f.actual) for f in found] == [
        ("P9.attestation", checks.BY_ID["P9.attestation"].expects, "case a: other inputs"),
        ("P9.precision_gate", "atol 1e-5", "atol 1e-2")]


def test_the_stage5_check_page_has_one_row_per_catalogued_id():
    table = check_table(DOC.read_text())
    assert len(table) == len(set(table)), sorted(t for t in table if table.count(t) > 1)
    assert id_differences(set(table), P_IDS) == ([], [])
    assert "`S4.<id>`" in DOC.read_text()


def test_the_verifier_prompt_names_exactly_the_catalogued_ids_and_the_judgements():
    text = AGENT.read_text()
    assert id_differences(prompt_ids(text), P_IDS) == ([], [])
    assert re.findall(r"^- (J\d):", text, re.M) == [j for j, _ in checks.JUDGEMENTS]
    assert "Failed checks: <check id or J1-J4>: expected <expected>, actual <actual>" in text


def test_the_command_and_the_code_name_only_catalogued_ids_and_the_real_gate_range():
    text = COMMAND.read_text()
    assert not set(P_ID.findall(text)) - P_IDS
    assert f"P1-{stage5.GATES[-1][0]}" in text and "P1-P8" not in text
    for path in (ROOT / "scripts" / "stage5_check.py", ROOT / "scripts" / "perftune" / "verify" / "stage5.py"):
        assert "P1-P8" not in path.read_text(), path
    assert id_differences(code_ids(), P_IDS - INPUTS) == ([], [])


@pytest.mark.parametrize("change", ["drop", "add"])
def test_the_consistency_check_catches_a_dropped_or_an_added_id(change):
    table = set(check_table(DOC.read_text()))
    named = table - {"P2.fingerprint"} if change == "drop" else table | {"P2.made_up"}
    assert id_differences(named, P_IDS) == (([], ["P2.fingerprint"]) if change == "drop" else (["P2.made_up"], []))
    prompt = AGENT.read_text().replace("P2.fingerprint;" if change == "drop" else "P2.protocol,",
                                       ";" if change == "drop" else "P2.protocol, P2.made_up,")
    assert id_differences(prompt_ids(prompt), P_IDS) != ([], [])


def test_stage4_gate_numbers_have_one_owner():
    """docs/stage4-gates.md and the verifier prompt's G1-G15 agree with stage4.GATES / AGENT_GATES."""
    rows = re.findall(r"^\| `(\w+)` \| .*? \| ([^|]*) \| ([^|]*) \| [^|]* \|$", (ROOT / "docs" / "stage4-gates.md")
                      .read_text(), re.M)
    assert [r[0] for r in rows] == [g.id for g in stage4.GATES]
    for (gate_id, number, lint), spec in zip(rows, stage4.GATES):
        gates, _, lints = spec.upstream.partition("; ") if spec.upstream.startswith("G") else ("", "", spec.upstream)
        assert (number.split(" (")[0].strip().replace("—", "").strip(), lint.strip().replace("—", "").strip()) == \
            (gates, lints), gate_id
    section = AGENT.read_text().split("## Stage 4 gates (G1–G15)", 1)[1].split("\n## ", 1)[0]
    mechanical, _, rest = section.partition("Dynamic, run by you:")
    named = {g: re.findall(r"`(\w+)`", ids) for g, ids in re.findall(r"(G\d+)\s[^\[]*\[([^\]]+)\]", mechanical)}
    owned: dict[str, list[str]] = {}
    for spec in stage4.GATES:   # the G-number a gate decides: the first of its upstream (none: lint only)
        number = re.match(r"G\d+", spec.upstream)
        if number:
            owned.setdefault(number.group(0), []).append(spec.id)
    assert named == owned
    agent_gates = sorted(set(re.findall(r"\b(G\d+)\b", rest)), key=lambda g: int(g[1:]))
    assert agent_gates == [g for g, _, _ in stage4.AGENT_GATES]


def s5_4_levers() -> list[str]:
    text = SKILL.read_text().split("**S5-4 Forbidden levers.**", 1)[1].split("(P9 attests", 1)[0]
    text = " ".join(text.split())
    first, *others = [part.strip().rstrip(".;") for part in text.split(";")]
    changed = first.removeprefix("No speed-up by changing ").replace(" or ", ", ").split(", ")
    return changed + [part.removeprefix("no ") for part in others]


def enforcer_rows() -> dict[str, str]:
    section = DOC.read_text().split("## Rule → enforcer", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| ((?:S5-4 |EV-|PB-)[^|]*?) \| ([^|]+) \|$", section, re.M))


def test_every_lever_and_rule_maps_to_an_existing_check_or_judgement():
    rows = enforcer_rows()
    levers = [f"S5-4 {lever}" for lever in s5_4_levers()]
    ev = re.findall(r"^## (EV-\d+)", (REFS / "evidence-protocol.md").read_text(), re.M)
    pb = re.findall(r"^## (PB-\d+)", (REFS / "optimization-playbook.md").read_text(), re.M)
    assert len(levers) >= 15 and len(ev) == 9 and len(pb) == 8
    assert sorted(rows) == sorted(levers + ev + pb)
    known = {c.id for c in checks.CHECKS} | {j for j, _ in checks.JUDGEMENTS} | {g for g, _, _ in stage4.AGENT_GATES}
    for rule, cell in rows.items():
        named = re.findall(r"`((?:IN|S4|P\d+)\.[a-z][a-z0-9_]*)`|\b(J\d)\b|\b(G\d+) judgement", cell)
        ids = [next(x for x in group if x) for group in named]
        assert ids, (rule, cell)
        assert set(ids) <= known, (rule, sorted(set(ids) - known))


# Check ids that no test asserts yet (issue 35 item 12): this list only shrinks. A new check id needs a test
# that asserts it (planting the behaviour it forbids); a test that starts asserting a listed id removes it here.
UNTESTED: frozenset[str] = frozenset({
    "P1.inputs", "P2.fingerprint", "P2.frozen_inputs", "P2.manifest_history", "P2.protocol", "P3.formal_rounds",
    "P4.inputs", "P5.every_test", "P5.inputs", "P6.inputs", "P7.inputs", "P7.item_decision",
    "P8.inputs", "P9.golden_rebuild", "P9.inputs", "P9.ranked_round", "P9.timed_output_stable", "P10.fresh_data",
    "P10.gap_timing", "P10.remeasured_inputs", "P10.resimulated",
})
TESTS = ROOT / "tests"
STAGE4_TESTS = sorted(TESTS.glob("verify/test_stage4*.py"))


def asserted_ids(texts: dict[Path, str]) -> set[str]:
    """Catalogued ids a test names as a value (a quoted literal, or a corpus entry's ``check:``); a Stage 4
    gate ``S4.<id>`` also counts when a Stage 4 gate test names ``"<id>"`` (stage4.GATES owns both)."""
    found = set()
    for check in checks.CHECKS:
        value = re.compile(r"[\"']" + re.escape(check.id) + r"[\"']|check: " + re.escape(check.id) + r"\b")
        gate = check.id.removeprefix("S4.")
        if any(value.search(t) for t in texts.values()) or (gate != check.id and any(
                f'"{gate}"' in texts.get(p, "") for p in STAGE4_TESTS)):
            found.add(check.id)
    return found


def test_every_check_id_is_asserted_by_id_in_a_test():
    texts = {p: p.read_text() for p in TESTS.rglob("*") if p.suffix in (".py", ".yaml")
             and p.resolve() != Path(__file__).resolve()}
    missing = {c.id for c in checks.CHECKS} - asserted_ids(texts)
    assert sorted(missing - UNTESTED) == [], "a check id no test asserts (add the test that plants its behaviour)"
    assert sorted(UNTESTED - missing) == [], "asserted now: remove these ids from UNTESTED"


def test_the_coverage_scan_sees_an_id_only_as_a_value():
    fake = {TESTS / "t.py": 'x = ["P2.fingerprint"]  # P2.protocol named in a comment\n',
            TESTS / "c.yaml": "catch: {check: P9.attestation, category: cheating}\n"}
    assert asserted_ids(fake) == {"P2.fingerprint", "P9.attestation"}
