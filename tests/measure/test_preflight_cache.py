"""The selector preflight asked once per code hash, and case jobs, on a deterministic backend."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from perftune.contract import protocol
from perftune.errors import ContractError
from perftune.measure import collect, preflight_cache
from perftune.measure.backends.base import Selector


def spec(tmp_path: Path, runner: str = "test_op.py"):
    return SimpleNamespace(op_dir=tmp_path, runner=tmp_path / runner,
                           selector=Selector("function_adapter", "perftune.measure.backends.case_adapter"))


def test_the_key_names_the_code_the_manifest_the_runner_and_the_cases(tmp_path):
    backend = SimpleNamespace(name="pypto-sim")
    key = preflight_cache.cache_key(backend, spec(tmp_path), "a" * 64, "m" * 64, ["c1", "c2"])
    assert key == preflight_cache.cache_key(backend, spec(tmp_path), "a" * 64, "m" * 64, ["c1", "c2"])
    others = [preflight_cache.cache_key(backend, spec(tmp_path), "b" * 64, "m" * 64, ["c1", "c2"]),
              preflight_cache.cache_key(backend, spec(tmp_path), "a" * 64, "n" * 64, ["c1", "c2"]),
              preflight_cache.cache_key(backend, spec(tmp_path, "test_other.py"), "a" * 64, "m" * 64, ["c1", "c2"]),
              preflight_cache.cache_key(backend, spec(tmp_path), "a" * 64, "m" * 64, ["c1"]),
              preflight_cache.cache_key(SimpleNamespace(name="cpu"), spec(tmp_path), "a" * 64, "m" * 64, ["c1", "c2"])]
    assert key not in others and len(set(others)) == len(others)


def test_only_a_passed_record_of_the_same_key_is_reused(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"key": "k", "rows": [{"ok": True}, {"ok": True}]}))
    assert preflight_cache._valid(path, "k") and not preflight_cache._valid(path, "other")
    path.write_text(json.dumps({"key": "k", "rows": [{"ok": True}, {"ok": False}]}))
    assert not preflight_cache._valid(path, "k")
    path.write_text("{not json")
    assert not preflight_cache._valid(path, "k")


def ctx(backend: str, cases: int):
    return SimpleNamespace(protocol=SimpleNamespace(backend=backend),
                           manifest=SimpleNamespace(cases=[object()] * cases))


def test_case_jobs_run_side_by_side_only_on_a_deterministic_backend(monkeypatch):
    monkeypatch.delenv(protocol.JOBS_ENV, raising=False)
    assert collect.case_jobs(ctx("cpu", 4), 4) == 1 and collect.case_jobs(ctx("msprof", 4)) == 1
    assert collect.case_jobs(ctx("pypto-sim", 4), 3) == 3 and collect.case_jobs(ctx("pypto-sim", 2), 8) == 2
    monkeypatch.setenv(protocol.JOBS_ENV, "1")
    assert collect.case_jobs(ctx("pypto-sim", 4)) == 1
    with pytest.raises(ContractError, match="--jobs"):
        collect.case_jobs(ctx("pypto-sim", 4), 0)


def test_a_deterministic_preflight_launches_the_unknown_id_only(tmp_path):
    """The known ids are answered by the timed launches (each must print exactly its own marker)."""
    log = tmp_path / "launched.txt"
    script = ("import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n'); "
              "sys.exit(2) if sys.argv[2].startswith('__') else print('PYPTO_PERF_SELECTED_CASE=' + sys.argv[2])")
    backend = SimpleNamespace(name="pypto-sim", case_command=lambda _spec, case_id: [
        sys.executable, "-c", script, str(log), case_id])
    run_spec = SimpleNamespace(**vars(spec(tmp_path)), device_id=0, timeout_s=60,
                               manifest=SimpleNamespace(case_ids=("c1", "c2")))
    first = preflight_cache.run(backend, run_spec, ["c1", "c2"], arm="measured", code_sha256="a" * 64,
                                manifest_sha256="m" * 64)
    record = json.loads((tmp_path / first["record"]).read_text())
    assert len(log.read_text().splitlines()) == 1 and [r["expect"] for r in record["rows"]] == ["nonzero"]
    assert record["known_ids"] == preflight_cache.KNOWN_IDS and not first["reused"]
    again = preflight_cache.run(backend, run_spec, ["c1", "c2"], arm="candidate", code_sha256="a" * 64,
                                manifest_sha256="m" * 64)
    assert again["reused"] and len(log.read_text().splitlines()) == 1
    backend.name = "cpu"   # elsewhere every id is launched, every time
    preflight_cache.run(backend, run_spec, ["c1", "c2"], arm="measured", code_sha256="a" * 64, manifest_sha256="m" * 64)
    assert len(log.read_text().splitlines()) == 4
