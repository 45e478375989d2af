"""Pods left behind and their pointers: cost, age, ownership, the command that releases each,
and what a bulk delete may touch.

Pure. `ls-stale` and `cleanup --all-stopped` read pods and state files, then ask here.
Corrections over runpod-deploy 0.8.4 (its §17.13-14):
- `ls-stale` lists running pods too (a run killed with SIGKILL leaves one, and they bill the
  most), each with the command that releases exactly that pod (its pointer and its id);
- age is counted from when the pod stopped (0.8.4 used uptimeSeconds, always 0 when EXITED),
  for a running pod from its creation;
- a bulk delete touches only pods this user's runs created (pod name = `<run_id prefix>-<run
  stamp>`, the prefix taken from the user's state files, or an explicit `--name-prefix`), and
  never a pod a recycle pointer keeps warm, unless asked.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.ports.gpu_cloud import PodStatus

# RunPod's volume-disk rates (runpod/docs pods/storage/types.mdx, "Cost"): $0.10/GB/month while
# the pod runs, $0.20/GB/month once it is stopped. 0.8.4 and the seed priced a stopped pod's
# disk at 0.10, half of what RunPod bills.
RUNNING_VOLUME_USD_PER_GB_MONTH = 0.10
STOPPED_VOLUME_USD_PER_GB_MONTH = 0.20
DAYS_PER_MONTH = 30
NAME_WIDTH = 40  # 0.8.4 cut names at 40 characters

# The state file of 0.8.4 names the pod `pod_id`, `id` or `podId`; it records no provider.
POD_ID_KEYS = ("pod_id", "id", "podId")
PROVIDER_084 = "runpod"

# `run_dir_name`: YYYYmmddTHHMMSS.ffffffZ-<hex>; 0.8.4's stamp was YYYYmmddTHHMMSSZ.
_RUN_STAMP = re.compile(r"\d{8}T\d{6}(\.\d{1,6})?Z(-[0-9a-f]{4,})?")

RECYCLE = "recycle"


def pointer_pod_id(pointer: Mapping[str, object]) -> str | None:
    """The pod a state file names (ours or 0.8.4's spelling); None if it names none."""
    for key in POD_ID_KEYS:
        value = pointer.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def pointer_pod_name(pointer: Mapping[str, object]) -> str | None:
    """The unique name of the pod a run's pointer was written for before create (None: none)."""
    value = pointer.get("pod_name")
    return value if isinstance(value, str) and value else None


def pointer_provider(pointer: Mapping[str, object]) -> str:
    """Ours records the provider; a state file without one is 0.8.4's, i.e. RunPod."""
    value = pointer.get("provider")
    return value if isinstance(value, str) and value else PROVIDER_084


def owner_prefix(pointer: Mapping[str, object]) -> str | None:
    """`<rendered run_id_prefix>-` of the run that wrote the pointer (its pods' name prefix).

    Our pod name is the run id, `<prefix>-<run stamp>`, and the run directory's basename is
    that stamp, so the prefix is the run id without it.
    """
    run_id, run_dir = pointer.get("run_id"), pointer.get("run_dir")
    if not isinstance(run_id, str) or not isinstance(run_dir, str):
        return None
    stamp = posixpath.basename(run_dir.rstrip("/"))
    if not stamp or not run_id.endswith("-" + stamp) or len(run_id) == len(stamp) + 1:
        return None
    return run_id[: -len(stamp)]


def is_run_name(name: str, prefix: str) -> bool:
    """`name` is `<prefix><run stamp>`: a pod a run with this prefix created."""
    return name.startswith(prefix) and _RUN_STAMP.fullmatch(name[len(prefix) :]) is not None


def is_owned(name: str, *, run_prefixes: Iterable[str], name_prefixes: Iterable[str]) -> bool:
    """A pod name created by one of our runs, or matching a prefix the user named."""
    if any(name.startswith(prefix) for prefix in name_prefixes if prefix):
        return True
    return any(is_run_name(name, prefix) for prefix in run_prefixes)


def storage_cost(volume_gb: int | None, usd_per_gb_month: float) -> tuple[float, float]:
    """(USD per day, USD per month) for a kept volume; an unknown size costs 0 here."""
    monthly = (volume_gb or 0) * usd_per_gb_month
    return monthly / DAYS_PER_MONTH, monthly


@attrs.frozen
class VolumeRates:
    """USD per GB-month of a pod's volume disk, while it runs and once it is stopped."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    running: float
    stopped: float


def storage_rates(*, billed: bool) -> VolumeRates:
    """A provider's volume-disk rates: 0 for a provider that rents nothing (ProviderPlugin.billed
    False: the local and ssh providers' disks are your own machine's)."""
    if not billed:
        return VolumeRates(running=0.0, stopped=0.0)
    return VolumeRates(
        running=RUNNING_VOLUME_USD_PER_GB_MONTH, stopped=STOPPED_VOLUME_USD_PER_GB_MONTH
    )


def release_command(*, pod_id: str, provider: str, state_file: str | None) -> str:
    """The command that deletes exactly this pod: through its pointer (which must still name
    it), or by id alone when no pointer of ours names it."""
    if state_file is not None:
        return (
            f"runpod-deploy cleanup --state-file {shlex.quote(state_file)} "
            f"--pod-id {shlex.quote(pod_id)} --mode delete"
        )
    return (
        f"runpod-deploy cleanup --pod-id {shlex.quote(pod_id)} "
        f"--provider {shlex.quote(provider)} --mode delete"
    )


@attrs.frozen
class StalePod:
    """One pod in the `ls-stale` table: stopped (its disk bills) or running (everything bills)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pod_id: str
    name: str
    volume_gb: int | None
    stopped_at: float | None
    age_sec: float | None
    usd_per_day: float
    usd_per_month: float
    state_file: str | None = None  # the pointer of ours that still names it
    status: str = "EXITED"
    release: str = ""  # the command that deletes exactly this pod


@attrs.frozen
class DanglingPointer:
    """A state file whose pod no longer exists (safe to delete the file)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    state_file: str
    pod_id: str
    provider: str


@attrs.frozen
class StaleReport:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    pods: tuple[StalePod, ...]
    dangling: tuple[DanglingPointer, ...]

    @property
    def total_gb(self) -> int:
        return sum(p.volume_gb or 0 for p in self.pods)

    @property
    def total_per_day(self) -> float:
        return sum(p.usd_per_day for p in self.pods)

    @property
    def total_per_month(self) -> float:
        return sum(p.usd_per_month for p in self.pods)


def stale_report(
    *,
    pods: Sequence[PodStatus],
    pointers: Mapping[str, Mapping[str, object]],
    provider: str,
    now: float,
    volume_rates: VolumeRates,
) -> StaleReport:
    """Every pod the provider lists that is not gone: stopped ones (oldest stop first), then
    running ones (oldest first); and this provider's pointers to pods that are gone.

    `pods` is every pod the provider lists (any status); `pointers` maps state-file path to
    its content. A pointer written before create names its pod by its unique name only.
    """
    by_id: dict[str, str] = {}
    by_name: dict[str, str] = {}
    dangling: list[DanglingPointer] = []
    existing = {pod.pod_id for pod in pods if pod.desired_status != "TERMINATED"}
    names = {pod.name for pod in pods if pod.desired_status != "TERMINATED"}
    # Per-run pointers first: they are the ones that only ever name their own run's pod.
    for path, data in sorted(pointers.items(), key=lambda item: ("/runs/" not in item[0], item)):
        if pointer_provider(data) != provider:
            continue
        pod_id, pod_name = pointer_pod_id(data), pointer_pod_name(data)
        if pod_id is not None:
            by_id.setdefault(pod_id, path)
            if pod_id not in existing:
                dangling.append(DanglingPointer(path, pod_id, provider))
        elif pod_name is not None:
            by_name.setdefault(pod_name, path)
            if pod_name not in names:
                dangling.append(DanglingPointer(path, "", provider))
    rows = []
    for pod in pods:
        if pod.desired_status == "TERMINATED":
            continue
        stopped = pod.desired_status == "EXITED"
        rate = volume_rates.stopped if stopped else volume_rates.running
        per_day, per_month = storage_cost(pod.volume_gb, rate)
        if not stopped:
            hourly = (pod.cost_per_hour_usd or 0.0) * 24
            per_day, per_month = per_day + hourly, per_month + hourly * DAYS_PER_MONTH
        since = pod.stopped_at if stopped else pod.created_at
        state_file = by_id.get(pod.pod_id) or by_name.get(pod.name)
        rows.append(
            StalePod(
                pod_id=pod.pod_id,
                name=pod.name,
                volume_gb=pod.volume_gb,
                stopped_at=pod.stopped_at if stopped else None,
                age_sec=None if since is None else max(0.0, now - since),
                usd_per_day=per_day,
                usd_per_month=per_month,
                state_file=state_file,
                status=pod.desired_status,
                release=release_command(
                    pod_id=pod.pod_id, provider=provider, state_file=state_file
                ),
            )
        )
    rows.sort(
        key=lambda r: (r.status != "EXITED", r.age_sec is None, -(r.age_sec or 0.0), r.pod_id)
    )
    return StaleReport(tuple(rows), tuple(dangling))


def format_age(seconds: float | None) -> str:
    """`3d04h`, `5h12m`, `42m`, `<1m`; `?` when the provider does not say when it stopped."""
    if seconds is None:
        return "?"
    minutes = int(seconds // 60)
    if minutes < 1:
        return "<1m"
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m"


def stale_table(report: StaleReport) -> list[str]:
    """The `ls-stale` table: one row per pod and a TOTAL line.

    AGE is since the stop for a stopped pod, since creation for a running one.
    """
    header = (
        f"{'POD_ID':<24} {'NAME':<{NAME_WIDTH}} {'STATUS':<8} {'GB':>6} {'AGE':>8} "
        f"{'$/DAY':>8} {'$/MO':>9}"
    )
    lines = [header]
    for pod in report.pods:
        gb = "?" if pod.volume_gb is None else str(pod.volume_gb)
        lines.append(
            f"{pod.pod_id:<24} {pod.name[:NAME_WIDTH]:<{NAME_WIDTH}} {pod.status[:8]:<8} {gb:>6} "
            f"{format_age(pod.age_sec):>8} {pod.usd_per_day:>8.2f} {pod.usd_per_month:>9.2f}"
        )
    running = sum(1 for pod in report.pods if pod.status != "EXITED")
    count = f"{len(report.pods) - running} stopped, {running} running"
    lines.append(
        f"{'TOTAL':<24} {count:<{NAME_WIDTH}} {'':<8} "
        f"{report.total_gb:>6} {'':>8} {report.total_per_day:>8.2f} {report.total_per_month:>9.2f}"
    )
    return lines


def release_lines(report: StaleReport) -> list[str]:
    """One line per pod: the command that deletes exactly that pod (and its pointer)."""
    return [f"release {pod.pod_id}: {pod.release}" for pod in report.pods]


def stale_json(report: StaleReport) -> dict[str, object]:
    return {
        "pods": [attrs.asdict(pod) for pod in report.pods],
        "total": {
            "pods": len(report.pods),
            "volume_gb": report.total_gb,
            "usd_per_day": round(report.total_per_day, 4),
            "usd_per_month": round(report.total_per_month, 4),
        },
        "dangling_pointers": [attrs.asdict(d) for d in report.dangling],
    }


# --- bulk delete -------------------------------------------------------------------------------


@attrs.frozen
class KeptWarm:
    """A pointer that keeps its pod for a later run: `recycle`, or a lifecycle we cannot tell."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pod_id: str
    state_file: str
    reason: str


def kept_warm(*, pod_id: str, state_file: str, lifecycle_action: str | None) -> KeptWarm | None:
    """Whether the pointer's run meant to keep the pod: recycle, or unknown (be careful)."""
    if lifecycle_action == RECYCLE:
        return KeptWarm(pod_id, state_file, f"kept for recycle by {state_file}")
    if lifecycle_action is None:
        return KeptWarm(pod_id, state_file, f"named by {state_file} (lifecycle unknown)")
    return None


@attrs.frozen
class BulkSelection:
    """What `cleanup --all-stopped` deletes, and what it leaves alone and why."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    delete: tuple[PodStatus, ...]
    not_ours: tuple[PodStatus, ...]
    kept: tuple[tuple[PodStatus, str], ...]


def select_bulk_delete(
    pods: Sequence[PodStatus],
    *,
    run_prefixes: Iterable[str],
    name_prefixes: Iterable[str],
    all_owners: bool,
    warm: Mapping[str, KeptWarm],
    include_recycled: bool,
) -> BulkSelection:
    """Stopped pods to delete: ours (or everyone's with all_owners), minus the warm ones."""
    run_prefixes, name_prefixes = tuple(run_prefixes), tuple(name_prefixes)
    delete: list[PodStatus] = []
    not_ours: list[PodStatus] = []
    kept: list[tuple[PodStatus, str]] = []
    for pod in pods:
        if pod.desired_status != "EXITED":
            continue
        keeper = warm.get(pod.pod_id)
        if keeper is not None and not include_recycled:
            kept.append((pod, keeper.reason))
        elif (
            all_owners
            or keeper is not None
            or is_owned(pod.name, run_prefixes=run_prefixes, name_prefixes=name_prefixes)
        ):
            delete.append(pod)
        else:
            not_ours.append(pod)
    return BulkSelection(tuple(delete), tuple(not_ours), tuple(kept))
