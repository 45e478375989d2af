"""cattrs structuring errors as ConfigProblems, for every config validator (pure).

Both validators (squarepeg's config, runpod-deploy's job spec) structure with a cattrs Converter
in detailed-validation mode and turn its exception groups into one `(key path, message)` per
problem here: the path comes from cattrs' notes, an unknown key gets "did you mean", and each
validator says in `leaf` what any other error means to its users.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs
from cattrs.errors import (
    AttributeValidationNote,
    ForbiddenExtraKeysError,
    IterableValidationNote,
)

from pegboard.domain.documents import KeyPath, SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem

Found = tuple[KeyPath, str]
# (key, names the class knows, the class) -> the message for that unknown key
UnknownKey = Callable[[object, Sequence[str], type | None], str]
# an error that is neither a group nor an unknown key, at `path` -> its problems
Leaf = Callable[[BaseException, KeyPath], Iterable[Found]]


def did_you_mean(key: object, known: Iterable[str]) -> str | None:
    """The known name closest to a mistyped `key`, if one is close enough."""
    if not isinstance(key, str):
        return None
    import difflib  # only for a mistyped key: a run of a valid config does not import it

    close = difflib.get_close_matches(key, list(known), n=1)
    return close[0] if close else None


def unknown_key_message(key: object, known: Iterable[str], *, list_known: bool = False) -> str:
    """`unknown key 'x'[; expected one of: ...][ (did you mean 'y'?)]`."""
    names = sorted(known)
    message = f"unknown key {key!r}"
    if list_known:
        message += f"; expected one of: {', '.join(names)}"
    suggestion = did_you_mean(key, names)
    if suggestion is not None:
        message += f" (did you mean {suggestion!r}?)"
    return message


def leaf_text(exc: BaseException, path: KeyPath) -> Iterable[Found]:
    """The default leaf: the exception's own text."""
    return [(path, str(exc) or type(exc).__name__)]


def cattrs_problems(
    exc: BaseException,
    path: KeyPath = (),
    *,
    leaf: Leaf = leaf_text,
    unknown_key: UnknownKey | None = None,
    transparent_attributes: frozenset[str] = frozenset(),
) -> Iterator[Found]:
    """Every problem inside a cattrs error, with its key path.

    `transparent_attributes` names attrs fields that are not keys the user wrote (a field fed the
    whole mapping), so they add nothing to the path.
    """
    if isinstance(exc, ForbiddenExtraKeysError):
        known = [field.name for field in attrs.fields(exc.cl)] if exc.cl else []
        message = unknown_key or (lambda key, names, _cls: unknown_key_message(key, names))
        for key in sorted(exc.extra_fields, key=str):
            yield (*path, key), message(key, known, exc.cl)
        return
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from cattrs_problems(
                sub,
                (*path, *note_path(sub, transparent_attributes)),
                leaf=leaf,
                unknown_key=unknown_key,
                transparent_attributes=transparent_attributes,
            )
        return
    yield from leaf(exc, path)


def note_path(exc: BaseException, transparent: frozenset[str] = frozenset()) -> KeyPath:
    """The key or index that cattrs noted on `exc` (an attribute name or a list index)."""
    for note in getattr(exc, "__notes__", ()):
        if isinstance(note, AttributeValidationNote):
            return () if note.name in transparent else (note.name,)
        if isinstance(note, IterableValidationNote):
            index = note.index
            return (index if isinstance(index, str | int) else str(index),)
    return ()


def config_error(document: SourceDocument, found: Iterable[Found]) -> ConfigError:
    """One ConfigError listing every problem in file order (problems without a line last)."""
    problems = [
        ConfigProblem(
            source=document.source,
            path=format_key_path(path),
            message=message,
            line=document.line_of(path),
        )
        for path, message in found
    ]
    problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return ConfigError(problems)
