"""Deploy metadata of a local project: git sha, dirty flag, branch and lockfile hash.

The shape is 0.8.4's `capture-env` JSON and manifest `deploy_metadata`. Missing git, a folder
that is not a repository, or no lockfile give None values, never an error. `git status` runs
with --no-optional-locks so capturing never rewrites .git/index (0.8.4's did).
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
from pathlib import Path

logger = logging.getLogger(__name__)

LOCKFILES = ("uv.lock", "requirements.txt")
_GIT_TIMEOUT_SEC = 10

DeployMetadata = dict[str, str | bool | None]


def capture_deploy_metadata(project_root: Path) -> DeployMetadata:
    """Git state and lockfile hash of `project_root`."""
    metadata: DeployMetadata = {}
    metadata.update(capture_git(project_root))
    metadata.update(capture_lockfile(project_root))
    return metadata


def capture_git(project_root: Path) -> DeployMetadata:
    sha = _git(project_root, "rev-parse", "HEAD")
    if sha is None:
        return {"local_git_sha": None, "local_git_dirty": None, "local_git_branch": None}
    status = _git(project_root, "--no-optional-locks", "status", "--porcelain")
    return {
        "local_git_sha": sha,
        "local_git_dirty": None if status is None else bool(status),
        "local_git_branch": _git(project_root, "rev-parse", "--abbrev-ref", "HEAD"),
    }


def capture_lockfile(project_root: Path) -> DeployMetadata:
    """The first of uv.lock / requirements.txt, with its sha256."""
    for name in LOCKFILES:
        path = project_root / name
        if path.is_file():
            return {
                "payload_lockfile": name,
                "payload_lockfile_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
    return {"payload_lockfile": None, "payload_lockfile_sha256": None}


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_SEC,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.debug("git %s failed in %s: %s", " ".join(args), cwd, exc)
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip()
