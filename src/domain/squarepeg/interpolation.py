"""`${VAR}` interpolation of config string values (squarepeg 0.4.1 syntax, kept exactly).

- `${NAME}`: the variable's value; unset is an error. NAME is `[A-Za-z_][A-Za-z0-9_]*`.
- `${NAME:-default}`: bash `:-`, so an empty value counts as unset. The default is literal (not
  rescanned) and may hold anything but `}`.
- `$$` is a literal `$` (so `$${X}` is the text `${X}`); a bare `$VAR` or lone `$` is left alone.
- Any other `${...}` is a malformed reference.

Only string values are touched, never mapping keys; the results are strings and are never
re-expanded. Every problem in a document is reported at once.

Output is bounded like runpod-deploy's templates: one string may expand to at most
MAX_RENDERED_CHARS and a document to MAX_TOTAL_RENDERED_CHARS (a 1 MiB file of `${PATH}`
would otherwise become gigabytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import KeyPath, SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.input_limits import MAX_RENDERED_CHARS, MAX_TOTAL_RENDERED_CHARS

_REFERENCE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_SHOWN_REFERENCE_CHARS = 40


@attrs.frozen
class InterpolationProblem:
    """One bad reference inside one string (no location: the caller knows where the string is)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    message: str


def interpolate_string(text: str, environ: Mapping[str, str]) -> str:
    """Interpolate one string; raise ConfigError (without a location) on the first problem."""
    result, problems = _interpolate(text, environ)
    if problems:
        raise ConfigError(
            [ConfigProblem(source="<value>", path="", message=p.message) for p in problems]
        )
    return result


def interpolate_document(doc: SourceDocument, environ: Mapping[str, str]) -> SourceDocument:
    """A copy of `doc` with every string value interpolated; ConfigError lists every problem."""
    problems: list[ConfigProblem] = []
    total = 0  # characters produced so far; past the limit, strings are left as written

    def walk(value: Any, path: KeyPath) -> Any:
        nonlocal total
        if isinstance(value, str):
            result, found = _interpolate(value, environ)
            before, total = total, total + len(result)
            if total > MAX_TOTAL_RENDERED_CHARS and result is not value:
                result = value
                if before <= MAX_TOTAL_RENDERED_CHARS:  # reported once, where it crossed
                    found = [_too_long(f"the file expands to more than {MAX_TOTAL_RENDERED_CHARS}")]
            problems.extend(
                ConfigProblem(
                    source=doc.source,
                    path=format_key_path(path),
                    message=problem.message,
                    line=doc.line_of(path),
                )
                for problem in found
            )
            return result
        if isinstance(value, Mapping):
            return {key: walk(item, (*path, _part(key))) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, (*path, index)) for index, item in enumerate(value)]
        return value

    data = walk(doc.data, ())
    if problems:
        raise ConfigError(problems)
    return SourceDocument(source=doc.source, data=data, lines=doc.lines)


def escape(text: str) -> str:
    """The config spelling of a literal text: every `$` doubled."""
    return text.replace("$", "$$")


def _interpolate(text: str, environ: Mapping[str, str]) -> tuple[str, list[InterpolationProblem]]:
    if "$" not in text:
        return text, []
    out: list[str] = []
    problems: list[InterpolationProblem] = []
    position = 0
    size = 0
    for start, end, replacement, problem in _scan(text, environ):
        out.append(text[position:start])
        out.append(replacement)
        size += start - position + len(replacement)
        if size > MAX_RENDERED_CHARS:  # checked as it grows: never built past the limit
            return text, [_too_long(f"expands to more than {MAX_RENDERED_CHARS}")]
        if problem is not None:
            problems.append(problem)
        position = end
    out.append(text[position:])
    return "".join(out), problems


def _scan(
    text: str, environ: Mapping[str, str]
) -> Iterator[tuple[int, int, str, InterpolationProblem | None]]:
    """Yield (start, end, replacement, problem) for each `$$` and `${...}` in `text`."""
    index = text.find("$")
    while index != -1:
        following = text[index + 1 : index + 2]
        if following == "$":
            yield index, index + 2, "$", None
            index = text.find("$", index + 2)
            continue
        if following != "{":
            index = text.find("$", index + 1)
            continue
        close = text.find("}", index + 2)
        if close == -1:
            shown = _shorten(text[index:])
            yield index, len(text), text[index:], _malformed(shown, "no closing '}'")
            return
        reference = text[index : close + 1]
        match = _REFERENCE.fullmatch(text, index + 2, close)
        if match is None:
            yield index, close + 1, reference, _malformed(_shorten(reference), None)
        else:
            name, default = match.group(1), match.group(2)
            value = environ.get(name)
            if default is not None:
                yield index, close + 1, value if value else default, None
            elif value is None:
                yield index, close + 1, reference, _unset(name)
            else:
                yield index, close + 1, value, None
        index = text.find("$", close + 1)


def _too_long(what: str) -> InterpolationProblem:
    return InterpolationProblem(f"{what} characters once ${{VAR}} references are filled in")


def _unset(name: str) -> InterpolationProblem:
    return InterpolationProblem(
        f"environment variable {name} is not set (referenced as ${{{name}}}); set it, or give "
        f"a default with ${{{name}:-default}}"
    )


def _malformed(reference: str, why: str | None) -> InterpolationProblem:
    hint = (
        "use ${NAME} or ${NAME:-default} (NAME: letters, digits, '_'; not starting with a "
        "digit), or $$ for a literal $"
    )
    detail = f" ({why})" if why else ""
    return InterpolationProblem(f"malformed reference {reference!r}{detail}; {hint}")


def _shorten(text: str) -> str:
    if len(text) <= _SHOWN_REFERENCE_CHARS:
        return text
    return text[: _SHOWN_REFERENCE_CHARS - 1] + "…"


def _part(key: Any) -> str | int:
    if isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool)):
        return key
    return str(key)
