"""The pypto-sim environment fingerprint: backend name, pypto/torch versions, chip, config hash."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from types import SimpleNamespace

from perftune.measure import fingerprint

HAS_PYPTO = importlib.util.find_spec("pypto") is not None


def test_a_pypto_sim_round_records_the_simulator_not_msprof():
    env = fingerprint.collect("pypto-sim", SimpleNamespace(simulator={"device_arch": "A5"}))
    assert env["backend"] == "pypto-sim" and env["device_arch"] == "A5"
    assert "cann_version" not in env and "msprof_help_sha256" not in env
    if HAS_PYPTO:
        assert env["pypto"] == importlib.metadata.version("pypto")
        assert env["torch"] == importlib.metadata.version("torch")
        from perftune.measure.backends import pypto_sim
        assert env["simulator_config_sha256"] == pypto_sim.effective_config("A5")[1]
    else:
        assert env["pypto"] is None and env["simulator_config_sha256"] is None


def test_another_chip_config_or_pypto_is_another_fingerprint():
    a2 = fingerprint.collect("pypto-sim", SimpleNamespace(simulator={"device_arch": "A2A3"}))
    a5 = fingerprint.collect("pypto-sim", SimpleNamespace(simulator={"device_arch": "A5"}))
    assert fingerprint.mismatch({"environment": a2}, {"environment": a2}) is None
    assert fingerprint.mismatch({"environment": a2}, {"environment": a5}).startswith("environment.device_arch")
    newer = {**a2, "pypto": "0.3.0"}
    assert fingerprint.mismatch({"environment": a2}, {"environment": newer}).startswith("environment.pypto:")
    other = {**a2, "simulator_config_sha256": "0" * 64}
    assert "simulator_config_sha256" in fingerprint.mismatch({"environment": a2}, {"environment": other})
