"""Path and command safety (DESIGN §10): hostile ids and names stay inside the operator directory and
never reach a shell; symlinks in evidence are refused; YAML python tags are refused; huge files are
refused by their size before any byte is read."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE, ROOT, assert_one_line_error, run_script, tree_digest
from perftune.measure import evidence
from perftune import fsio
from perftune.measure.backends import cpu
from perftune.errors import ContractError

HOSTILE = ["../../etc/passwd", "/etc/passwd", "a\x00b", "$(touch pwned)", "x; rm -rf ~", "`id`", "a|b&&c>d",
           "..", ".", "名前/../../x", "\u202eevil", "a\nb", " ", "-rf", "~/x", "C:\\Windows", "%2e%2e%2f"]
PYTHON_SOURCES = sorted(p for d in ("scripts", "hooks", "benchmarks") for p in (ROOT / d).rglob("*.py"))


# ------------------------------------------------------------------ nothing reaches a shell

def test_no_shell_anywhere_in_the_code():
    pattern = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|subprocess\.getoutput|subprocess\.getstatusoutput"
                         r"|os\.exec[lv]p?e?\(|pty\.spawn")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in PYTHON_SOURCES
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []


def _command_arg(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "args"), None)


def test_every_subprocess_gets_an_argument_list_never_a_string():
    calls = 0
    for path in PYTHON_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            if not (isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and
                    isinstance(func.value, ast.Name) and func.value.id == "subprocess" and
                    func.attr in ("run", "Popen", "call", "check_call", "check_output")):
                continue
            calls += 1
            arg = _command_arg(node)
            assert not isinstance(arg, (ast.Constant, ast.JoinedStr, ast.BinOp)), \
                f"{path.relative_to(ROOT)}:{node.lineno} builds a command string"
    assert calls >= 8  # the collectors, correctness runner, probes, env tools, hooks


def test_yaml_is_only_ever_read_with_safe_load():
    unsafe = re.compile(r"yaml\.(load|unsafe_load|full_load|load_all|unsafe_load_all|full_load_all)\(|Loader\s*=")
    sources = PYTHON_SOURCES + sorted((ROOT / "tests").glob("*.py"))
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in sources
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if unsafe.search(line)]
    assert hits == []


@pytest.mark.parametrize("document", [
    "!!python/object/apply:os.system ['touch pwned']",
    "x: !!python/object/new:subprocess.Popen [['touch', 'pwned']]",
    "module_count: !!python/name:os.system",
])
def test_yaml_python_tags_are_refused(document, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.safe_load(document)
    assert not (tmp_path / "pwned").exists()


# ------------------------------------------------------------------ ids and names never escape

@pytest.mark.parametrize("case_id", HOSTILE)
def test_case_dir_names_are_one_safe_component(case_id, tmp_path):
    name = evidence.case_dir_name(case_id)
    assert re.fullmatch(r"case_[A-Za-z0-9_.-]+_[0-9a-f]{8}", name) and name not in (".", "..")
    assert fsio.safe_join(tmp_path, name).parent == tmp_path.resolve()


@settings(max_examples=200, deadline=None)
@given(a=st.text(min_size=1, max_size=40), b=st.text(min_size=1, max_size=40))
def test_any_two_case_ids_give_distinct_safe_folder_names(a, b):
    na, nb = evidence.case_dir_name(a), evidence.case_dir_name(b)
    assert "/" not in na and "\x00" not in na and not na.startswith(".")
    assert (na == nb) == (a == b)


@settings(max_examples=200, deadline=None)
@given(relative=st.one_of(st.sampled_from(HOSTILE), st.text(max_size=30),
                          st.lists(st.sampled_from(["..", ".", "a", "b", "", "/"]), max_size=6).map("/".join)))
def test_safe_join_stays_inside_or_refuses(relative, tmp_path_factory):
    root = tmp_path_factory.getbasetemp() / "safe_join_root"
    root.mkdir(exist_ok=True)
    try:
        joined = fsio.safe_join(root, relative)
    except ContractError as exc:
        assert "\n" not in exc.line()
        return
    assert joined == root.resolve() or root.resolve() in joined.parents


def _two_case_copy(target: Path, second_id: str) -> Path:
    op = target / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs"))
    spec = op / "SPEC.md"
    text = spec.read_text(encoding="utf-8")
    text = text.replace("| r512_c1024_fp32 | [512,1024] | float32 | yes |", "| r512_c1024_fp32 | [512,1024] | float32 | no |")
    text = text.replace("| r1024_c256_fp16 | [1024,256] | fp16 | yes |", "| r1024_c256_fp16 | [1024,256] | fp16 | no |")
    text = text.replace("| r64_c4096_fp16 |", f"| {second_id} |")
    spec.write_text(text, encoding="utf-8")
    return op


def test_hostile_case_id_is_collected_inside_the_round_and_never_runs_a_shell(tmp_path):
    hostile = "../../évil;touch PWNED $(touch PWNED2) `id` 名前"
    op = _two_case_copy(tmp_path, hostile)
    outside = tmp_path / "outside"
    outside.mkdir()
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel",
                      "--repeats", "1", "--warmup", "0", cwd=outside)
    assert proc.returncode == 0, proc.stderr
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, "--json", cwd=outside)
    assert proc.returncode == 0, proc.stderr
    round_dir = op / "docs/perf/round_001"
    folders = sorted(p.name for p in round_dir.iterdir() if p.is_dir())
    assert folders == sorted(evidence.case_dir_name(c) for c in ("r64_c4096_fp32", hostile))
    assert evidence.load_round(op, "round_001").cases[hostile].samples_us
    assert not list(tmp_path.rglob("PWNED*")) and tree_digest(outside) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "softmax"]


def test_op_name_with_shell_metacharacters_is_only_ever_a_string(tmp_path):
    op = _two_case_copy(tmp_path, "r64_c4096_fp16")
    outside = tmp_path / "outside"
    outside.mkdir()
    name = f"softmax_kernel; touch {outside}/PWNED #"
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", name,
                      "--repeats", "1", "--warmup", "0")
    assert_one_line_error(proc, 2, "--op-name")  # freeze checks the name against test_<op>.py
    assert not list(tmp_path.rglob("PWNED*")) and not (op / "PERFORMANCE_CASES.json").exists()
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel",
                      "--repeats", "1", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    path = op / "PERFORMANCE_CASES.json"  # a hand-edited manifest: the collector still never runs the name
    obj = json.loads(path.read_text())
    obj["protocol"]["op_name"] = name
    path.write_text(json.dumps(obj))
    proc = run_script("collect_perf.py", "quick", "--op-dir", op, cwd=outside)
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, proc.stderr
    assert not list(tmp_path.rglob("PWNED*")) and tree_digest(outside) == {}


# ------------------------------------------------------------------ symlinks and huge files

def test_symlinked_contract_files_are_refused(tmp_path):
    real = tmp_path / "real.json"
    real.write_text('{"schema_version": 2}', encoding="utf-8")
    link = tmp_path / "PERFORMANCE_CASES.json"
    link.symlink_to(real)
    with pytest.raises(ContractError, match="symlink"):
        fsio.read_json(link)
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "link").symlink_to(tmp_path)
    with pytest.raises(ContractError, match="symlink"):
        fsio.safe_join(tmp_path / "ev", "link/real.json")


def _peak_rss_kib_of(code: str) -> int:
    """Peak RSS of a fresh interpreter running ``code`` (so earlier tests do not hide a big read)."""
    probe = f"import resource, sys\nsys.path.insert(0, {str(ROOT / 'scripts')!r})\n{code}\n" \
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1])


def test_a_500_mb_file_is_refused_by_size_before_reading(tmp_path):
    big = tmp_path / "samples.csv"
    with open(big, "wb") as handle:
        handle.truncate(500 * 1024 * 1024)  # sparse: no disk blocks, but 500 MB if read
    code = (f"from perftune import fsio\nfrom perftune.measure.backends import cpu\nfrom perftune.errors import ContractError\n"
            f"for read in (lambda: fsio.read_json({str(big)!r}), lambda: cpu.parse_samples(__import__('pathlib')"
            f".Path({str(big)!r}), 'k')):\n"
            f"    try:\n        read()\n        raise SystemExit('accepted')\n    except ContractError as exc:\n"
            f"        assert 'large' in exc.problem or 'limit' in exc.problem, exc.problem")
    baseline = _peak_rss_kib_of("from perftune import fsio\nfrom perftune.measure.backends import cpu")
    assert _peak_rss_kib_of(code) - baseline < 50 * 1024  # far below the 500 MB a read would need
    assert cpu.MAX_SAMPLES_BYTES < big.stat().st_size and fsio.MAX_JSON_BYTES < big.stat().st_size
