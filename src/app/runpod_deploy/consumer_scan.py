"""`validate --scan-consumer`: read-only checks of the project a job stages (0.8.4's list).

- `pyproject.toml`: runpod-deploy (or pegboard) declared as a runtime dependency of the job's
  own project; torch without a version pin; `uv sync` on a network volume (FUSE) without
  `UV_LINK_MODE=copy`.
- staged local files: hard-coded workstation paths (`/Users/`, `/home/`, `C:\\Users`) that will
  not exist on the pod.
Findings are warnings, not errors: the config itself is valid.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

from pegboard.app.shared.seams import read_config_text, read_record_bytes
from pegboard.domain.gpujob.spec import StorageMode
from pegboard.domain.gpujob.templates import RenderedJob
from pegboard.domain.input_limits import InputRejected, decode_text

_WORKSTATION_PATH = re.compile(r"(/Users/[A-Za-z0-9_.-]+|/home/[A-Za-z0-9_.-]+|C:\\Users\\)")
_MAX_FILE_BYTES = 1_000_000
_MAX_FILES = 5_000
_SELF_NAMES = frozenset({"runpod-deploy", "runpod_deploy", "pegboard"})


def scan_consumer(job: RenderedJob) -> list[str]:
    findings = _scan_pyproject(job)
    for staging in job.staging:
        findings += _scan_staged_paths(Path(staging.source), staging.excludes, staging.label)
    return findings


def _scan_pyproject(job: RenderedJob) -> list[str]:
    path = Path(job.project_root) / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(read_config_text(path))
    except (OSError, InputRejected, tomllib.TOMLDecodeError, RecursionError) as exc:
        return [f"{path}: cannot parse ({exc})"]
    project = data.get("project")
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    findings: list[str] = []
    for dep in deps if isinstance(deps, list) else []:
        if not isinstance(dep, str):
            continue
        name = re.split(r"[\s<>=!~;\[(]", dep.strip(), maxsplit=1)[0].lower()
        if name in _SELF_NAMES:
            findings.append(
                f"{path}: {dep!r} is a runtime dependency; the deploy tool belongs in a dev "
                "dependency group, not in what the pod installs"
            )
        if name == "torch" and not re.search(r"[<>=~]", dep):
            findings.append(
                f"{path}: torch is not pinned ({dep!r}); the pod may pull another CUDA build"
            )
    commands = [c.command for c in (*job.setup, *job.preflight)] + [job.run.body]
    on_volume = job.spec.storage.mode is StorageMode.NETWORK_VOLUME
    uses_uv_sync = any("uv sync" in text for text in commands)
    link_mode_set = any("UV_LINK_MODE" in text for text in commands) or (
        "UV_LINK_MODE" in job.remote_env.exports
    )
    if on_volume and uses_uv_sync and not link_mode_set:
        findings.append(
            "`uv sync` on a network volume (FUSE) without UV_LINK_MODE=copy: hard links fail "
            "there; add it to remote_env.exports"
        )
    return findings


def _scan_staged_paths(source: Path, excludes: Sequence[str], label: str) -> list[str]:
    if not source.exists():
        return [f"staging {label!r}: source {source} does not exist"]
    findings: list[str] = []
    base = source if source.is_dir() else source.parent
    for path in _walk(source, base, excludes):
        try:
            if path.stat().st_size > _MAX_FILE_BYTES:
                continue
            # Bounded even so: a device or a file growing while it is read has no honest size.
            text = decode_text(read_record_bytes(path, _MAX_FILE_BYTES))
        except (OSError, InputRejected):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = _WORKSTATION_PATH.search(line)
            if match:
                findings.append(
                    f"staging {label!r}: {path}:{number}: hard-coded local path {match.group(0)!r}"
                )
                break
    return findings


def _walk(source: Path, base: Path, excludes: Sequence[str]) -> Iterator[Path]:
    if source.is_file():
        yield source
        return
    count = 0
    stack = [source]
    while stack and count < _MAX_FILES:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            relative = entry.relative_to(base).as_posix()
            if _excluded(relative, entry.name, entry.is_dir(), excludes):
                continue
            if entry.is_dir() and not entry.is_symlink():
                stack.append(entry)
            elif entry.is_file():
                count += 1
                yield entry


def _excluded(relative: str, name: str, is_dir: bool, excludes: Sequence[str]) -> bool:
    """A small subset of rsync's exclude rules: `dir/` patterns, globs, `**/` prefixes."""
    for pattern in excludes:
        dir_only = pattern.endswith("/")
        core = pattern.rstrip("/")
        if dir_only and not is_dir:
            continue
        core = core[3:] if core.startswith("**/") else core
        if "/" in core.strip("/"):
            if fnmatch.fnmatch(relative, core.lstrip("/")):
                return True
        elif fnmatch.fnmatch(name, core):
            return True
    return False
