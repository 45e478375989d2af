"""Choosing where to create the pod: GPU × datacenter candidates, in failover order.

GPU priority first: every datacenter is tried for the first GPU of `gpu_order` before the
second GPU is considered (0.8.4 looped datacenters first, so a lower-priority GPU in the first
datacenter beat the preferred GPU one datacenter over). Stock-outs and GPUs priced above
`--max-gpu-price` are skipped with a reason; a create that fails moves on to the next
candidate (0.8.4 gave up). Offline dry runs use sentinels and make no call at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.gpujob.spec import JobSpec
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    GpuStock,
    PodRequest,
    PodStatus,
)

__all__ = [
    "AVAILABLE_STOCK",
    "Candidate",
    "CandidatePlan",
    "ResumeDecision",
    "Skipped",
    "decide_resume",
    "offline_candidate",
    "override_candidate",
    "plan_candidates",
    "pod_request",
]

AVAILABLE_STOCK = frozenset({"high", "medium", "low"})


@attrs.frozen
class Candidate:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    gpu_id: str
    datacenter_id: str
    stock: str | None = None  # None: not looked up (override or offline)
    price_per_hour_usd: float | None = None


@attrs.frozen
class Skipped:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    gpu_id: str
    datacenter_id: str
    reason: str


@attrs.frozen
class CandidatePlan:
    """Candidates to try in order, and what was skipped and why."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    candidates: tuple[Candidate, ...]
    skipped: tuple[Skipped, ...]
    network_volume_id: str | None = None  # the looked-up volume every create attaches

    def no_candidate_message(self) -> str:
        observed = "; ".join(f"{s.gpu_id}@{s.datacenter_id}: {s.reason}" for s in self.skipped)
        return "no configured GPU is available in any configured datacenter" + (
            f" ({observed})" if observed else ""
        )


def plan_candidates(
    *,
    gpu_order: Sequence[str],
    datacenters: Sequence[str],
    stock: Sequence[GpuStock],
    prices: Mapping[str, float],
    max_gpu_price_usd: float | None,
) -> CandidatePlan:
    """GPU-major candidate order, skipping stock-outs and GPUs above the price cap.

    A GPU without a known price is allowed (the cap cannot be checked), as in 0.8.4.
    """
    levels = {(s.gpu_id, s.datacenter_id): s.stock for s in stock}
    candidates: list[Candidate] = []
    skipped: list[Skipped] = []
    for gpu in gpu_order:
        price = prices.get(gpu)
        for dc in datacenters:
            level = levels.get((gpu, dc), "not listed")
            if level not in AVAILABLE_STOCK:
                skipped.append(Skipped(gpu, dc, f"stock {level}"))
            elif max_gpu_price_usd is not None and price is not None and price > max_gpu_price_usd:
                skipped.append(
                    Skipped(
                        gpu,
                        dc,
                        f"price ${price:.2f}/h above --max-gpu-price ${max_gpu_price_usd:.2f}/h",
                    )
                )
            else:
                candidates.append(Candidate(gpu, dc, level, price))
    return CandidatePlan(tuple(candidates), tuple(skipped))


def override_candidate(gpu_id: str, datacenter_id: str) -> CandidatePlan:
    """`--gpu-id G --datacenter-id D`: exactly that, no stock lookup."""
    return CandidatePlan((Candidate(gpu_id, datacenter_id),), ())


def offline_candidate(spec: JobSpec) -> CandidatePlan:
    """Offline dry run: the first GPU in the first datacenter, without asking anyone."""
    return CandidatePlan((Candidate(spec.pod.gpu_order[0], spec.pod.datacenters[0]),), ())


def pod_request(
    spec: JobSpec,
    candidate: Candidate,
    *,
    name: str,
    network_volume_id: str | None = None,
    env: Mapping[str, str] | None = None,
) -> PodRequest:
    """The create request for `candidate`; the pod's name is the run id (unique per run).

    `env`: what the provider needs in the pod's environment (RunPod: PUBLIC_KEY, the key its
    image's sshd trusts)."""
    pod, storage = spec.pod, spec.storage
    return PodRequest(
        name=name,
        image=pod.image,
        gpu_id=candidate.gpu_id,
        datacenter_id=candidate.datacenter_id,
        gpu_count=pod.gpu_count,
        cloud_type=str(pod.cloud_type),
        volume_mount=storage.volume_mount,
        container_disk_gb=pod.container_disk_gb,
        volume_gb=storage.volume_gb if network_volume_id is None else None,
        network_volume_id=network_volume_id,
        ports=tuple(pod.ports),
        spot=pod.spot,
        min_vcpu_count=pod.min_vcpu_count,
        min_memory_gb=pod.min_memory_gb,
        env=dict(env or {}),
    )


@attrs.frozen
class ResumeDecision:
    """What to do with the pod a `recycle` state file points at."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    resume: bool
    terminate_old: bool
    reason: str


def decide_resume(
    *,
    pointer: Mapping[str, object],
    status: PodStatus | None,
    candidate: Candidate,
    image: str,
    kept_running: bool = False,
) -> ResumeDecision:
    """Resume only an EXITED pod (or, where recycle keeps pods running, a RUNNING one) whose
    image, GPU and datacenter match this run's choice."""
    if status is None:
        return ResumeDecision(False, False, "the recycled pod no longer exists")
    reusable = (POD_EXITED, POD_RUNNING) if kept_running else (POD_EXITED,)
    if status.desired_status not in reusable:
        return ResumeDecision(
            False, False, f"the recycled pod is {status.desired_status}, not EXITED; left alone"
        )
    drift = [
        f"{key} {pointer.get(key)!r} != {want!r}"
        for key, want in (
            ("image", image),
            ("gpu_id", candidate.gpu_id),
            ("datacenter_id", candidate.datacenter_id),
        )
        if pointer.get(key) != want
    ]
    if drift:
        return ResumeDecision(False, True, "drift detected: " + ", ".join(drift))
    return ResumeDecision(True, False, "paused pod matches; resuming")
