"""Reading run records back: summaries, diffs, timelines and event queries (pure functions).

Works on the parsed JSON of manifests and events written by runpod-deploy 0.8.4 (schema "v2")
and by pegboard; every field is optional, so a record missing a newer field (failure phase,
cloud type, ...) or an older one still prints. Output shapes follow 0.8.4's commands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from pegboard.domain.errors import UsageError
from pegboard.domain.input_limits import (
    MAX_RECORD_LINE_BYTES,
    InputRejected,
    check_depth,
    decode_text,
    loads_json,
)

MANIFEST_FILENAME = "runpod_deploy_pull_manifest.json"
EVENTS_FILENAME = "events.jsonl"
_MISSING = "—"

# Fields pegboard adds to the manifest; shown only when present (0.8.4 manifests lack them).
_NEWER_KEYS = ("outcome", "failure_phase", "failure_reason", "provider")


# --- durations and filters ------------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_SINCE_SECONDS = 100 * 366 * 86400  # a century: longer than any record, and a valid datetime


def parse_since(text: str) -> int:
    """`30s`, `5m`, `1h`, `7d` and compounds like `1h30m` or `2d12h` -> seconds."""
    parts = _DURATION_PART.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise UsageError(
            f"--since must be N followed by s, m, h or d, possibly repeated (30m, 1h30m, 7d); "
            f"got {text!r}"
        )
    # Digits are capped before int() so 10,000 of them cost nothing and raise nothing.
    if any(len(n.lstrip("0")) > 12 for n, _ in parts):
        raise UsageError(f"--since must be at most 100 years, got {text!r}")
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if seconds > MAX_SINCE_SECONDS:
        raise UsageError(f"--since must be at most 100 years, got {text!r}")
    return seconds


def parse_filters(raw: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--filter KEY=VALUE` values; keys are identifiers, values exact strings."""
    filters: list[tuple[str, str]] = []
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--filter expects KEY=VALUE, got {item!r}")
        if not key.isidentifier():
            raise UsageError(f"--filter key must be an identifier, got {key!r}")
        filters.append((key, value))
    return tuple(filters)


def event_matches(
    event: Mapping[str, Any],
    *,
    filters: Sequence[tuple[str, str]],
    not_before: datetime | None,
) -> bool:
    """AND of exact-string filters, and (with --since) a timestamp at or after `not_before`."""
    if not_before is not None:
        ts = _parse_ts(event.get("ts_utc"))
        if ts is None or ts < not_before:
            return False
    return all(key in event and _as_text(event[key]) == value for key, value in filters)


def parse_events(data: bytes | str) -> tuple[list[dict[str, Any]], list[str]]:
    """Events from events.jsonl, plus a warning for each bad line; a bad line is skipped,
    never the file: malformed JSON, not UTF-8, a NUL byte, longer than MAX_RECORD_LINE_BYTES,
    nested too deeply, a number out of range, not an object.

    Lines end at "\n" only: JSON strings may hold U+2028 and friends, which splitlines() splits.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    events: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_RECORD_LINE_BYTES:
            warnings.append(f"line {number}: longer than {MAX_RECORD_LINE_BYTES} bytes; skipped")
            continue
        try:
            entry = loads_json(line.decode("utf-8"))  # a NUL is malformed JSON already
        except UnicodeDecodeError:
            warnings.append(f"line {number}: not valid UTF-8; skipped")
            continue
        except json.JSONDecodeError as exc:
            warnings.append(f"line {number}: malformed JSON ({exc.msg}); skipped")
            continue
        except ValueError as exc:  # InputRejected, and int/float conversions json may raise
            warnings.append(f"line {number}: {exc}; skipped")
            continue
        if isinstance(entry, dict):
            events.append(entry)
        else:
            warnings.append(f"line {number}: not a JSON object; skipped")
    return events, warnings


def parse_manifest(data: bytes) -> dict[str, Any]:
    """A manifest file's bytes -> its JSON object; InputRejected (one line) when it is not one."""
    try:
        manifest = loads_json(decode_text(data))
    except json.JSONDecodeError as exc:
        raise InputRejected(f"malformed JSON ({exc.msg}, line {exc.lineno})") from None
    except InputRejected:
        raise
    except ValueError as exc:
        raise InputRejected(str(exc)) from None
    if not isinstance(manifest, dict):
        raise InputRejected(f"a JSON {type(manifest).__name__}, not an object")
    check_depth(manifest)
    return manifest


# --- events ---------------------------------------------------------------------------------


def format_timeline(events: Sequence[Mapping[str, Any]]) -> str:
    """`[+M:SS] event k=v ...`, offsets from the first event with a timestamp."""
    anchor = next(
        (ts for ts in (_parse_ts(e.get("ts_utc")) for e in events) if ts is not None), None
    )
    lines = []
    for event in events:
        ts = _parse_ts(event.get("ts_utc"))
        offset = "[+--:--]" if anchor is None or ts is None else _offset(ts, anchor)
        lines.append(_event_line(offset, event, skip={"ts_utc", "event"}))
    return "\n".join(lines)


def format_event_row(event: Mapping[str, Any]) -> str:
    """One events-query line: `[ts] run_dir event k=v ...`."""
    prefix = f"[{event.get('ts_utc') or ''}] {event.get('run_dir') or ''}"
    return _event_line(prefix, event, skip={"ts_utc", "event", "run_dir"})


def _event_line(prefix: str, event: Mapping[str, Any], *, skip: set[str]) -> str:
    fields = " ".join(f"{k}={_event_value(v)}" for k, v in event.items() if k not in skip)
    return f"{prefix} {event.get('event') or '?'} {fields}".rstrip()


def _offset(ts: datetime, anchor: datetime) -> str:
    seconds = (ts - anchor).total_seconds()
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(int(abs(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"[{sign}{hours}:{minutes:02d}:{secs:02d}]"
    return f"[{sign}{minutes}:{secs:02d}]"


def _event_value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"' if (" " in value or '"' in value) else value
    return _as_text(value)


# --- manifests ------------------------------------------------------------------------------


@attrs.frozen
class RunRow:
    """One `ls-runs` row."""

    timestamp: str
    job: str | None
    pod_id: str | None
    gpu_id: str | None
    datacenter_id: str | None
    wall_time_sec: float | None
    failed: bool | None
    estimated_cost_usd: float | None
    failure_phase: str | None = None

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def run_row(run_dir_name: str, manifest: Mapping[str, Any]) -> RunRow:
    return RunRow(
        timestamp=run_dir_name,
        job=_opt_str(manifest.get("job_name")),
        pod_id=_opt_str(manifest.get("pod_id")),
        gpu_id=_opt_str(manifest.get("gpu_id")),
        datacenter_id=_opt_str(manifest.get("datacenter_id")),
        wall_time_sec=_opt_number(manifest.get("wall_time_sec")),
        failed=manifest.get("failed") if isinstance(manifest.get("failed"), bool) else None,
        estimated_cost_usd=_opt_number(manifest.get("estimated_cost_usd")),
        failure_phase=_opt_str(manifest.get("failure_phase")),
    )


def format_runs_table(rows: Sequence[RunRow]) -> str:
    """Both tools' table rule: UPPER CASE headers (`_` as a space), `—` for a missing value."""
    headers = ["TIMESTAMP", "JOB", "POD ID", "GPU", "DC", "WALL S", "FAILED", "EST $"]
    cells = [
        [
            row.timestamp,
            row.job or _MISSING,
            row.pod_id or _MISSING,
            row.gpu_id or _MISSING,
            row.datacenter_id or _MISSING,
            _MISSING if row.wall_time_sec is None else f"{row.wall_time_sec:.0f}",
            _failed_cell(row),
            _MISSING if row.estimated_cost_usd is None else f"${row.estimated_cost_usd:.2f}",
        ]
        for row in rows
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
        for line in [headers, *cells]
    )


def _failed_cell(row: RunRow) -> str:
    if row.failed is None:
        return _MISSING
    if not row.failed:
        return "N"
    return f"Y ({row.failure_phase})" if row.failure_phase else "Y"


def format_manifest_summary(manifest: Mapping[str, Any]) -> str:
    """One `label: value` line per field, values aligned in one column, `—` for a missing one
    (as compare-runs and ls-runs show it); our newer fields only when the manifest has them."""
    m = manifest
    fields: list[tuple[str, Any]] = [
        ("job", m.get("job_name")),
        ("run_id", m.get("run_id")),
        ("failed", m.get("failed")),
    ]
    fields += [(key, m[key]) for key in _NEWER_KEYS if key in m]
    fields += [
        ("schema", m.get("schema_version")),
        ("pod_id", m.get("pod_id")),
        ("gpu", m.get("gpu_id")),
        ("datacenter", m.get("datacenter_id")),
    ]
    if "cloud_type" in m:
        fields.append(("cloud_type", m.get("cloud_type")))
    price, source = m.get("gpu_price_per_hour_usd"), m.get("gpu_price_source")
    fields += [
        ("image", m.get("image")),
        ("storage", m.get("storage_mode")),
        ("wall_time_sec", m.get("wall_time_sec")),
        ("price_usd/hr", None if price is None else f"{price} ({_plain(source)})"),
        ("est_cost_usd", m.get("estimated_cost_usd")),
        ("cost_cap_usd", m.get("cost_cap_usd")),
        ("final_state", m.get("pod_final_state")),
    ]
    lines = [f"{label}:".ljust(_SUMMARY_LABEL_WIDTH) + _plain(value) for label, value in fields]
    metadata = m.get("deploy_metadata")
    if isinstance(metadata, Mapping) and metadata:
        lines.append("deploy_metadata:")
        width = max(len(str(key)) for key in metadata) + 2
        lines += [f"  {f'{key}:'.ljust(width)}{_plain(value)}" for key, value in metadata.items()]
    artifacts = [a for a in _list(m.get("artifacts")) if isinstance(a, Mapping)]
    if artifacts:
        lines.append("artifacts:")
        lines += [
            f"  - {_plain(a.get('label'))}: status={_plain(a.get('status'))} "
            f"duration_sec={_plain(a.get('duration_sec'))}"
            for a in artifacts
        ]
    telemetry = _list(m.get("telemetry_files"))
    if telemetry:
        lines.append("telemetry_files:")
        lines += [f"  - {name}" for name in telemetry]
    return "\n".join(lines)


# `failure_reason:` is the longest label, then one space: every value starts in one column.
_SUMMARY_LABEL_WIDTH = len("failure_reason:") + 1


@attrs.frozen
class Totals:
    manifests: int = 0
    failed: int = 0
    wall_time_sec: float | None = None
    estimated_cost_usd: float | None = None

    def add(self, manifest: Mapping[str, Any]) -> Totals:
        wall = _opt_number(manifest.get("wall_time_sec"))
        cost = _opt_number(manifest.get("estimated_cost_usd"))
        return Totals(
            manifests=self.manifests + 1,
            failed=self.failed + (1 if manifest.get("failed") is True else 0),
            wall_time_sec=_add(self.wall_time_sec, wall),
            estimated_cost_usd=_add(self.estimated_cost_usd, cost),
        )

    def format(self) -> str:
        lines = [
            "== TOTALS ==",
            f"manifests:        {self.manifests}",
            f"failed:           {self.failed}",
        ]
        if self.wall_time_sec is not None:
            lines.append(f"wall_time_sec:    {self.wall_time_sec:.1f}")
        if self.estimated_cost_usd is not None:
            lines.append(f"estimated_cost:   ${self.estimated_cost_usd:.2f}")
        return "\n".join(lines)


_COMPARE_FIELDS = (
    "schema_version",
    "failed",
    "outcome",
    "failure_phase",
    "failure_reason",
    "job_name",
    "provider",
    "gpu_id",
    "datacenter_id",
    "cloud_type",
    "gpu_price_per_hour_usd",
    "gpu_price_source",
    "wall_time_sec",
    "estimated_cost_usd",
    "pod_id",
    "pod_final_state",
    "image",
    "storage_mode",
)
_COMPARE_METADATA_FIELDS = (
    "local_git_sha",
    "local_git_dirty",
    "local_git_branch",
    "payload_lockfile",
    "payload_lockfile_sha256",
    "remote_python_version",
    "remote_uname",
)
# Only shown when either manifest has them, so 0.8.4 pairs compare exactly as before.
_OPTIONAL_COMPARE_FIELDS = frozenset(
    {"outcome", "failure_phase", "failure_reason", "provider", "cloud_type"}
)


def format_comparison(
    a_label: str, b_label: str, a: Mapping[str, Any], b: Mapping[str, Any]
) -> str:
    """Side-by-side diff: `field  a == b` or `field  a  →  b`."""
    rows: list[tuple[str, str]] = [
        (field, _diff(a.get(field), b.get(field)))
        for field in _COMPARE_FIELDS
        if field not in _OPTIONAL_COMPARE_FIELDS or field in a or field in b
    ]
    a_meta, b_meta = _mapping(a.get("deploy_metadata")), _mapping(b.get("deploy_metadata"))
    rows += [
        (f"deploy_metadata.{field}", _diff(a_meta.get(field), b_meta.get(field)))
        for field in _COMPARE_METADATA_FIELDS
    ]
    a_art, b_art = _artifacts_by_label(a), _artifacts_by_label(b)
    for label in sorted(set(a_art) | set(b_art)):
        for field in ("status", "bytes_transferred", "duration_sec"):
            rows.append(
                (
                    f"artifact[{label}].{field}",
                    _diff(a_art.get(label, {}).get(field), b_art.get(label, {}).get(field)),
                )
            )
    width = max(len(field) for field, _ in rows) + 2
    header = [
        "diff between two manifests:",
        f"  a: {a_label}  ({_plain(a.get('job_name'))})",
        f"  b: {b_label}  ({_plain(b.get('job_name'))})",
        "",
    ]
    return "\n".join(header + [f"  {field:<{width}}{cell}" for field, cell in rows])


def _diff(a: Any, b: Any) -> str:
    if a == b:
        return f"{_cell(a)} == {_cell(b)}"
    return f"{_cell(a)}  →  {_cell(b)}"


def _cell(value: Any) -> str:
    if value is None:
        return _MISSING
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 1000 else f"{value:.1f}"
    return str(value)


def _artifacts_by_label(manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(a["label"]): a
        for a in _list(manifest.get("artifacts"))
        if isinstance(a, Mapping) and a.get("label")
    }


# --- small helpers --------------------------------------------------------------------------


def _parse_ts(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        ts = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo is not None else None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _plain(value: Any) -> str:
    return _MISSING if value is None else str(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value  # ints stay ints, so --json output keeps the manifest's numbers as written


def _add(total: float | None, value: float | None) -> float | None:
    if value is None:
        return total
    return value if total is None else total + value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parse_timestamp(raw: Any) -> datetime | None:
    """An ISO-8601 timestamp with a zone (`+00:00` or `Z`), else None."""
    return _parse_ts(raw)


__all__ = [
    "EVENTS_FILENAME",
    "MANIFEST_FILENAME",
    "RunRow",
    "Totals",
    "event_matches",
    "format_comparison",
    "format_event_row",
    "format_manifest_summary",
    "format_runs_table",
    "format_timeline",
    "parse_events",
    "parse_filters",
    "parse_manifest",
    "parse_since",
    "parse_timestamp",
    "run_row",
]
