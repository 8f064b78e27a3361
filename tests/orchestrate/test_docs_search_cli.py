"""docs_search.py end to end: queries over real folders, --json, --check READY / NEED_PROVISION."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import SCRIPTS, assert_one_line_error

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "docs"
CACHE = tempfile.mkdtemp(prefix="perftune-docs-cache-")   # never the user's cache


def search(*args, devkit=None):
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_DEVKIT_DIR"}
    env["PERFTUNE_CACHE_DIR"] = CACHE
    if devkit is not None:
        env["PYPTO_DEVKIT_DIR"] = str(devkit)
    return subprocess.run([sys.executable, str(SCRIPTS / "docs_search.py"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_help_explains_itself():
    proc = search("--help")
    assert proc.returncode == 0 and "NEED_PROVISION" in proc.stdout and "example:" in proc.stdout


def test_json_results_over_explicit_roots():
    proc = search("cross", "core", "event", "--root", CORPUS / "references", CORPUS / "devkit", "--limit", "2",
                  "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["query"] == "cross core event" and len(out["results"]) == 2
    top = out["results"][0]
    assert (top["file"], top["heading"], top["line"]) == ("docs/pypto_pro/api/cross_core.md",
                                                          "set_cross_core and wait_cross_core", 3)
    assert set(top) == {"file", "path", "heading", "line", "snippet", "snippet_line", "score"}
    assert out["index"]["cache"].startswith(CACHE) and out["index"]["files"] == 13
    again = search("cross", "core", "event", "--root", CORPUS / "references", CORPUS / "devkit", "--limit", "2",
                   "--json")
    assert again.stdout == proc.stdout


def test_text_output_and_devkit_from_the_environment():
    proc = search("softmax_wrapper", "--limit", "1", devkit=CORPUS / "devkit")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("1. $PYPTO_DEVKIT_DIR/pro_ops/softmax/softmax_vf.py:14  [def softmax_wrapper]")
    none = search("zzzqqq", "--root", CORPUS / "references")
    assert none.returncode == 0 and none.stdout.startswith("no results for 'zzzqqq'")


def test_check_ready_and_need_provision(tmp_path):
    ready = search("--check", devkit=CORPUS / "devkit")
    assert (ready.returncode, ready.stdout) == (0, "READY\n")
    need = search("--check", "--json", devkit=tmp_path)
    assert need.returncode == 4
    out = json.loads(need.stdout)
    assert out["status"] == "NEED_PROVISION" and out["missing"][0] == "docs/pypto_pro/api/*.md"
    unset = search("--check")
    assert unset.returncode == 4 and unset.stdout.splitlines() == ["NEED_PROVISION", "$PYPTO_DEVKIT_DIR is not set"]


def test_usage_errors_are_one_line(tmp_path):
    assert_one_line_error(search(), 2, "QUERY")
    assert_one_line_error(search("tile", "--limit", "0"), 2, "--limit")
    assert_one_line_error(search("tile", "--root", tmp_path / "missing"), 2, "--root", "not a directory")
