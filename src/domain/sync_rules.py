"""rsync-style exclude patterns and --chmod specs, for the pure-Python copy and the fakes.

Supported: a trailing "/" matches directories only; a leading "/" anchors at the transfer root;
a pattern with another "/" (or "**") is matched against the end of the relative path at a
component boundary, otherwise against the last component; "*" and "?" stop at "/", "**" does
not, "**/" also matches no directory at all, "[...]" is a character class.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr


@attrs.frozen
class _Rule:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    regex: re.Pattern[str]
    dirs_only: bool


def _translate(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(glob[i]))
                i += 1
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def _compile(pattern: str) -> _Rule:
    dirs_only = pattern.endswith("/")
    body = pattern.rstrip("/")
    if body.startswith("/"):
        regex = "^" + _translate(body[1:]) + "$"
    else:
        # Without "/" the glob cannot cross a component, so this matches the last component.
        regex = "(?:^|/)" + _translate(body) + "$"
    return _Rule(re.compile(regex), dirs_only)


class ExcludeMatcher:
    """Decides whether a path relative to the transfer root is excluded."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._rules = tuple(_compile(p) for p in patterns if p.strip())

    def excluded(self, relative_path: str, *, is_dir: bool) -> bool:
        path = relative_path.strip("/")
        return any(
            (is_dir or not rule.dirs_only) and rule.regex.search(path) for rule in self._rules
        )


_CHMOD_PART = re.compile(r"^([DF]?)([0-7]{3,4})$")


@attrs.frozen
class ChmodSpec:
    """A numeric rsync --chmod spec: modes for files and for directories (None: unchanged)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    file_mode: int | None
    dir_mode: int | None


def parse_chmod(spec: str) -> ChmodSpec:
    """Parse "F600", "D755,F644" or "644"; ValueError for the symbolic forms we do not support."""
    file_mode: int | None = None
    dir_mode: int | None = None
    for part in spec.split(","):
        match = _CHMOD_PART.match(part.strip())
        if match is None:
            raise ValueError(f"unsupported chmod spec {spec!r}: use numeric forms like F600,D700")
        kind, digits = match.groups()
        mode = int(digits, 8)
        if kind in ("", "F"):
            file_mode = mode
        if kind in ("", "D"):
            dir_mode = mode
    return ChmodSpec(file_mode=file_mode, dir_mode=dir_mode)
