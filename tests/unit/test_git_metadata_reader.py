"""The git reader (adapters/git_files.py) against real `git` in temporary repositories: the
manifest's git facts are the very ones `git rev-parse HEAD`, `git status --porcelain` and
`git rev-parse --abbrev-ref HEAD` give (capture_git_with_git), with no git process outside a
repository or before a first commit and only `git status` in a repository with commits."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pegboard.adapters import git_files, git_metadata

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV, "HOME": str(cwd)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def repo(path: Path, *, commits: int = 1) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for n in range(commits):
        (path / "f.txt").write_text(f"{n}\n")
        git(path, "add", "f.txt")
        git(path, "commit", "-q", "-m", f"c{n}")
    return path


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The git processes capture_git starts (they still run)."""
    calls: list[tuple[str, ...]] = []
    real = git_metadata._git

    def counted(cwd: Path, *args: str) -> str | None:
        calls.append(args)
        return real(cwd, *args)

    monkeypatch.setattr(git_metadata, "_git", counted)
    return calls


@pytest.fixture(autouse=True)
def _no_git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)


def same_as_git(root: Path, calls: list[tuple[str, ...]]) -> int:
    """capture_git(root) == capture_git_with_git(root); the git processes capture_git ran."""
    calls.clear()
    fast = git_metadata.capture_git(root)
    ran = len(calls)
    assert fast == git_metadata.capture_git_with_git(root)
    return ran


def test_outside_any_repository_no_git_runs(
    tmp_path: Path, git_calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.setenv("GIT_SSL_CAINFO", "/etc/ssl/certs/ca-certificates.crt")  # changes nothing
    assert same_as_git(tmp_path / "a" / "b", git_calls) == 0
    assert git_metadata.capture_git(tmp_path)["local_git_sha"] is None


def test_a_repository_without_commits_needs_no_git(
    tmp_path: Path, git_calls: list[tuple[str, ...]]
) -> None:
    root = repo(tmp_path / "r", commits=0)
    (root / "sub").mkdir()
    assert same_as_git(root, git_calls) == 0
    assert same_as_git(root / "sub", git_calls) == 0


@pytest.mark.parametrize("dirty", [False, True])
def test_a_branch_with_commits_runs_only_git_status(
    tmp_path: Path, git_calls: list[tuple[str, ...]], dirty: bool
) -> None:
    root = repo(tmp_path / "r", commits=2)
    (root / "deep" / "er").mkdir(parents=True)
    if dirty:
        (root / "f.txt").write_text("changed\n")
    assert same_as_git(root / "deep" / "er", git_calls) == 1
    assert git_calls[0] == ("--no-optional-locks", "status", "--porcelain")
    facts = git_metadata.capture_git(root)
    assert facts["local_git_branch"] == "main" and facts["local_git_dirty"] is dirty
    assert facts["local_git_sha"] == git(root, "rev-parse", "HEAD")


def test_packed_refs_a_branch_with_a_slash_and_a_detached_head(
    tmp_path: Path, git_calls: list[tuple[str, ...]]
) -> None:
    root = repo(tmp_path / "r", commits=2)
    git(root, "checkout", "-q", "-b", "feature/x.y")
    git(root, "pack-refs", "--all")
    assert not (root / ".git" / "refs" / "heads" / "feature").exists() or not list(
        (root / ".git" / "refs" / "heads" / "feature").iterdir()
    )
    assert same_as_git(root, git_calls) == 1
    assert git_metadata.capture_git(root)["local_git_branch"] == "feature/x.y"
    git(root, "checkout", "-q", "--detach", "HEAD~1")
    assert same_as_git(root, git_calls) == 1
    assert git_metadata.capture_git(root)["local_git_branch"] == "HEAD"


def test_a_worktree_and_a_submodule_style_gitfile(
    tmp_path: Path, git_calls: list[tuple[str, ...]]
) -> None:
    root = repo(tmp_path / "r", commits=2)
    git(root, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), "HEAD~1")
    assert (tmp_path / "wt" / ".git").is_file()
    assert same_as_git(tmp_path / "wt", git_calls) == 1
    assert git_metadata.capture_git(tmp_path / "wt")["local_git_branch"] == "side"
    git(root, "pack-refs", "--all")
    assert same_as_git(tmp_path / "wt", git_calls) == 1
    git(root, "worktree", "add", "-q", "--detach", str(tmp_path / "wt2"))
    assert same_as_git(tmp_path / "wt2", git_calls) == 1
    # A `.git` file with a relative gitdir, as submodules have.
    moved = repo(tmp_path / "m" / "inner", commits=1)
    shutil.move(str(moved / ".git"), str(tmp_path / "m" / "inner.git"))
    (moved / ".git").write_text("gitdir: ../inner.git\n")
    git(moved, "config", "core.worktree", str(moved))
    assert same_as_git(moved, git_calls) == 1


@pytest.mark.parametrize(
    "rival",
    [
        ("tag", "main"),  # rev-parse --abbrev-ref prints heads/main
        ("update-ref", "refs/remotes/main"),
        ("update-ref", "refs/main"),
    ],
)
def test_an_ambiguous_branch_name_is_asked_of_git(
    tmp_path: Path, git_calls: list[tuple[str, ...]], rival: tuple[str, str]
) -> None:
    root = repo(tmp_path / "r")
    command, name = rival
    if command == "tag":
        git(root, "tag", name)
    else:
        git(root, "update-ref", name, "HEAD")
    assert same_as_git(root, git_calls) == 3
    if command == "tag":
        assert git_metadata.capture_git(root)["local_git_branch"] == "heads/main"


def test_an_unborn_head_beside_a_branch_named_head_is_asked_of_git(
    tmp_path: Path, git_calls: list[tuple[str, ...]]
) -> None:
    root = repo(tmp_path / "r")
    git(root, "update-ref", "refs/heads/HEAD", "HEAD")
    git(root, "symbolic-ref", "HEAD", "refs/heads/unborn")
    assert same_as_git(root, git_calls) > 0


@pytest.mark.parametrize(
    "setup",
    [
        lambda root: (root / ".git" / "HEAD").write_text("ref: refs/heads/main"),  # no newline
        lambda root: (root / ".git" / "refs" / "heads" / "main").write_text("ref: refs/x\n"),
        lambda root: (root / ".git" / "packed-refs").write_text("garbage\n"),
        lambda root: (root / ".git" / "objects").rename(root / "objects-moved"),
        lambda root: (root / ".git" / "reftable").mkdir(),
    ],
    ids=["head-no-newline", "symref-branch", "bad-packed-refs", "no-objects", "reftable"],
)
def test_shapes_the_reader_does_not_know_are_asked_of_git(
    tmp_path: Path, git_calls: list[tuple[str, ...]], setup: Callable[[Path], object]
) -> None:
    root = repo(tmp_path / "r")
    setup(root)
    assert git_files.read_head(root, {}) is git_files.ASK_GIT
    same_as_git(root, git_calls)


def test_bare_repositories_git_directories_and_git_variables_are_asked_of_git(
    tmp_path: Path, git_calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git(bare, "init", "-q", "--bare")
    assert git_files.read_head(bare, {}) is git_files.ASK_GIT
    same_as_git(bare, git_calls)
    root = repo(tmp_path / "r")
    assert git_files.read_head(root / ".git" / "refs", {}) is git_files.ASK_GIT
    same_as_git(root / ".git" / "refs", git_calls)
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    monkeypatch.setenv("GIT_DIR", str(root / ".git"))
    assert git_files.read_head(elsewhere, os.environ) is git_files.ASK_GIT
    assert same_as_git(elsewhere, git_calls) == 3
    assert git_metadata.capture_git(elsewhere)["local_git_sha"] == git(root, "rev-parse", "HEAD")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert same_as_git(root / ".git" / "..", git_calls) == 3


def test_a_missing_folder_and_a_fifo_head(tmp_path: Path, git_calls: list[tuple[str, ...]]) -> None:
    same_as_git(tmp_path / "absent", git_calls)
    root = repo(tmp_path / "r")
    (root / ".git" / "HEAD").unlink()
    os.mkfifo(root / ".git" / "HEAD")  # read, it would block
    assert git_files.read_head(root, {}) is git_files.ASK_GIT
