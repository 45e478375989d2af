"""SourceDocument: one parsed input file (or built-in layer) with the line of every key path.

Generic on purpose: squarepeg's config layers and runpod-deploy's job spec both use it, so error
messages can say `file:line: a.b[0].c: problem` without the domain ever touching YAML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

__all__ = [
    "KeyPath",
    "SourceDocument",
    "format_key_path",
]

KeyPath = tuple[str | int, ...]
"""A path into a document: mapping keys as strings, list indices as ints."""


@attrs.frozen
class SourceDocument:
    """A mapping read from `source` (a file path, or a label such as "<built-in defaults>")."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    source: str
    data: dict[str, Any]
    # 1-based line of each key path: ("defaults", "env", "FOO") or ("volumes", "x", "items", 0).
    lines: Mapping[KeyPath, int] = attrs.field(factory=dict)

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The line of `path`, else of its nearest ancestor that has one; None when unknown."""
        key = tuple(path)
        while True:
            line = self.lines.get(key)
            if line is not None:
                return line
            if not key:
                return None
            key = key[:-1]


def format_key_path(path: Sequence[str | int]) -> str:
    """Dotted form for messages: ("a", "b", 0, "c") -> "a.b[0].c"."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
