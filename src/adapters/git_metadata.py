"""Deploy metadata of a local project: git sha, dirty flag, branch and lockfile hash.

The shape is 0.8.4's `capture-env` JSON and manifest `deploy_metadata`. Missing git, a folder
that is not a repository, or no lockfile give None values, never an error. `git status` runs
with --no-optional-locks so capturing never rewrites .git/index (0.8.4's did).

The sha and branch are what `git rev-parse HEAD` and `git rev-parse --abbrev-ref HEAD` print,
read from the files git reads when that is plain (git_files.py): a folder in no repository and
a repository with no commit yet need no git process at all, a repository with commits only its
`git status`. Whatever the reader is not sure of is asked of git, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from pathlib import Path

from pegboard.adapters import git_files

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


_NO_GIT: DeployMetadata = {"local_git_sha": None, "local_git_dirty": None, "local_git_branch": None}


def capture_git(project_root: Path) -> DeployMetadata:
    """The same facts as capture_git_with_git, from the repository's files where they are
    plain: only `git status` runs in a repository with commits, nothing outside one."""
    head = git_files.read_head(project_root, os.environ)
    if head is git_files.NOT_A_REPOSITORY or head is git_files.NO_COMMIT:
        return dict(_NO_GIT)
    if isinstance(head, git_files.Head):
        status = _git(project_root, "--no-optional-locks", "status", "--porcelain")
        if status is not None:  # else git may disagree with the files (ownership): ask it all
            return {
                "local_git_sha": head.sha,
                "local_git_dirty": bool(status),
                "local_git_branch": head.branch,
            }
    return capture_git_with_git(project_root)


def capture_git_with_git(project_root: Path) -> DeployMetadata:
    """`git rev-parse HEAD`, `git status --porcelain`, `git rev-parse --abbrev-ref HEAD`."""
    sha = _git(project_root, "rev-parse", "HEAD")
    if sha is None:
        return dict(_NO_GIT)
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
