"""Plain data -> block-style YAML: what `yaml.dump` writes, mostly without importing PyYAML.

A manifest is mappings, lists, ints, bools and short strings such as `alpine`, `500m` or
`app.kubernetes.io/managed-by`, all of which PyYAML writes plainly. `_plain_block` writes such
data itself, the way PyYAML's emitter does (yaml/emitter.py: block mappings, "indentless"
sequences under a key, `{}`/`[]` for empty collections, `analyze_scalar`'s plain-scalar rules
and yaml/resolver.py's implicit types), and gives up on anything else: a string it cannot prove
plain (spaces, quotes, `#`, a leading `-`, a word PyYAML reads back as a bool, null, number or
date...), a float, a key that is not a short string, a subclass of a built-in type. What it
gives up on goes to PyYAML whole, so the text is always PyYAML's. That saves PyYAML's import
(~4 ms: emitter, serializer, representer with base64, the resolver's regular expressions) and
its event machinery (~0.8 ms) on a `squarepeg run --dry-run`; tests/unit/test_yaml_dump.py holds
both paths to `yaml.dump` on generated data.

PyYAML, when it is needed, is entered with its `__init__` deferred (deferred_packages.py;
anything else that uses `yaml` later gets the whole package on first use) and only
`yaml.dumper` is imported; the dump is what `yaml.dump` does with a Dumper.
"""

from __future__ import annotations

import functools
import io
import re
from typing import Any

# Characters a fast-path scalar may hold, and those it may start with: none of PyYAML's
# indicators at the start, no space (so never folded at the line width), no `#`, ASCII only.
_PLAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@-")
_PLAIN_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/")
# yaml/resolver.py: the implicit bool and null words (the only implicit types a string that
# starts with a letter can match).
_BOOL_OR_NULL_WORDS = frozenset(
    spelling
    for word in ("yes", "no", "true", "false", "on", "off", "null")
    for spelling in (word, word.capitalize(), word.upper())
)
# A string that starts with a digit can be an implicit int, float or timestamp only in these
# shapes; yaml/resolver.py's own patterns decide for those (compiled on first need), anything
# else (`500m`, `512Mi`, a run id's UUID) is a string.
_INT_CHARS = frozenset("0123456789_:xabcdefABCDEF")  # 0b/0x prefixes, hex, sexagesimal
_FLOAT_CHARS = frozenset("0123456789_:.eE-+")  # every digit-led float has a `.`
# emitter.check_simple_key: a key whose text and tag ("!!str", counted though implicit) reach 128
# characters is written as `? key`.
_MAX_SIMPLE_KEY = 122
# yaml/resolver.py's implicit int, float and timestamp patterns, verbatim (re.X).
_NUMBER_OR_TIMESTAMP = r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$
|^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$
|^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
                     (?:[Tt]|[ \t]+)[0-9][0-9]?
                     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
                     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"""


@functools.cache
def _number_or_timestamp() -> re.Pattern[str]:
    return re.compile(_NUMBER_OR_TIMESTAMP, re.X)


def _may_be_number_or_timestamp(text: str) -> bool:
    """False when `text` (led by a digit) cannot match the resolver's int, float or timestamp."""
    if text[4:5] == "-" and text[:4].isdigit():  # every timestamp starts `YYYY-`
        return True
    return (_FLOAT_CHARS if "." in text else _INT_CHARS).issuperset(text)


def _plain_scalar(text: str) -> bool:
    """True when PyYAML would write `text` as a plain scalar in block context."""
    if (
        not text
        or text[0] not in _PLAIN_FIRST
        or text[-1] == ":"
        or not _PLAIN_CHARS.issuperset(text)
    ):
        return False
    if text[0].isdigit():
        return not _may_be_number_or_timestamp(text) or _number_or_timestamp().match(text) is None
    return text not in _BOOL_OR_NULL_WORDS


def _scalar(value: Any) -> str | None:
    kind = type(value)
    if kind is str:
        return value if _plain_scalar(value) else None
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    return None


class _NotPlain(Exception):
    """Raised inside _plain_block for data it leaves to PyYAML."""


def _key(key: Any) -> str:
    if type(key) is not str or len(key) > _MAX_SIMPLE_KEY or not _plain_scalar(key):
        raise _NotPlain
    return key


def _value(value: Any) -> str | None:
    """The text after `key: ` or `- ` for a scalar or an empty collection; None for a
    non-empty mapping or list (written on the following lines)."""
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        if value:
            return None
        return "{}" if kind is dict else "[]"
    text = _scalar(value)
    if text is None:
        raise _NotPlain
    return text


def _mapping(data: dict[Any, Any], indent: str, first_prefix: str, out: list[str]) -> None:
    prefix = first_prefix
    for key, value in data.items():
        text = _value(value)
        if text is not None:
            out.append(f"{prefix}{_key(key)}: {text}\n")
        else:
            out.append(f"{prefix}{_key(key)}:\n")
            if type(value) is dict:
                _mapping(value, indent + "  ", indent + "  ", out)
            else:
                _sequence(value, indent, out)  # indentless, as PyYAML writes it under a key
        prefix = indent


def _sequence(items: list[Any] | tuple[Any, ...], indent: str, out: list[str]) -> None:
    for item in items:
        text = _value(item)
        if text is not None:
            out.append(f"{indent}- {text}\n")
        elif type(item) is dict:
            _mapping(item, indent + "  ", indent + "- ", out)
        else:
            raise _NotPlain  # a list in a list: `- - a`, left to PyYAML


def _plain_block(obj: Any) -> str | None:
    """`obj` as PyYAML writes it, when it is a non-empty mapping of the data above; else None."""
    if type(obj) is not dict or not obj:
        return None
    out: list[str] = []
    try:
        _mapping(obj, "", "", out)
    except _NotPlain:
        return None
    return "".join(out)


def dump_yaml(obj: Any) -> str:
    """Block-style YAML in insertion order, unicode kept, no anchors/aliases."""
    text = _plain_block(obj)
    return text if text is not None else _pyyaml_dump(obj)


_dumper_class: Any = None  # made on first use, so a fast-path dump never imports PyYAML


def _pyyaml_dumper() -> Any:
    global _dumper_class
    if _dumper_class is None:
        from .deferred_packages import enter_deferred

        enter_deferred("yaml")
        from yaml.dumper import SafeDumper

        class _PlainDumper(SafeDumper):
            """SafeDumper that never writes anchors/aliases, even for an object seen twice."""

            def ignore_aliases(self, data: Any) -> bool:
                return True

        _PlainDumper.add_representer(tuple, lambda dumper, data: dumper.represent_list(list(data)))
        _dumper_class = _PlainDumper
    return _dumper_class


def _pyyaml_dump(obj: Any) -> str:
    stream = io.StringIO()
    # yaml.dump(obj, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False,
    # allow_unicode=True), as PyYAML's dump_all runs it
    dumper = _pyyaml_dumper()(stream, sort_keys=False, default_flow_style=False, allow_unicode=True)
    try:
        dumper.open()
        dumper.represent(obj)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()
