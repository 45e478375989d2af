"""The apiserver's response warnings: RFC 7234 `Warning` headers, `299 - "text"`, one per
header (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/warning.go writes
them; client-go's ParseWarningHeaders reads them back). The official Python client drops them,
so the adapter reads them from the raw response it already holds: no extra request or parse
when there are none."""

from __future__ import annotations

from collections.abc import Iterable


def parse_warning_headers(values: Iterable[str]) -> list[str]:
    """The texts of code-299 warnings, unescaped; malformed headers are skipped."""
    texts = []
    for value in values:
        rest = value.strip()
        while rest:
            code, _, rest = rest.partition(" ")
            _agent, _, rest = rest.partition(" ")
            if not rest.startswith('"'):
                break
            text, rest = _quoted(rest)
            if text is None:
                break
            if code == "299" and text:
                texts.append(text)
            rest = rest.lstrip()
            if rest.startswith('"'):  # an optional warn-date
                _, rest = _quoted(rest)
                rest = (rest or "").lstrip()
            if not rest.startswith(","):
                break
            rest = rest[1:].lstrip()
    return texts


def _quoted(text: str) -> tuple[str | None, str]:
    """A quoted-string at the start of `text` (backslash escapes) and what follows it."""
    out = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            out.append(text[index + 1])
            index += 2
            continue
        if char == '"':
            return "".join(out), text[index + 1 :]
        out.append(char)
        index += 1
    return None, ""
