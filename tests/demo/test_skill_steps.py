"""SKILL.md owns the step order: its step blocks and the driver's step list agree, both ways."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
import step_order
from perftune.demo import skill, steps
from perftune.errors import ContractError

SKILL = skill.load()


def test_the_skill_has_one_block_per_step_in_the_step_list_order():
    assert SKILL.order == steps.ORDER


@pytest.mark.parametrize("key", steps.ORDER)
def test_each_step_block_runs_its_script_with_known_placeholders_and_json(key):
    command = SKILL.command(key)
    assert command.startswith(f"python3 ${{CLAUDE_PLUGIN_ROOT}}/scripts/{steps.BY_KEY[key].script}")
    assert command.endswith("--json")
    words = set(re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", command)) - {"PERFORMANCE_CASES", "CLAUDE_PLUGIN_ROOT"}
    assert words <= set(skill.NAMES), words - set(skill.NAMES)


def test_every_placeholder_is_explained_in_the_step_values_table():
    table = (skill.SKILL_MD.parent / "references" / "step-values.md").read_text()
    assert {n for n in skill.NAMES if f"`{n}`" not in table} == set()
    assert "step-values.md" in skill.SKILL_MD.read_text()


def test_fill_expands_lists_drops_flags_without_value_and_refuses_an_unknown_name():
    argv = skill.fill("python3 ${CLAUDE_PLUGIN_ROOT}/scripts/ledger.py update --op-dir DIR --reason-code REASON_CODE "
                      "--formal FORMAL_IDS --quick QUICK_ID --note \"NOTE\" --restore-point DIR/docs/perf/versions/BEST_VERSION",
                      {"DIR": "/op", "REASON_CODE": None, "FORMAL_IDS": ["a", "b"], "QUICK_ID": [], "NOTE": "x y",
                       "BEST_VERSION": "v1"})
    assert argv[1:] == [str(ROOT / "scripts/ledger.py"), "update", "--op-dir", "/op", "--formal", "a", "b",
                        "--note", "x y", "--restore-point", "/op/docs/perf/versions/v1"]
    with pytest.raises(ContractError, match="placeholders without a value: \\['RUN_ID'\\]"):
        skill.fill("python x.py --correctness RUN_ID", {})


def test_two_blocks_for_one_step_are_refused():
    block = "```bash step=choose\npython x.py\n```\n"
    with pytest.raises(ContractError, match="has two command blocks"):
        skill.parse(block + block, "SKILL.md")


def test_the_optimizer_prompt_runs_the_skill_to_its_last_step():
    agent = (ROOT / "agents/pypto-pro-op-optimizer.md").read_text()
    last = re.findall(r"^(\d+)\. \*\*", skill.SKILL_MD.read_text(), re.M)[-1]
    assert f"procedure step {last}" in agent


def test_a_remeasure_verdict_goes_back_to_the_confirm_round_and_nothing_else_goes_back():
    loop = ["choose", "stage4", "confirm_round", "confirm", "confirm_round", "confirm", "final_formal"]
    assert step_order.order_problems(loop) == []
    assert step_order.order_problems(["confirm", "choose"]) == ["out of order: confirm -> choose"]


@pytest.mark.parametrize("key", ["bottleneck_profile", "derived_add"])
def test_a_placeholder_inside_a_path_is_filled_with_the_real_round_name(key):
    """#27 Found 7: `terminal_evidence_BEST_ROUND.json` kept its placeholder (``\\b`` does not split `_B`)."""
    command = SKILL.command(key)
    values = {name: f"<{name.lower()}>" for name in skill.placeholders(command)}
    values.update(DIR="/op", BEST_ROUND="round_003")
    assert "BEST_ROUND" in skill.placeholders(command)
    argv = skill.fill(command, values)
    assert "docs/perf/bottleneck/terminal_evidence_round_003.json" in argv
    assert not [a for a in argv if re.search(r"(?<![A-Z0-9])(?:" + "|".join(skill.NAMES) + r")(?![A-Z0-9_])", a)]


def test_a_close_without_experiment_may_come_anywhere_in_the_item_loop_but_not_after_the_sweep():
    assert step_order.order_problems(["record_baseline", "close_preset", "hypothesis", "close_item", "close_preset"]) == []
    assert step_order.order_problems(["sweep", "close_preset"]) == ["out of order: sweep -> close_preset"]


@pytest.mark.parametrize("key, name", [("quick", "BEST_VERSION"), ("formal_compare", "BEST_ROUND"),
                                       ("close_item", "ITEM_ID")])
def test_a_step_with_a_missing_value_is_an_error_naming_the_step_and_the_value(key, name):
    """#38 Found 1: `--paired-with .../versions/None`, a formal compare without `--baseline`, an update with
    no flags were printed when a value was missing; now the step and the placeholder are named."""
    command = SKILL.command(key)
    values = {p: "x" for p in skill.placeholders(command)} | {name: None}
    with pytest.raises(ContractError) as err:
        skill.fill(command, values, skill.SKILL_MD, key)
    assert f"step {key}: no value for ['{name}']" in str(err.value)
    with pytest.raises(ContractError, match=f"step {key}: placeholders without a value: \\['{name}'\\]"):
        skill.fill(command, {p: "x" for p in skill.placeholders(command) if p != name}, skill.SKILL_MD, key)


def test_the_placeholders_that_may_be_left_out_are_the_ones_step_values_names():
    table = (skill.SKILL_MD.parent / "references" / "step-values.md").read_text()
    named = table.split("only these may be:", 1)[1].split(".", 1)[0]
    assert set(re.findall(r"`([A-Z_]+)`", named)) == skill.OPTIONAL
