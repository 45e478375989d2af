"""Read YAML files into SourceDocuments (with key-path line numbers); dump_yaml (yaml_dump.py).

Generic: knows nothing about squarepeg or runpod-deploy. Rules every caller gets:
- an empty file is `{}`; the top level must be a mapping;
- duplicate keys in one mapping are an error (PyYAML silently keeps the last one);
- hostile input is refused before it is built (pegboard.domain.input_limits): more than
  MAX_CONFIG_BYTES, not UTF-8 or a NUL byte, nesting deeper than MAX_NESTING_DEPTH, more than
  MAX_YAML_VALUES values once aliases are expanded (an alias bomb), an anchor inside itself,
  an integer longer than MAX_INTEGER_DIGITS;
- every failure is a ConfigError naming the file, and the line when it is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from pegboard.adapters.bounded_files import read_bounded_bytes
from pegboard.domain.documents import KeyPath, SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.input_limits import (
    MAX_CONFIG_BYTES,
    MAX_NESTING_DEPTH,
    MAX_YAML_VALUES,
    InputRejected,
    check_integer_literal,
    decode_text,
)

_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"


class _LimitExceeded(yaml.MarkedYAMLError):
    """A limit hit while composing or constructing, with the line where it was hit."""


# libyaml's event parser (PyYAML's binary wheels ship it) is ~25x faster than the pure-Python
# one, which needs ~20 µs a value: a 1 MiB file of short values would take ~10 s to refuse.
# The composer stays PyYAML's Python one, so the limits below apply to both.
_EventParser: Any
try:
    import yaml.cyaml

    _EventParser = getattr(yaml.cyaml, "CParser", None)
except ImportError:  # PyYAML built without libyaml
    _EventParser = None


class _DocumentLoader(Composer, SafeConstructor, Resolver):
    """PyYAML's safe loading with limits checked while composing, before anything is built:
    nesting past MAX_NESTING_DEPTH (the composer recurses once per level, so a deep document
    would otherwise exhaust the stack), more than MAX_YAML_VALUES nodes, and integers past
    MAX_INTEGER_DIGITS when constructed."""

    def __init__(self, text: str) -> None:
        self._events: Any
        if _EventParser is not None:
            self._events = _EventParser(text)
        else:  # no libyaml: PyYAML's pure-Python reader, scanner and parser
            self._events = yaml.SafeLoader(text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._nodes = 0

    def check_event(self, *choices: Any) -> bool:
        return bool(self._events.check_event(*choices))

    def peek_event(self) -> Any:
        return self._events.peek_event()

    def get_event(self) -> Any:
        return self._events.get_event()

    def dispose(self) -> None:
        self._events.dispose()

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_NESTING_DEPTH:
                raise _LimitExceeded(
                    problem=f"nested more than {MAX_NESTING_DEPTH} levels deep",
                    problem_mark=self.peek_event().start_mark,
                )
            if self._nodes > MAX_YAML_VALUES:
                raise _LimitExceeded(
                    problem=f"more than {MAX_YAML_VALUES} values",
                    problem_mark=self.peek_event().start_mark,
                )
            node = super().compose_node(parent, index)
            assert node is not None  # called only where an event starts a node
            return node
        finally:
            self._depth -= 1

    def construct_bounded_int(self, node: ScalarNode) -> Any:
        try:
            check_integer_literal(str(node.value))
        except InputRejected as exc:
            raise _LimitExceeded(problem=str(exc), problem_mark=node.start_mark) from None
        return self.construct_yaml_int(node)


_DocumentLoader.add_constructor(_INT_TAG, _DocumentLoader.construct_bounded_int)  # type: ignore[type-var]


def read_yaml_document(path: Path) -> SourceDocument:
    """Parse one YAML file; raise ConfigError for a missing, unreadable or malformed file."""
    source = str(path)
    try:
        raw = read_bounded_bytes(path, limit=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise _error(source, "no such file") from None
    except IsADirectoryError:
        raise _error(source, "is a directory, not a file") from None
    except OSError as exc:
        raise _error(source, f"cannot read: {exc.strerror or exc}") from None
    except InputRejected as exc:
        raise _error(source, str(exc)) from None
    return parse_yaml_document(raw, source=source)


def parse_yaml_document(text: str | bytes, *, source: str) -> SourceDocument:
    """Parse YAML text as if it were the file `source` (used by read_yaml_document and tests)."""
    try:
        if isinstance(text, bytes):
            text = decode_text(text)
        elif len(text) > MAX_CONFIG_BYTES:
            raise InputRejected(f"longer than {MAX_CONFIG_BYTES} characters")
        loader = _DocumentLoader(text)
    except InputRejected as exc:
        raise _error(source, str(exc)) from None
    except yaml.YAMLError as exc:  # a character YAML does not allow (control characters)
        raise _error(source, f"not YAML text: {exc}".splitlines()[0]) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return SourceDocument(source=source, data={}, lines={})
        _check_expanded_size(root)
        lines: dict[KeyPath, int] = {(): root.start_mark.line + 1}
        _record_lines(loader, root, (), lines, source, set())
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "malformed YAML"
        line = mark.line + 1 if mark is not None else None
        prefix = "" if isinstance(exc, _LimitExceeded) else "malformed YAML: "
        raise _error(source, f"{prefix}{problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise _error(source, f"malformed YAML: {exc}".splitlines()[0]) from None
    except RecursionError:  # a safety net: the limits above should make this unreachable
        raise _error(source, f"nested more than {MAX_NESTING_DEPTH} levels deep") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise _error(source, f"the top level must be a mapping, not {kind}", line=lines[()])
    return SourceDocument(source=source, data=data, lines=lines)


def _check_expanded_size(root: Node) -> None:
    """Refuse a document whose aliases expand past MAX_YAML_VALUES values or
    MAX_NESTING_DEPTH levels, or that holds itself, before anything is constructed.

    Each node's expanded size and depth are computed once (post-order, iterative), so the
    check costs the size of the file, not of the expansion.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if size[key] > MAX_YAML_VALUES:
                raise _LimitExceeded(
                    problem=(
                        f"more than {MAX_YAML_VALUES} values once aliases are expanded "
                        "(an alias bomb?)"
                    ),
                    problem_mark=node.start_mark,
                )
            if depth[key] > MAX_NESTING_DEPTH:
                raise _LimitExceeded(
                    problem=(
                        f"nested more than {MAX_NESTING_DEPTH} levels deep once aliases are "
                        "expanded"
                    ),
                    problem_mark=node.start_mark,
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise _LimitExceeded(
                problem="an anchor is used inside itself", problem_mark=node.start_mark
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)
    return None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _record_lines(
    loader: _DocumentLoader,
    node: Node,
    path: KeyPath,
    lines: dict[KeyPath, int],
    source: str,
    walked: set[int],
) -> None:
    """Walk the composed node tree: record each key path's line and reject duplicate keys.

    A node reached again through an alias is not walked twice (recursive anchors, alias bombs);
    paths under it fall back to the alias's own line.
    """
    if id(node) in walked:
        return
    walked.add(id(node))
    if isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault((*path, index), item.start_mark.line + 1)
            _record_lines(loader, item, (*path, index), lines, source, walked)
        return
    if not isinstance(node, MappingNode):
        return
    seen: dict[Any, int] = {}
    merged: list[Node] = []
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            # `<<: *anchor` keys may be overridden by explicit keys; record them after these.
            merged.extend(
                value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            )
            continue
        key = _key_of(loader, key_node, path, source)
        line = key_node.start_mark.line + 1
        if key in seen:
            where = format_key_path((*path, _path_part(key)))
            raise _error(
                source,
                f"duplicate key {where!r} (first defined on line {seen[key]})",
                line=line,
            )
        seen[key] = line
        lines[(*path, _path_part(key))] = line
        _record_lines(loader, value_node, (*path, _path_part(key)), lines, source, walked)
    for merged_node in merged:
        if isinstance(merged_node, MappingNode):
            for key_node, value_node in merged_node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                sub = (*path, _path_part(_key_of(loader, key_node, path, source)))
                if sub in lines:  # overridden by an explicit key (or an earlier merge)
                    continue
                lines[sub] = key_node.start_mark.line + 1
                _record_lines(loader, value_node, sub, lines, source, walked)


def _key_of(loader: _DocumentLoader, key_node: Node, path: KeyPath, source: str) -> Any:
    if not isinstance(key_node, ScalarNode):
        where = format_key_path(path) or "the top level"
        raise _error(
            source,
            f"{where}: mapping keys must be plain scalars",
            line=key_node.start_mark.line + 1,
        )
    return loader.construct_object(key_node)


def _path_part(key: Any) -> str | int:
    if isinstance(key, str):
        return key
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    return str(key)


def _error(source: str, message: str, *, line: int | None = None) -> ConfigError:
    return ConfigError([ConfigProblem(source=source, path="", message=message, line=line)])
