"""The example's candidate implementations: one optimisation item each, same tests, same contract."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE

VARIANTS_DIR = EXAMPLE / "variants"
INDEX = json.loads((VARIANTS_DIR / "variants.json").read_text())
ENTRIES = INDEX["variants"]
IDS = [entry["version_id"] for entry in ENTRIES]


def _without_kernel(path: Path) -> str:
    """The module's AST dump with the body of softmax_kernel removed (the only part that may differ)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "softmax_kernel":
            node.body = [ast.Pass()]
    return ast.dump(tree)


def test_index_lists_exactly_the_variant_folders():
    folders = sorted(p.name for p in VARIANTS_DIR.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert sorted(IDS) == folders
    assert len(IDS) == len(set(IDS)) == 4


def test_one_item_per_variant_from_the_planned_sources():
    assert [e["item_id"] for e in ENTRIES] == ["general-18", "general-19", "general-13", "bd-row-locality"]
    for entry in ENTRIES:
        assert entry["hypothesis"] and entry["expected_metric"]
        assert entry["source_kind"] in ("general_method", "bottleneck_derived")


@pytest.mark.parametrize("version_id", IDS)
def test_variant_changes_only_the_kernel(version_id):
    variant = VARIANTS_DIR / version_id / "test_softmax.py"
    assert _without_kernel(variant) == _without_kernel(EXAMPLE / "test_softmax.py")
    assert variant.read_text() != (EXAMPLE / "test_softmax.py").read_text()


@pytest.mark.parametrize("version_id", IDS)
def test_variant_passes_the_precision_gate_in_a_copy_of_the_op_dir(tmp_path, version_id):
    op = tmp_path / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("variants", "__pycache__", "docs"))
    shutil.copy(VARIANTS_DIR / version_id / "test_softmax.py", op / "test_softmax.py")
    proc = subprocess.run([sys.executable, "test_softmax.py"], cwd=op, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("PASS") == 4 and "Test completed!" in proc.stdout
    ratios = [float(line.split("=")[1]) for line in proc.stdout.splitlines() if line.startswith("matched_ratio=")]
    assert len(ratios) == 4 and min(ratios) >= 0.999


LINEAR = EXAMPLE.parent / "linear"


@pytest.mark.parametrize("version", [e["version_id"] for e in json.loads(
    (LINEAR / "variants/variants.json").read_text())["variants"]])
def test_linear_variants_differ_only_in_the_kernel_body_and_pass_every_test(version, tmp_path):
    def without_kernel(path: Path) -> str:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "linear_kernel":
                node.body = [ast.Pass()]
        return ast.dump(tree)

    variant = LINEAR / "variants" / version / "test_linear.py"
    assert without_kernel(variant) == without_kernel(LINEAR / "test_linear.py")
    op = tmp_path / "linear"
    shutil.copytree(LINEAR, op, ignore=shutil.ignore_patterns("variants", "__pycache__", "sources"))
    shutil.copy(variant, op / "test_linear.py")
    proc = subprocess.run([sys.executable, "test_linear.py"], cwd=op, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("PASS") == 4, proc.stdout + proc.stderr
