"""env_check.py end to end with fake npu-smi / msprof executables on PATH (healthy, warning, hang,
transient hang, driver fault, missing) and on this machine as it is."""

import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import SCRIPTS, assert_one_line_error, tree_digest
from perftune.contract import schemas

FIX = Path(__file__).resolve().parents[1] / "fixtures"
ENV = FIX / "env"
CLEARED = ("ASCEND_HOME_PATH", "TILE_FWK_DEVICE_ID", "ASCEND_RT_VISIBLE_DEVICES", "PYPTO_DEVKIT_DIR",
           "PYTHONPATH") + tuple(k for k in os.environ if k.startswith("FAKE_"))


def env_check(tmp_path, *args, full=True, **variables):
    """Run env_check.py in ``tmp_path`` with a controlled environment; return (proc, report, preflight)."""
    base = {k: v for k, v in os.environ.items() if k not in CLEARED}
    base["PATH"] = f"{ENV / 'bin'}:/usr/bin:/bin"
    if full:
        base.update(ASCEND_HOME_PATH=str(ENV / "cann" / "latest"), PYTHONPATH=str(ENV / "site"),
                    TILE_FWK_DEVICE_ID="0", PYPTO_DEVKIT_DIR=str(FIX / "docs" / "devkit"),
                    FAKE_NPU_SMI_OUTPUT=str(ENV / "npu_smi_healthy.txt"))
    base.update(variables)
    proc = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py"), *args], cwd=tmp_path, env=base,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stdout.rstrip("\n").splitlines()[-1]
    assert last.startswith("PREFLIGHT_JSON: "), proc.stdout
    report_path = tmp_path / "env_report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    if report is not None:
        schemas.validate(report, "env_report")
    return proc, report, json.loads(last[len("PREFLIGHT_JSON: "):])


def test_help_explains_itself():
    proc = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py"), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "PREFLIGHT_JSON" in proc.stdout and "example:" in proc.stdout


def test_healthy_environment_passes(tmp_path):
    proc, report, pre = env_check(tmp_path, "--json")
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout.rsplit("PREFLIGHT_JSON:", 1)[0]) == report
    assert (report["status"], report["kind"], report["device_assessment"]) == ("ok", None, "DEVICE_HEALTHY")
    assert report["errors"] == [] and report["warnings"] == []
    assert report["cann"]["version"] == "8.0.RC2" and report["msprof"]["version"] == "8.0.RC2"
    assert report["packages"]["torch_npu"] == {"version": "2.1.0.post8", "present": True}
    assert report["devkit"]["status"] == "READY" and [d["npu_id"] for d in report["devices"]] == [0, 1]
    assert pre["passed"] is True and pre["npu_usable"] is True and pre["cann_version"] == "8.0.RC2"
    assert pre["report"] == str(tmp_path / "env_report.json")


def test_warning_card_is_usable_but_reported(tmp_path):
    proc, report, pre = env_check(tmp_path, FAKE_NPU_SMI_OUTPUT=str(ENV / "npu_smi_warning.txt"),
                                  ASCEND_RT_VISIBLE_DEVICES="0", FAKE_MSPROF_VERSION="8.1.RC1")
    assert proc.returncode == 0 and report["status"] == "ok" and report["msprof"]["version"] == "8.1.RC1"
    assert [w["code"] for w in report["warnings"]] == ["device_unhealthy", "device_unhealthy", "device_busy",
                                                       "device_busy", "visible_devices_set"]
    assert "warning device_busy: selected NPU 0 AI-core use 87 %" in proc.stdout
    proc, report, pre = env_check(tmp_path, FAKE_NPU_SMI_OUTPUT=str(ENV / "npu_smi_warning.txt"),
                                  TILE_FWK_DEVICE_ID="1")
    assert proc.returncode == 3 and (pre["kind"], pre["device_assessment"]) == ("hardware", "FAULT_NO_TIMEOUT")


def test_hang_is_cut_by_the_timeout_and_confirmed(tmp_path):
    start = time.monotonic()
    proc, report, pre = env_check(tmp_path, "--timeout", "0.5", FAKE_NPU_SMI_SLEEP="20")
    assert time.monotonic() - start < 10
    assert proc.returncode == 3 and (pre["status"], pre["kind"], pre["device_assessment"]) == (
        "env_error", "hardware", "HANG_CONFIRMED")
    assert [r["timed_out"] for r in report["npu_smi"]["runs"]] == [True, True]


def test_a_single_stall_is_transient(tmp_path):
    proc, report, pre = env_check(tmp_path, "--timeout", "0.5", FAKE_NPU_SMI_HANG_ONCE=str(tmp_path / "marker"))
    assert proc.returncode == 0 and pre["device_assessment"] == "TRANSIENT_RECOVERED"
    assert [w["code"] for w in report["warnings"]] == ["npu_smi_hang"]


def test_driver_fault_without_timeout(tmp_path):
    proc, report, pre = env_check(tmp_path, FAKE_NPU_SMI_EXIT="255")
    assert proc.returncode == 3 and pre["device_assessment"] == "FAULT_NO_TIMEOUT"
    assert "dcmi module initialize failed" in report["errors"][0]["message"]


def test_software_gaps_with_a_healthy_card(tmp_path):
    proc, report, pre = env_check(tmp_path, full=False, FAKE_NPU_SMI_OUTPUT=str(ENV / "npu_smi_healthy.txt"))
    assert proc.returncode == 3 and (pre["kind"], pre["device_assessment"]) == ("software", "DEVICE_HEALTHY")
    assert {e["code"] for e in report["errors"]} == {"cann_env_missing", "package_missing"}


def test_missing_tools_and_the_output_flag(tmp_path):
    out = tmp_path / "evidence" / "env.json"
    proc, _, pre = env_check(tmp_path, "--output", str(out), full=False, PATH="/usr/bin:/bin")
    report = json.loads(out.read_text())
    assert proc.returncode == 3 and pre["device_assessment"] == "NO_DEVICE" and pre["report"] == str(out)
    assert {e["code"] for e in report["errors"]} >= {"npu_smi_missing", "msprof_missing", "cann_env_missing"}
    assert report["kind"] == ("software" if glob.glob("/dev/davinci[0-9]*") else "hardware")


def test_this_machine_as_it_is_changes_nothing(tmp_path):
    (tmp_path / "keep.txt").write_text("unchanged")
    before = tree_digest(tmp_path)
    proc = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    pre = json.loads(proc.stdout.splitlines()[-1].split(": ", 1)[1])
    assert proc.returncode == (0 if pre["passed"] else 3) and "Traceback" not in proc.stderr
    if not glob.glob("/dev/davinci[0-9]*") and not os.environ.get("ASCEND_HOME_PATH"):
        assert (pre["status"], pre["kind"], pre["device_assessment"]) == ("env_error", "hardware", "NO_DEVICE")
    after = tree_digest(tmp_path)
    assert set(after) - set(before) == {"env_report.json"} and after["keep.txt"] == before["keep.txt"]


def test_bad_arguments_are_one_line_errors(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py"), "--timeout", "-1"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert_one_line_error(proc, 2, "--timeout")
    assert not (tmp_path / "env_report.json").exists()
    (tmp_path / "a_dir").mkdir()
    proc = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py"), "--output", "a_dir", "--timeout", "1"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert_one_line_error(proc, 2, "--output", "cannot write the report")
