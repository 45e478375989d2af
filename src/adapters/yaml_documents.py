"""Read YAML files into SourceDocuments (with key-path line numbers) and dump plain data as YAML.

Generic: knows nothing about squarepeg or runpod-deploy. Rules every caller gets:
- an empty file is `{}`; the top level must be a mapping;
- duplicate keys in one mapping are an error (PyYAML silently keeps the last one);
- every failure is a ConfigError naming the file, and the line when it is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pegboard.domain.documents import KeyPath, SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _DocumentLoader(yaml.SafeLoader):
    """SafeLoader; a separate class so nothing we add leaks into yaml.SafeLoader itself."""


class _PlainDumper(yaml.SafeDumper):
    """SafeDumper that never writes anchors/aliases, even for an object that appears twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_PlainDumper.add_representer(tuple, lambda dumper, data: dumper.represent_list(list(data)))


def read_yaml_document(path: Path) -> SourceDocument:
    """Parse one YAML file; raise ConfigError for a missing, unreadable or malformed file."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _error(source, "no such file") from None
    except IsADirectoryError:
        raise _error(source, "is a directory, not a file") from None
    except OSError as exc:
        raise _error(source, f"cannot read: {exc.strerror or exc}") from None
    return parse_yaml_document(raw, source=source)


def parse_yaml_document(text: str | bytes, *, source: str) -> SourceDocument:
    """Parse YAML text as if it were the file `source` (used by read_yaml_document and tests)."""
    loader = _DocumentLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return SourceDocument(source=source, data={}, lines={})
        lines: dict[KeyPath, int] = {(): root.start_mark.line + 1}
        _record_lines(loader, root, (), lines, source, set())
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "malformed YAML"
        line = mark.line + 1 if mark is not None else None
        raise _error(source, f"malformed YAML: {problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise _error(source, f"malformed YAML: {exc}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise _error(source, f"the top level must be a mapping, not {kind}", line=lines[()])
    return SourceDocument(source=source, data=data, lines=lines)


def dump_yaml(obj: Any) -> str:
    """Block-style YAML in insertion order, unicode kept, no anchors/aliases."""
    return yaml.dump(
        obj, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


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
