"""CANNBot-style installation of the plugin into another host's folders (and its removal).

Decisions (DESIGN §2 leaves the layout to us; upstream init.sh symlinked into the config root):
- The whole plugin payload named in ``plugin.json`` (agents, skills, commands, references, hooks,
  scripts, schemas, examples, platforms, docs: every file a prompt cites) is **copied** to ``<payload folder>/<plugin name>/``, the
  *install root*; copies work on every host and file system, symlinks do not.
- Hosts discover agents, commands and skills in their own folders, in their own formats:
  :mod:`.hosts` renders each file for the host (docs/hosts.md lists the conventions and sources).
  OpenCode also gets a plugin file that runs the same hook scripts as Claude Code's hooks.
- Text files (``.md``, ``.json``, the plugin ``.js``) get ``${CLAUDE_PLUGIN_ROOT}`` rendered to
  the absolute install root, so every prompt's script path works as written.
- A file that exists with other content is moved to ``<file>.bak.<stamp>`` first, never
  overwritten; ``cannbot-manifest.json`` in the payload folder records every installed file
  (path relative to the project or home directory), its sha256, its backup and the directories the
  install created. Uninstall deletes only files whose hash is unchanged, restores backups, removes
  the directories it created once empty, and the manifest. Re-installing first uninstalls.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import fsio
from ..errors import ContractError
from . import hosts

MANIFEST_NAME = "cannbot-manifest.json"
RENDERED_SUFFIXES = (".md", ".json")
IGNORED = ("__pycache__", ".pytest_cache")
PAYLOAD_GROUPS = ("agents", "skills", "commands", "references", "hooks", "scripts", "schemas",
                  "examples", "platforms", "docs")
OPENCODE_PLUGIN = "hooks/opencode/pypto-guard.js"
HOSTS = hosts.LAYOUTS
LEVELS = ("project", "global")


@dataclass(frozen=True)
class CopyItem:
    source: Path | None     # None: generated text (``text``)
    target: str             # POSIX path relative to the project (or home) directory
    kind: str               # raw | render | agent | command | text
    text: str = ""


def _check(host: str, level: str) -> hosts.Layout:
    if host not in HOSTS:
        raise ContractError("install.py", "--host", f"unknown host {host!r}", f"use one of {sorted(HOSTS)}")
    if level not in LEVELS:
        raise ContractError("install.py", "--level", f"unknown level {level!r}", "use project or global")
    return HOSTS[host]


def config_root(host: str, level: str, dest: Path) -> Path:
    """The folder holding the install root and the manifest (``dest``: project or home)."""
    return dest / _check(host, level).payload[0 if level == "project" else 1]


def discovery_root(host: str, level: str, dest: Path) -> Path:
    """The folder where the host looks for agents, commands and skills."""
    return dest / _check(host, level).discovery[0 if level == "project" else 1]


def _files(path: Path):
    if path.is_file():
        yield path
        return
    for item in sorted(path.rglob("*")):
        if item.is_file() and not any(part in IGNORED for part in item.parts) and item.suffix != ".pyc":
            yield item


def plan(plugin_root: Path, meta: dict, host: str = "claude", level: str = "project") -> list[CopyItem]:
    """Every file to write, relative to the project/home directory, in a stable order."""
    layout = _check(host, level)
    index = 0 if level == "project" else 1
    payload, discovery, name = layout.payload[index], layout.discovery[index], meta["name"]
    items: dict[str, CopyItem] = {}
    for group in PAYLOAD_GROUPS:
        for entry in meta.get(group, []):
            root = plugin_root / entry
            if not root.exists():
                raise ContractError(plugin_root / "plugin.json", group, f"{entry} does not exist",
                                    "fix plugin.json or restore the file")
            for src in _files(root):
                rel = src.relative_to(plugin_root).as_posix()
                kind = "render" if src.suffix in RENDERED_SUFFIXES else "raw"
                items[f"{payload}/{name}/{rel}"] = CopyItem(src, f"{payload}/{name}/{rel}", kind)
                top = rel.split("/", 1)[0]
                if top == "skills":
                    items[f"{discovery}/{rel}"] = CopyItem(src, f"{discovery}/{rel}", kind)
                elif top == "agents" and layout.agent and src.suffix == ".md":
                    target = f"{discovery}/{layout.agent.format(name=src.stem)}"
                    items[target] = CopyItem(src, target, "agent")
                elif (top == "commands" and layout.command and src.suffix == ".md"
                      and (level == "project" or layout.command_global)):
                    target = f"{discovery}/{layout.command.format(name=src.stem)}"
                    items[target] = CopyItem(src, target, "command")
    if layout.plugin:
        target = f"{discovery}/{layout.plugin.format(name=name)}"
        items[target] = CopyItem(plugin_root / OPENCODE_PLUGIN, target, "render")
    if layout.ignore_payload:
        items[f"{payload}/.gitignore"] = CopyItem(None, f"{payload}/.gitignore", "text",
                                                  "# installed by scripts/install.py; not project source\n*\n")
    return [items[key] for key in sorted(items)]


def _content(item: CopyItem, host: str, placeholder: str, install_root: Path) -> bytes:
    if item.source is None:
        return item.text.encode("utf-8")
    if item.kind == "raw":
        return item.source.read_bytes()
    text = item.source.read_text(encoding="utf-8")
    if item.kind == "agent":
        text = hosts.render_agent(host, item.source.stem, text)
    elif item.kind == "command":
        text = hosts.render_command(host, item.source.stem, text)
    return text.replace(placeholder, install_root.as_posix()).encode("utf-8")


def _write_bytes(path: Path, data: bytes, mode_from: Path | None) -> None:
    """Temp file + rename (never a half-written file), keeping the source file's permissions."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    if mode_from is not None:
        shutil.copymode(mode_from, tmp)
    tmp.replace(path)


def _make_dirs(folder: Path, base: Path, created: list[str]) -> None:
    missing = []
    while not folder.exists() and folder != base:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        created.append(path.relative_to(base).as_posix())


def read_manifest(root: Path) -> dict | None:
    path = root / MANIFEST_NAME
    return fsio.read_json(path, what="install manifest") if path.is_file() else None


def install(plugin_root: Path, meta: dict, *, host: str, level: str, dest: Path, stamp: str) -> dict:
    """Render and copy the plugin into the host's folders; returns the manifest written."""
    root = config_root(host, level, dest)
    if not dest.is_dir():
        raise ContractError(dest, "--dest", "is not a directory", "create the project folder first or fix the path")
    existing = read_manifest(root)
    if existing is not None and existing.get("name") != meta["name"]:
        raise ContractError(root / MANIFEST_NAME, "name", f"belongs to {existing.get('name')!r}",
                            "uninstall that configuration first or choose another --dest")
    if existing is not None:
        uninstall(host=host, level=level, dest=dest)
    items = plan(plugin_root, meta, host, level)   # before writing anything: a bad source stops here
    install_root = root / meta["name"]
    placeholder = meta.get("placeholder", "${CLAUDE_PLUGIN_ROOT}")
    rendered = [(item, _content(item, host, placeholder, install_root)) for item in items]
    records, created = [], []
    for item, data in rendered:
        target = dest / item.target
        _make_dirs(target.parent, dest, created)
        record = {"path": item.target, "sha256": fsio.sha256_bytes(data), "backup": None}
        if target.is_file() and target.read_bytes() != data:
            backup = target.with_name(f"{target.name}.bak.{stamp}")
            shutil.move(target, backup)
            record["backup"] = backup.relative_to(dest).as_posix()
        elif target.is_file():
            record["preexisting"] = True
        _write_bytes(target, data, item.source)
        records.append(record)
    _make_dirs(root, dest, created)
    manifest = {
        "brand": meta.get("brand", "cannbot"), "name": meta["name"], "version": meta["version"],
        "team": meta.get("display_name", meta["name"]), "level": level, "tool": host,
        "installed_agents": sorted(Path(a).stem for a in meta.get("agents", [])),
        "installed_skills": sorted(Path(s).name for s in meta.get("skills", [])),
        "brand_dir": install_root.as_posix(), "discovery_dir": discovery_root(host, level, dest).as_posix(),
        "install_time": stamp, "hooks_registered": host == "opencode",
        "created_dirs": created, "files": records,
    }
    fsio.write_json(root / MANIFEST_NAME, manifest)
    return manifest


def uninstall(*, host: str, level: str, dest: Path) -> dict:
    """Remove what the manifest lists (unchanged files only) and restore every backup."""
    root = config_root(host, level, dest)
    manifest = read_manifest(root)
    if manifest is None:
        raise ContractError(root / MANIFEST_NAME, "-", "nothing installed here",
                            "check --host, --level and --dest")
    if not isinstance(manifest.get("files"), list) or not isinstance(manifest.get("created_dirs", []), list):
        raise ContractError(root / MANIFEST_NAME, "files", "not an install manifest of this version",
                            "remove the installed folders by hand")
    removed, kept, restored = [], [], []
    for record in manifest["files"]:
        target = fsio.safe_join(dest, record["path"], field="files.path", source=root / MANIFEST_NAME)
        if target.is_file() and fsio.sha256_file(target) == record["sha256"] and not record.get("preexisting"):
            target.unlink()
            removed.append(record["path"])
        elif target.is_file():
            kept.append(record["path"])
        if record.get("backup") and not target.exists():
            shutil.move(dest / record["backup"], target)
            restored.append(record["path"])
    (root / MANIFEST_NAME).unlink()
    for rel in sorted(manifest.get("created_dirs", []), key=lambda p: p.count("/"), reverse=True):
        folder = dest / rel
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return {"config_root": root.as_posix(), "removed": len(removed), "kept_modified": kept,
            "restored": restored}
