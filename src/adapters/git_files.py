"""What `git rev-parse HEAD` and `git rev-parse --abbrev-ref HEAD` print, read from the files git
reads, without a git process; anything this reader is not sure of is ASK_GIT.

Sure answers, each the one git gives:
- NOT_A_REPOSITORY: no folder from the start up to / holds a `.git` or a `HEAD` (git's discovery,
  setup.c setup_git_directory_gently_1, looks for `<dir>/.git`, then for `<dir>` itself as a
  bare repository, whose `HEAD` must exist; it can find nothing where neither exists);
- NO_COMMIT: HEAD names a branch that no loose ref file and no packed-refs line holds (a
  repository before its first commit: rev-parse fails);
- Head(sha, branch): the commit of HEAD, and `HEAD` (detached) or the branch's short name.

ASK_GIT for everything else: a variable in the environment that moves or reshapes what git
reads (_GIT_PLACES: GIT_DIR, ceilings, GIT_DISCOVERY_ACROSS_FILESYSTEM, configuration, ...;
git(1) ENVIRONMENT VARIABLES; GIT_SSL_CAINFO, GIT_EDITOR and the like change nothing here), a `.git` or `HEAD` past a file system boundary or that
is a symlink, a bare repository or a folder inside `.git`, a `.git` file or HEAD or ref of any
shape but the plain ones git writes, the reftable backend, a symbolic ref below HEAD, and a
branch whose short name could be ambiguous. refs.c refs_shorten_unambiguous_ref shortens
`refs/heads/X` to X unless X also names a ref by an earlier (or, with core.warnAmbiguousRefs,
any) rule of ref_rev_parse_rules: `X` in the git directory, `refs/X`, `refs/tags/X`,
`refs/remotes/X`, `refs/remotes/X/HEAD`; any of those present, loose or packed, is ASK_GIT.
Layout: gitrepository-layout(5) (HEAD, commondir, packed-refs, worktrees), gitrepository-
layout's `.git` file ("gitdir: <path>", relative to the file's folder).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple


class Head(NamedTuple):  # not attrs: a class less to build in every run
    sha: str
    branch: str


class _Answer:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


NOT_A_REPOSITORY = _Answer("NOT_A_REPOSITORY")
NO_COMMIT = _Answer("NO_COMMIT")
ASK_GIT = _Answer("ASK_GIT")

_SHA = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})")
# A branch name git itself would write (git-check-ref-format's rules, stricter where unsure).
_BRANCH = re.compile(r"(?!.*(?:\.\.|//|@\{|\.lock/|/\.))[A-Za-z0-9_][A-Za-z0-9_./+-]*")
_MAX_FILE_BYTES = 4096
# git(1): the variables that choose the repository, its refs or its configuration.
_GIT_PLACES = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_OBJECT_DIRECTORY",
        "GIT_NAMESPACE",
        "GIT_INDEX_FILE",
        "GIT_DEFAULT_HASH",
        "GIT_DEFAULT_REF_FORMAT",
        "GIT_REF_PARANOIA",
        "GIT_REPLACE_REF_BASE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
    }
)
_MAX_PACKED_REFS_BYTES = 64 << 20


def read_head(start: Path | str, environ: Mapping[str, str]) -> Head | _Answer:
    """rev-parse's HEAD and its short name, run in `start`; ASK_GIT where unsure."""
    if any(name in _GIT_PLACES or name.startswith("GIT_TEST_") for name in environ):
        return ASK_GIT
    try:
        return _read_head(os.path.realpath(start))
    except (OSError, ValueError, UnicodeError):
        return ASK_GIT


def _read_head(start: str) -> Head | _Answer:
    if not os.path.isdir(start) or not os.access(start, os.X_OK):
        return ASK_GIT  # git cannot start there: it says so
    device = os.stat(start).st_dev
    folder, crossed = start, False
    while True:
        dot_git = os.path.join(folder, ".git")
        if os.path.lexists(dot_git):
            return ASK_GIT if crossed else _from_dot_git(folder, dot_git)
        if os.path.lexists(os.path.join(folder, "HEAD")):
            return ASK_GIT  # a bare repository, or a folder inside .git
        parent = os.path.dirname(folder)
        if parent == folder:
            return NOT_A_REPOSITORY
        crossed = crossed or os.stat(parent).st_dev != device
        folder = parent


def _from_dot_git(folder: str, dot_git: str) -> Head | _Answer:
    mode = os.lstat(dot_git).st_mode
    if stat.S_ISDIR(mode):
        git_dir = dot_git
    elif stat.S_ISREG(mode):
        content = _read_small(dot_git)
        if content is None or not content.startswith("gitdir: "):
            return ASK_GIT
        named = content[len("gitdir: ") :].rstrip("\n")
        if not named or named != named.strip() or "\n" in named:
            return ASK_GIT
        git_dir = os.path.join(folder, named)  # an absolute `named` stays as it is
    else:
        return ASK_GIT
    common = _common_dir(git_dir)
    if common is None or not _is_repository(git_dir, common):
        return ASK_GIT
    return _resolve_head(git_dir, common)


def _common_dir(git_dir: str) -> str | None:
    """The `commondir` file of a worktree's git directory (relative to it), else itself."""
    path = os.path.join(git_dir, "commondir")
    if not os.path.lexists(path):
        return git_dir
    content = _read_small(path)
    if content is None:
        return None
    named = content.rstrip("\n")
    if not named or "\n" in named or named != named.strip():
        return None
    return os.path.join(git_dir, named)


def _is_repository(git_dir: str, common: str) -> bool:
    """setup.c is_git_directory's test (HEAD, objects/, refs/), and no reftable backend."""
    if not os.path.isdir(os.path.join(common, "objects")):
        return False
    if not os.path.isdir(os.path.join(common, "refs")):
        return False
    if os.path.lexists(os.path.join(common, "reftable")):
        return False
    config = os.path.join(common, "config")
    if os.path.lexists(config):
        text = _read_small(config, limit=1 << 20)
        if text is None or "refstorage" in text.lower():
            return False
    return stat.S_ISREG(os.lstat(os.path.join(git_dir, "HEAD")).st_mode)


def _resolve_head(git_dir: str, common: str) -> Head | _Answer:
    content = _read_small(os.path.join(git_dir, "HEAD"))
    if content is None or not content.endswith("\n"):
        return ASK_GIT
    value = content[:-1]
    if _SHA.fullmatch(value):
        return Head(sha=value, branch="HEAD")  # detached
    if not value.startswith("ref: refs/heads/"):
        return ASK_GIT
    short = value[len("ref: refs/heads/") :]
    if not _BRANCH.fullmatch(short) or short.endswith((".", "/", ".lock")):
        return ASK_GIT
    packed = _packed_refs(common)
    if packed is None:
        return ASK_GIT
    sha = _ref(f"refs/heads/{short}", common, packed)
    if sha is ASK_GIT:
        return ASK_GIT
    if sha is None:
        # An unborn HEAD: `rev-parse HEAD` then tries the other rules (refs/heads/HEAD, ...).
        return ASK_GIT if _any_ref(_rule_names("HEAD")[1:], git_dir, common, packed) else NO_COMMIT
    if _any_ref(_rule_names(short, but="refs/heads/"), git_dir, common, packed):
        return ASK_GIT  # rev-parse may print a longer name (heads/X)
    assert isinstance(sha, str)
    return Head(sha=sha, branch=short)


def _rule_names(short: str, *, but: str | None = None) -> list[str]:
    """What refs.c's ref_rev_parse_rules make of `short`, in order (without the `but` rule)."""
    rules = ("", "refs/", "refs/tags/", "refs/heads/", "refs/remotes/")
    names = [rule + short for rule in rules if rule != but]
    return [*names, f"refs/remotes/{short}/HEAD"]


def _any_ref(names: list[str], git_dir: str, common: str, packed: Mapping[str, str]) -> bool:
    """Whether any of `names` is present loose (in either directory) or packed."""
    return any(
        name in packed or any(os.path.lexists(os.path.join(d, name)) for d in (git_dir, common))
        for name in names
    )


def _ref(name: str, common: str, packed: Mapping[str, str]) -> str | _Answer | None:
    """A branch's commit: its loose file (which wins), else its packed-refs line; None: none."""
    path = os.path.join(common, name)
    if os.path.lexists(path):
        content = _read_small(path)
        if content is None or not content.endswith("\n") or not _SHA.fullmatch(content[:-1]):
            return ASK_GIT  # a symbolic ref, or a file git would call broken
        return content[:-1]
    return packed.get(name)


def _packed_refs(common: str) -> dict[str, str] | None:
    """packed-refs as {refname: sha} (peeled `^` lines skipped); None: a line of another shape."""
    path = os.path.join(common, "packed-refs")
    if not os.path.lexists(path):
        return {}
    text = _read_small(path, limit=_MAX_PACKED_REFS_BYTES)
    if text is None:
        return None
    refs: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#") or (line.startswith("^") and _SHA.fullmatch(line[1:])):
            continue
        sha, space, name = line.partition(" ")
        if not space or not _SHA.fullmatch(sha) or not name.startswith("refs/") or " " in name:
            return None
        refs[name] = sha
    return refs


def _read_small(path: str, *, limit: int = _MAX_FILE_BYTES) -> str | None:
    """A regular file's text (never a FIFO's or a device's); None: not a regular file, or
    larger than `limit`."""
    if not stat.S_ISREG(os.lstat(path).st_mode):
        return None
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        return None
    return data.decode("utf-8")
