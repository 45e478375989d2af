"""One output layer for both CLIs: tables, JSON and YAML from the same rows (no click here).

Rules every listing or summary follows:
- `-o table` (the default): a header line, then one line per row, columns aligned by two spaces;
  headers are the field names in UPPER CASE with `_` as a space (kubectl's and docker's rule).
- An empty value (None, "", an empty list) prints as `—` in a table; JSON and YAML keep `null`.
- `-o json`: a JSON list of objects (a summary: one object), 2-space indent, keys as given.
- `-o yaml`: the same data as block YAML.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

FORMATS = ("table", "json", "yaml")
EMPTY = "—"


def cell(value: Any) -> str:
    """A value as a table cell: `—` for nothing, `yes`/`no` for booleans, else its text."""
    if value is None or value == "" or (isinstance(value, list | tuple | dict) and not value):
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(cell(item) for item in value)
    return str(value)


def header(field: str) -> str:
    """`failure_reason` -> `FAILURE REASON` (the one case rule for every table header)."""
    return field.replace("_", " ").replace("-", " ").upper()


def render_table(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """Aligned columns, a header line first; the last column is not padded. Ends with a newline."""
    lines = [[header(column) for column in columns]]
    lines += [[cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    out = []
    for line in lines:
        padded = [text.ljust(width) for text, width in zip(line[:-1], widths, strict=False)]
        out.append("  ".join([*padded, line[-1]]).rstrip())
    return "\n".join(out) + "\n"


def render_summary(fields: Mapping[str, Any]) -> str:
    """One `KEY  value` line per field, keys aligned (a summary of one thing, as a table)."""
    keys = [header(key) for key in fields]
    width = max((len(key) for key in keys), default=0)
    lines = [
        f"{key.ljust(width)}  {cell(value)}".rstrip() for key, value in zip(keys, fields.values())
    ]
    return "\n".join(lines) + "\n" if lines else ""


def render(
    data: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    output: str,
    *,
    columns: Sequence[str] | None = None,
) -> str:
    """Rows (a listing) or one mapping (a summary) in the chosen format; ends with a newline.

    `columns` picks and orders a table's columns (default: the first row's keys); JSON and YAML
    always carry every field.
    """
    if output == "json":
        import json  # not at import time: `--help` stays fast

        return json.dumps(_plain(data), indent=2, ensure_ascii=False, default=str) + "\n"
    if output == "yaml":
        from pegboard.app.shared.seams import dump_yaml  # PyYAML only when asked for

        return dump_yaml(_plain(data))
    if output != "table":
        raise ValueError(f"unknown output format {output!r} (one of {', '.join(FORMATS)})")
    if isinstance(data, Mapping):
        return render_summary(data if columns is None else {c: data.get(c) for c in columns})
    chosen = list(columns) if columns is not None else list(data[0]) if data else []
    return render_table(chosen, data) if chosen else ""


def _plain(data: Any) -> Any:
    """JSON/YAML-safe copies (tuples -> lists, mappings -> dicts)."""
    if isinstance(data, Mapping):
        return {str(key): _plain(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(item) for item in data]
    return data


def error_line(prog: str, message: str) -> str:
    """The one error-line format of both tools: `<prog>: <message>`, newline-ended."""
    return f"{prog}: {message}\n"
