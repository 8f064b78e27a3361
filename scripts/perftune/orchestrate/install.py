"""CANNBot-style installation of the plugin into another host's config root (and its removal).

Decisions (DESIGN §2 leaves the layout to us; upstream init.sh symlinked into the config root):
- The whole plugin payload named in ``plugin.json`` (agents, skills, commands, references, hooks,
  scripts, schemas) is **copied** to ``<config root>/<plugin name>/``, the *install root*; copies
  work on every host and file system, symlinks do not.
- Hosts discover components in their own folders, so agents, skills, commands and references are
  copied a second time to ``<config root>/{agents,skills,commands,references}/``.
- Text files (``.md``, ``.json``) get the ``${CLAUDE_PLUGIN_ROOT}`` placeholder rendered to the
  absolute install root, so every prompt's script path works as written.
- A file that exists with other content is moved to ``<file>.bak.<stamp>`` first, never
  overwritten; ``cannbot-manifest.json`` in the config root records every installed file with its
  sha256 and backup. Uninstall deletes only files whose hash is unchanged, restores backups,
  removes the directories that became empty and the manifest. Re-installing first uninstalls.
- Claude Code hooks only work through the native plugin (``claude --plugin-dir`` or a marketplace);
  other hosts get the hook scripts copied but not registered.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import fsio
from ..errors import ContractError

MANIFEST_NAME = "cannbot-manifest.json"
RENDERED_SUFFIXES = (".md", ".json")
IGNORED = ("__pycache__", ".pytest_cache")
DISCOVERY = ("agents", "skills", "commands", "references")
# host -> (folder under the project, folder under the home directory)
HOSTS: dict[str, tuple[str, str]] = {
    "claude": (".claude", ".claude"),
    "opencode": (".opencode", ".config/opencode"),
    "cursor": (".cursor", ".cursor"),
    "trae": (".trae", ".trae"),
    "copilot": (".github", ".copilot"),
    "codearts": (".codeartsdoer", ".codeartsdoer"),
}
LEVELS = ("project", "global")


@dataclass(frozen=True)
class CopyItem:
    source: Path
    target: str            # POSIX path relative to the config root
    render: bool


def config_root(host: str, level: str, dest: Path) -> Path:
    """Where the host reads its configuration: ``dest`` is the project (project) or home (global)."""
    if host not in HOSTS:
        raise ContractError("install.py", "--host", f"unknown host {host!r}", f"use one of {sorted(HOSTS)}")
    if level not in LEVELS:
        raise ContractError("install.py", "--level", f"unknown level {level!r}", "use project or global")
    return dest / HOSTS[host][0 if level == "project" else 1]


def _files(path: Path):
    if path.is_file():
        yield path
        return
    for item in sorted(path.rglob("*")):
        if item.is_file() and not any(part in IGNORED for part in item.parts) and item.suffix != ".pyc":
            yield item


def plan(plugin_root: Path, meta: dict) -> list[CopyItem]:
    """Every file to copy, in a stable order (pure apart from listing the plugin tree)."""
    name = meta["name"]
    groups = ("agents", "skills", "commands", "references", "hooks", "scripts", "schemas")
    items: dict[str, CopyItem] = {}
    for group in groups:
        for entry in meta.get(group, []):
            root = plugin_root / entry
            if not root.exists():
                raise ContractError(plugin_root / "plugin.json", group, f"{entry} does not exist",
                                    "fix plugin.json or restore the file")
            for src in _files(root):
                rel = src.relative_to(plugin_root).as_posix()
                render = src.suffix in RENDERED_SUFFIXES
                items[f"{name}/{rel}"] = CopyItem(src, f"{name}/{rel}", render)
                if rel.split("/", 1)[0] in DISCOVERY:
                    items[rel] = CopyItem(src, rel, render)
    return [items[key] for key in sorted(items)]


def _content(item: CopyItem, placeholder: str, install_root: Path) -> bytes:
    data = item.source.read_bytes()
    if item.render:
        data = data.decode("utf-8").replace(placeholder, install_root.as_posix()).encode("utf-8")
    return data


def _write_bytes(path: Path, data: bytes, mode_from: Path) -> None:
    """Temp file + rename (never a half-written file), keeping the source file's permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    shutil.copymode(mode_from, tmp)
    tmp.replace(path)


def read_manifest(root: Path) -> dict | None:
    path = root / MANIFEST_NAME
    return fsio.read_json(path, what="install manifest") if path.is_file() else None


def install(plugin_root: Path, meta: dict, *, host: str, level: str, dest: Path, stamp: str) -> dict:
    """Copy and render the plugin into the host config root; returns the manifest written."""
    root = config_root(host, level, dest)
    existing = read_manifest(root)
    if existing is not None and existing.get("name") != meta["name"]:
        raise ContractError(root / MANIFEST_NAME, "name", f"belongs to {existing.get('name')!r}",
                            "uninstall that configuration first or choose another --dest")
    if existing is not None:
        uninstall(host=host, level=level, dest=dest)
    created_root = not root.exists()
    install_root = root / meta["name"]
    records = []
    for item in plan(plugin_root, meta):
        target = root / item.target
        data = _content(item, meta.get("placeholder", "${CLAUDE_PLUGIN_ROOT}"), install_root)
        record = {"path": item.target, "sha256": fsio.sha256_bytes(data), "backup": None}
        if target.is_file() and target.read_bytes() != data:
            backup = target.with_name(f"{target.name}.bak.{stamp}")
            shutil.move(target, backup)
            record["backup"] = backup.relative_to(root).as_posix()
        elif target.is_file():
            record["preexisting"] = True
        _write_bytes(target, data, item.source)
        records.append(record)
    manifest = {
        "brand": meta.get("brand", "cannbot"), "name": meta["name"], "version": meta["version"],
        "team": meta.get("display_name", meta["name"]), "level": level, "tool": host,
        "installed_agents": sorted(Path(a).stem for a in meta.get("agents", [])),
        "installed_skills": sorted(Path(s).name for s in meta.get("skills", [])),
        "brand_dir": install_root.as_posix(), "install_time": stamp,
        "hooks_registered": False, "created_config_root": created_root, "files": records,
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
    removed, kept, restored = [], [], []
    for record in manifest["files"]:
        target = root / record["path"]
        if target.is_file() and fsio.sha256_file(target) == record["sha256"] and not record.get("preexisting"):
            target.unlink()
            removed.append(record["path"])
        elif target.is_file():
            kept.append(record["path"])
        if record.get("backup") and not target.exists():
            shutil.move(root / record["backup"], target)
            restored.append(record["path"])
    for record in manifest["files"]:
        for parent in (root / record["path"]).parents:
            if parent == root or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()
    (root / MANIFEST_NAME).unlink()
    if manifest.get("created_config_root") and not any(root.iterdir()):
        root.rmdir()
    return {"config_root": root.as_posix(), "removed": len(removed), "kept_modified": kept,
            "restored": restored}
