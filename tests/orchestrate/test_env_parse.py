"""perftune.orchestrate.env pure parts: npu-smi parsing on recorded layouts, version files, the assessment."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from perftune.orchestrate import env
from perftune.contract import schemas

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "env"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_parses_a_healthy_910b_table_exactly():
    devices = env.parse_npu_smi_info(fixture("npu_smi_healthy.txt"))
    assert devices == [
        env.Device(0, 0, "910B3", "OK", "0000:C1:00.0", 92.4, 38.0, 0.0, 0.0, 0.0, 3402.0, 65536.0),
        env.Device(1, 0, "910B3", "OK", "0000:C2:00.0", 95.0, 37.0, 0.0, 0.0, 0.0, 3391.0, 65536.0),
    ]


def test_parses_warning_table_with_missing_values_and_ignores_processes():
    busy, alarm = env.parse_npu_smi_info(fixture("npu_smi_warning.txt"))
    assert (busy.health, busy.aicore_pct, busy.hbm_used_mb, busy.power_w) == ("Warning", 87.0, 52210.0, 301.7)
    assert (alarm.npu_id, alarm.health, alarm.aicore_pct) == (1, "Alarm", None)


def test_parses_an_inference_card_without_hbm_column():
    (card,) = env.parse_npu_smi_info(fixture("npu_smi_310p.txt"))
    assert (card.npu_id, card.chip_id, card.name, card.power_w, card.temp_c) == (8, 0, "310P3", None, 44.0)
    assert (card.memory_used_mb, card.memory_total_mb, card.hbm_used_mb) == (1712.0, 21527.0, None)


def test_garbage_gives_no_devices():
    assert env.parse_npu_smi_info("dcmi module initialize failed\n| x | y |\n") == []


ROW = st.builds(lambda i, name, health, aic, used, total: (i, name, health, aic, used, total),
                st.integers(0, 15), st.sampled_from(["910B1", "910B3", "910B4", "Ascend910"]),
                st.sampled_from(["OK", "Warning", "Alarm", "Critical"]), st.integers(0, 100),
                st.integers(0, 65536), st.integers(1, 65536))


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=8, unique_by=lambda r: r[0]))
def test_any_rendered_table_parses_back(rows):
    lines = ["| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
             "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"]
    for i, name, health, aic, used, total in rows:
        lines.append(f"| {i:<5} {name:<19} | {health:<13} | 90.0        40                0    / 0             |")
        lines.append(f"| 0                         | 0000:C{i:X}:00.0  | {aic:<11} 0    / 0          {used}/ {total} |")
        lines.append("+===========================+===============+===================================+")
    parsed = env.parse_npu_smi_info("\n".join(lines))
    assert [(d.npu_id, d.name, d.health, d.aicore_pct, d.hbm_used_mb, d.hbm_total_mb) for d in parsed] == [
        (i, name, health, float(aic), float(used), float(total)) for i, name, health, aic, used, total in rows]


def test_version_files():
    assert env.parse_version_file(fixture("cann/latest/aarch64-linux/ascend_toolkit_install.info")) == "8.0.RC2"
    assert env.parse_version_file("Version=7.0.0\n") == "7.0.0"
    assert env.parse_version_file("runtime_running_version=[7.0.0:x]\n") is None
    assert env.parse_version_file("nothing here") is None


def run(out="", rc=0, timed_out=False):
    return env.ProbeRun(["npu-smi", "info"], None if timed_out else rc, out, "driver says no" if rc else "",
                        timed_out, 0.1)


def facts(**kw):
    present = {name: {"version": "1.0", "present": True} for name in env.PACKAGES}
    base = dict(python={"version": "3.11.7", "executable": "/usr/bin/python3"}, packages=present,
                environ={"ASCEND_HOME_PATH": "/opt/cann", "TILE_FWK_DEVICE_ID": "0",
                         "ASCEND_RT_VISIBLE_DEVICES": None, "PYPTO_DEVKIT_DIR": "/d"},
                device_nodes=["/dev/davinci0"], npu_smi_path="/usr/bin/npu-smi",
                npu_smi_runs=[run(fixture("npu_smi_healthy.txt"))], cann_version="8.0.RC2",
                cann_version_file="/opt/cann/x.info", ascend_home_exists=True, msprof_path="/usr/bin/msprof",
                msprof_run=env.ProbeRun(["msprof", "--version"], 0, "msprof version: 8.0.RC2", "", False, 0.1),
                devkit={"dir": "/d", "status": "READY", "missing": []})
    base.update(kw)
    report = env.assess(env.Facts(**base), now="2025-01-01T00:00:00Z")
    schemas.validate(report, "env_report")
    return report


def codes(items):
    return [item["code"] for item in items]


def test_healthy_facts_pass_without_findings():
    report = facts()
    assert (report["status"], report["kind"], report["device_assessment"]) == ("ok", None, "DEVICE_HEALTHY")
    assert report["errors"] == report["warnings"] == report["recommendations"] == []
    assert report["npu_usable"] and report["msprof"]["version"] == "8.0.RC2"


def test_each_device_outcome():
    hang = facts(npu_smi_runs=[run(timed_out=True), run(timed_out=True)])
    assert (hang["device_assessment"], hang["kind"], codes(hang["errors"])) == ("HANG_CONFIRMED", "hardware",
                                                                               ["npu_smi_hang"])
    back = facts(npu_smi_runs=[run(timed_out=True), run(fixture("npu_smi_healthy.txt"))])
    assert (back["status"], back["device_assessment"], codes(back["warnings"])) == (
        "ok", "TRANSIENT_RECOVERED", ["npu_smi_hang"])
    fault = facts(npu_smi_runs=[run(rc=255)])
    assert fault["device_assessment"] == "FAULT_NO_TIMEOUT" and "driver says no" in fault["errors"][0]["message"]
    empty = facts(npu_smi_runs=[run("| nothing |")])
    assert (empty["device_assessment"], codes(empty["errors"])) == ("NO_DEVICE", ["no_devices"])
    unknown = facts(environ={"ASCEND_HOME_PATH": "/opt/cann", "TILE_FWK_DEVICE_ID": "7"})
    assert (unknown["device_assessment"], unknown["kind"]) == ("NO_DEVICE", "software")
    missing = facts(npu_smi_path=None, npu_smi_runs=[], device_nodes=[])
    assert (missing["device_assessment"], missing["kind"]) == ("NO_DEVICE", "hardware")
    tools_off_path = facts(npu_smi_path=None, npu_smi_runs=[])
    assert (tools_off_path["device_assessment"], tools_off_path["kind"]) == ("NO_DEVICE", "software")


def test_warning_table_selected_card_busy_other_card_alarm():
    report = facts(npu_smi_runs=[run(fixture("npu_smi_warning.txt"))],
                   environ={"ASCEND_HOME_PATH": "/opt/cann", "TILE_FWK_DEVICE_ID": "0",
                            "ASCEND_RT_VISIBLE_DEVICES": "0", "PYPTO_DEVKIT_DIR": "/d"})
    assert (report["status"], report["device_assessment"]) == ("ok", "DEVICE_HEALTHY")
    assert codes(report["warnings"]) == ["device_unhealthy", "device_unhealthy", "device_busy", "device_busy",
                                         "visible_devices_set"]
    alarm = facts(npu_smi_runs=[run(fixture("npu_smi_warning.txt"))],
                  environ={"ASCEND_HOME_PATH": "/opt/cann", "TILE_FWK_DEVICE_ID": "1", "PYPTO_DEVKIT_DIR": "/d"})
    assert (alarm["status"], alarm["kind"], alarm["device_assessment"]) == ("env_error", "hardware",
                                                                            "FAULT_NO_TIMEOUT")


def test_software_layers_are_software_errors():
    packages = {name: {"version": None, "present": False} for name in env.PACKAGES}
    report = facts(packages=packages, environ={"TILE_FWK_DEVICE_ID": "0"}, msprof_path=None, msprof_run=None)
    assert report["kind"] == "software" and report["device_assessment"] == "DEVICE_HEALTHY"
    assert codes(report["errors"]) == ["cann_env_missing"] + ["package_missing"] * 5 + ["msprof_missing"]
    assert codes(report["warnings"]) == ["package_missing", "devkit_not_ready"]
    summary = env.preflight_summary(report, "/tmp/env_report.json")
    assert summary["passed"] is False and summary["torch_npu_ok"] is False and summary["devices"][0] == {
        "npu_id": 0, "chip_name": "910B3", "health": "OK"}
