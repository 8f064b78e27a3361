"""Real host clients for the tests, installed once with npm into the git-ignored `.tools/` folder.

Without npm the tests fail with a clear message: checking the real clients is part of the
product's acceptance, never skipped. Versions are pinned where a host's format is checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

TOOLS = ROOT / ".tools"
OPENCODE_VERSION = "1.18.33"


def npm_client(folder: str, bin_name: str, *packages: str) -> Path:
    """`.tools/<folder>/node_modules/.bin/<bin_name>`, npm-installing ``packages`` the first time."""
    prefix = TOOLS / folder
    cli = prefix / "node_modules" / ".bin" / bin_name
    if cli.exists():
        return cli
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is not on PATH: install Node.js + npm so the suite can fetch {packages} into {prefix}")
    prefix.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                           "--loglevel=error", *packages], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not cli.exists():
        pytest.fail(f"npm install {' '.join(packages)} into {prefix} failed: "
                    f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return cli


def isolated_env(home: Path) -> dict[str, str]:
    """The environment with HOME and the XDG folders moved under ``home`` (no user config leaks in)."""
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"), "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local/state"), "NO_COLOR": "1", "CI": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1"}
