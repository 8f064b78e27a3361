"""One version for the plugin, and a content hash that tells when the version must move.

Claude Code copies a marketplace plugin into its cache keyed by the version, and ``plugin update``
only fetches a new copy when the version changes. So every change of what the plugin ships
(everything under ``plugin/``, the folder the marketplace points at) needs a new version.

- The version source is ``.claude-plugin/plugin.json``. The other copies (``plugin.json``,
  ``.claude-plugin/marketplace.json`` metadata, ``pyproject.toml``, ``perftune.__version__``) must
  equal it; :func:`bump` writes all of them.
- ``.claude-plugin/release.json`` records ``{"version", "sha256"}``: the sha256 of the shipped
  files when that version was stamped. :func:`check` fails when the files changed but the record
  did not, naming the fix (``plugin_version.py bump``); bump refuses to re-stamp a changed tree
  under the same version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from .. import fsio
from ..errors import ContractError

SHIPPED = "plugin"                       # the folder the marketplace entry points at
SOURCE = ".claude-plugin/plugin.json"
RECORD = ".claude-plugin/release.json"
_SKIP_DIRS = {"__pycache__", ".pytest_cache"}
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# (file, pattern whose group 1 is the version)
COPIES = (
    ("plugin.json", r'"version":\s*"([^"]+)"'),
    (".claude-plugin/marketplace.json", r'"version":\s*"([^"]+)"'),
    ("pyproject.toml", r'(?m)^version\s*=\s*"([^"]+)"'),
    ("scripts/perftune/__init__.py", r'(?m)^__version__\s*=\s*"([^"]+)"'),
)


def shipped_files(root: Path) -> list[tuple[str, Path]]:
    """(path as shipped, real file) for every file a marketplace install copies, sorted."""
    base = root / SHIPPED
    out = []
    for folder, dirs, names in os.walk(base, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info"))  # pip -e output
        for name in names:
            if not name.endswith(".pyc"):
                path = Path(folder) / name
                out.append((path.relative_to(base).as_posix(), path))
    return sorted(out)


def content_sha256(root: Path) -> str:
    digest = hashlib.sha256()
    for rel, path in shipped_files(root):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def source_version(root: Path) -> str:
    version = fsio.read_json(root / SOURCE, what="plugin manifest").get("version")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise ContractError(root / SOURCE, "version", f"{version!r} is not MAJOR.MINOR.PATCH", "fix the version")
    return version


def check(root: Path) -> dict:
    """Versions agree and the recorded hash is the shipped tree's; ``problems`` lists what is off."""
    version, problems = source_version(root), []
    for name, pattern in COPIES:
        match = re.search(pattern, (root / name).read_text(encoding="utf-8"))
        if match is None or match.group(1) != version:
            problems.append(f"{name}: version {match.group(1) if match else None!r} != {SOURCE} {version!r}")
    record = fsio.read_json(root / RECORD, what="release record") if (root / RECORD).is_file() else {}
    actual = content_sha256(root)
    if record.get("version") != version or record.get("sha256") != actual:
        problems.append(f"{RECORD}: shipped files changed since {record.get('version')!r} was stamped "
                        "(run scripts/plugin_version.py bump patch)")
    return {"version": version, "sha256": actual, "recorded": record, "problems": problems}


def bump(root: Path, part: str) -> dict:
    """Raise the version (major/minor/patch) everywhere and stamp the shipped tree's hash."""
    old = source_version(root)
    numbers = [int(n) for n in old.split(".")]
    index = ("major", "minor", "patch").index(part)
    numbers = numbers[:index] + [numbers[index] + 1] + [0] * (2 - index)
    new = ".".join(map(str, numbers))
    for name, pattern in ((SOURCE, r'"version":\s*"([^"]+)"'),) + COPIES:
        path = root / name
        text = path.read_text(encoding="utf-8")
        match = re.search(pattern, text)
        if match is None:
            raise ContractError(path, "version", "no version field found", "add one")
        fsio.write_text(path, text[:match.start(1)] + new + text[match.end(1):])
    record = {"version": new, "sha256": content_sha256(root)}
    fsio.write_text(root / RECORD, json.dumps(record, indent=2) + "\n")
    return {"old": old, **record}
