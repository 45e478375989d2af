"""The kubelet's `$(VAR)` expansion of a container's command, args and env values.

Ported from kubernetes/kubernetes third_party/forked/golang/expansion/expand.go (Expand,
tryReadVariableName, MappingFuncFor), the code the kubelet runs for `command`, `args`
(pkg/kubelet/container/helpers.go, ExpandContainerCommandAndArgs) and each env `value`:

- `$$` is one `$`;
- `$(NAME)` up to the first `)` is NAME's value when NAME is defined, otherwise left as written
  (`$(NAME)`); NAME may be anything, `$(A$(B)` reads the name `A$(B`;
- `$(` with no `)` after it, `$` before any other character, and a `$` at the end are kept.

Go scans bytes but decodes the rune after a `$` (utf8.DecodeRuneInString), so on text the scan
is the same one code point at a time.
"""

from __future__ import annotations

from collections.abc import Mapping


def expand(text: str, defined: Mapping[str, str]) -> str:
    """`text` after the kubelet's expansion with the variables `defined`."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_name, advance = _read_name(text, cursor + 1)
            out.append(defined.get(read, f"$({read})") if is_name else read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _read_name(text: str, start: int) -> tuple[str, bool, int]:
    """(what was read, whether it is a name to map, how many characters it consumed)."""
    first = text[start]
    if first == "$":  # an escaped operator
        return "$", False, 1
    if first == "(":
        closer = text.find(")", start + 1)
        if closer != -1:
            return text[start + 1 : closer], True, closer - start + 1
        return "$(", False, 1  # an incomplete reference is kept as written
    return "$" + first, False, 1
