"""Where both tools keep config, data and state: the XDG base directories, one rule.

`$XDG_CONFIG_HOME`, `$XDG_DATA_HOME`, `$XDG_STATE_HOME` when set to an absolute path (the spec
says to ignore a relative one), else `~/.config`, `~/.local/share`, `~/.local/state` under the
given home. `first_existing` reads a file from its new place and, when it is only at an older
one, from there (old paths keep working; nothing is moved behind the user's back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

_DEFAULTS = {
    "XDG_CONFIG_HOME": Path(".config"),
    "XDG_DATA_HOME": Path(".local") / "share",
    "XDG_STATE_HOME": Path(".local") / "state",
}


def _base(variable: str, environ: Mapping[str, str], home: str | Path) -> Path:
    value = environ.get(variable, "")
    if value and Path(value).is_absolute():
        return Path(value)
    return Path(home) / _DEFAULTS[variable]


def config_home(environ: Mapping[str, str], home: str | Path) -> Path:
    return _base("XDG_CONFIG_HOME", environ, home)


def data_home(environ: Mapping[str, str], home: str | Path) -> Path:
    return _base("XDG_DATA_HOME", environ, home)


def state_home(environ: Mapping[str, str], home: str | Path) -> Path:
    return _base("XDG_STATE_HOME", environ, home)


def first_existing(candidates: Sequence[Path]) -> Path | None:
    """The first candidate that is a file (the new location first, then the old ones)."""
    for candidate in dict.fromkeys(candidates):
        if candidate.is_file():
            return candidate
    return None
