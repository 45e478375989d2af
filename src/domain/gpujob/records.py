"""The run records, as plain JSON-ready dicts: manifest, events.jsonl rows, metrics.jsonl rows,
and the pod pointer (state file).

Field names and shapes are runpod-deploy 0.8.4's (manifest schema "v2"), so its forensic
commands and users' scripts keep working; additions are new keys only.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

MANIFEST_NAME = "runpod_deploy_pull_manifest.json"
EVENTS_NAME = "events.jsonl"
METRICS_NAME = "metrics.jsonl"
MANIFEST_SCHEMA = "v2"


def iso_utc(epoch: float) -> str:
    """ISO-8601 with +00:00, as 0.8.4 writes `ts_utc`."""
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def event_row(event: str, *, ts: float, **fields: Any) -> dict[str, Any]:
    """One events.jsonl row: {"ts_utc": ..., "event": name, ...fields}."""
    return {"ts_utc": iso_utc(ts), "event": event, **fields}


@attrs.frozen
class ArtifactRecord:
    """One artifact pull in the manifest (0.8.4's keys; bytes_transferred is now filled)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    label: str
    remote_path: str
    local_path: str
    required: bool
    excludes: tuple[str, ...]
    delete: bool
    status: str  # success | failed | skipped
    bytes_transferred: int | None
    duration_sec: float
    files: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "label": self.label,
            "remote_path": self.remote_path,
            "local_path": self.local_path,
            "required": self.required,
            "excludes": list(self.excludes),
            "delete": self.delete,
            "status": self.status,
            "bytes_transferred": self.bytes_transferred,
            "files_transferred": self.files,
            "duration_sec": round(self.duration_sec, 3),
        }
        if self.error is not None:
            row["error"] = self.error[:500]
        return row


@attrs.frozen
class DeployMetadata:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    local_git_sha: str | None = None
    local_git_dirty: bool | None = None
    local_git_branch: str | None = None
    payload_lockfile: str | None = None
    payload_lockfile_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class ManifestInput:
    """Everything the manifest records; the use case fills it as the run goes."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    job_name: str
    run_id: str
    config_path: str
    run_dir: str
    storage_mode: str
    image: str
    volume_mount: str
    volume_name: str | None
    volume_gb: int | None
    cost_cap_usd: float
    provider: str
    cloud_type: str
    gpu_count: int
    tool_version: str
    pulled_at: float
    failed: bool
    outcome: str  # succeeded | failed | interrupted | dry_run
    dry_run: bool
    datacenter_id: str | None = None
    gpu_id: str | None = None
    gpu_price_per_hour_usd: float | None = None
    gpu_price_source: str | None = None
    pod_id: str | None = None
    pod_final_state: str | None = None
    pod_resumed: bool = False
    wall_time_sec: float | None = None
    failure_phase: str | None = None
    failure_reason: str | None = None
    remote_exit_code: int | None = None
    phase_durations_sec: Mapping[str, float] = attrs.field(factory=dict)
    lifecycle_action: str | None = None
    left_behind: str | None = None  # what the run left and how to remove it
    state_file: str | None = None
    # The run's unique pod name, and every pod the run made under it (an ambiguous create can
    # make one besides the pod used; the left_behind note says what became of each).
    pod_name: str | None = None
    pods_created: Sequence[str] = ()
    deploy_metadata: DeployMetadata = DeployMetadata()
    artifacts: Sequence[ArtifactRecord] = ()
    telemetry_files: Sequence[str] = ()


def build_manifest(data: ManifestInput) -> dict[str, Any]:
    """The manifest dict: 0.8.4's v2 fields in its order, then ours."""
    cost = None
    if data.gpu_price_per_hour_usd is not None and data.wall_time_sec is not None:
        cost = round(data.gpu_price_per_hour_usd * data.wall_time_sec / 3600, 4)
    return {
        "schema_version": MANIFEST_SCHEMA,
        "pulled_at_utc": iso_utc(data.pulled_at),
        "failed": data.failed,
        "job_name": data.job_name,
        "run_id": data.run_id,
        "config_path": data.config_path,
        "storage_mode": data.storage_mode,
        "datacenter_id": data.datacenter_id,
        "gpu_id": data.gpu_id,
        "gpu_price_per_hour_usd": data.gpu_price_per_hour_usd,
        "gpu_price_source": data.gpu_price_source,
        "pod_id": data.pod_id,
        "pod_final_state": data.pod_final_state,
        "pod_resumed": data.pod_resumed,
        "image": data.image,
        "cost_cap_usd": data.cost_cap_usd,
        "wall_time_sec": None if data.wall_time_sec is None else round(data.wall_time_sec, 3),
        "estimated_cost_usd": cost,
        "volume_mount": data.volume_mount,
        "volume_name": data.volume_name,
        "volume_gb": data.volume_gb,
        "deploy_metadata": data.deploy_metadata.to_json(),
        "artifacts": [a.to_json() for a in data.artifacts],
        "telemetry_files": list(data.telemetry_files),
        # Additions over 0.8.4:
        "outcome": data.outcome,
        "dry_run": data.dry_run,
        "failure_phase": data.failure_phase,
        "failure_reason": data.failure_reason,
        "remote_exit_code": data.remote_exit_code,
        "phase_durations_sec": {k: round(v, 3) for k, v in data.phase_durations_sec.items()},
        "tool_version": data.tool_version,
        "provider": data.provider,
        "cloud_type": data.cloud_type,
        "gpu_count": data.gpu_count,
        "run_dir": data.run_dir,
        "lifecycle_action": data.lifecycle_action,
        "left_behind": data.left_behind,
        "state_file": data.state_file,
        "pod_name": data.pod_name,
        "pods_created": list(data.pods_created),
    }


def pod_pointer(
    *,
    pod_id: str,
    provider: str,
    gpu_id: str,
    datacenter_id: str,
    image: str,
    run_id: str,
    run_dir: str,
    config_path: str,
    status: str,
    updated_at: float,
    lifecycle_action: str | None = None,
) -> dict[str, Any]:
    """The state file: 0.8.4's {pod_id, gpu_id, image, datacenter_id} plus where it came from.

    `lifecycle_action` is set once the run applied one (stop, preserve, recycle), so bulk
    cleanup can tell a recycled warm pod from a stopped one without reading the manifest.
    """
    pointer = {
        "pod_id": pod_id,
        "gpu_id": gpu_id,
        "image": image,
        "datacenter_id": datacenter_id,
        "provider": provider,
        "run_id": run_id,
        "run_dir": run_dir,
        "config_path": config_path,
        "status": status,
        "updated_at_utc": iso_utc(updated_at),
    }
    if lifecycle_action is not None:
        pointer["lifecycle_action"] = lifecycle_action
    return pointer


# --- metrics -----------------------------------------------------------------------------------

SECTION = "@@pegboard-metrics:"


def metrics_command(volume_mount: str) -> str:
    """One command sampling GPU 0, CPU, memory and the workspace disk (sections parsed below)."""
    mount = shlex.quote(volume_mount)
    return (
        f"echo {SECTION}gpu; nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,"
        "temperature.gpu,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits "
        f"2>/dev/null; echo {SECTION}load; cat /proc/loadavg 2>/dev/null; "
        f"echo {SECTION}top; top -b -n1 2>/dev/null | head -5; "
        f"echo {SECTION}free; free -m 2>/dev/null | awk 'NR==2{{print $3, $2}}'; "
        f"echo {SECTION}df; df -B1 {mount} 2>/dev/null | awk 'NR==2{{print $3, $2}}'; true"
    )


def parse_metrics(output: str, *, ts: float) -> dict[str, Any]:
    """A metrics.jsonl row from metrics_command's output; keys are absent when unknown."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith(SECTION):
            current = line[len(SECTION) :].strip()
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    row: dict[str, Any] = {"ts_utc": iso_utc(ts)}
    gpu = sections.get("gpu", [])
    if gpu:
        parts = [p.strip() for p in gpu[0].split(",")]
        keys = (
            "gpu_util_pct",
            "gpu_mem_used_mb",
            "gpu_mem_total_mb",
            "gpu_temp_c",
            "gpu_ecc_errors",
        )
        for key, value in zip(keys, parts, strict=False):
            number = _int(value)
            if number is not None or key == "gpu_ecc_errors":
                row[key] = number
    load = sections.get("load", [])
    if load and load[0].split():
        load_1m = _float(load[0].split()[0])
        if load_1m is not None:
            row["cpu_load_1m"] = load_1m
    for line in sections.get("top", []):
        if line.startswith(("%Cpu(s):", "Cpu(s):")):
            for part in line.split(":", 1)[1].split(","):
                token = part.strip().split()
                if len(token) == 2 and token[1] in {"us", "sy"}:
                    number_f = _float(token[0])
                    if number_f is not None:
                        row["cpu_user_pct" if token[1] == "us" else "cpu_sys_pct"] = number_f
    for section, used_key, total_key in (
        ("free", "host_mem_used_mb", "host_mem_total_mb"),
        ("df", "workspace_disk_used_bytes", "workspace_disk_total_bytes"),
    ):
        values = sections.get(section, [])
        if values and len(values[0].split()) >= 2:
            used, total = (_int(v) for v in values[0].split()[:2])
            if used is not None and total is not None:
                row[used_key], row[total_key] = used, total
    return row


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
