"""Pods a failed create may have made anyway (5xx, a timeout, a bad answer after the pod
existed): found by the run's unique pod name with a bounded wait, before anything else is
created, and looked for once more before the run ends.

The rule: never start another create while an earlier one's outcome is unknown. A lookup that
answers (even "no such pod") settles it; one that keeps failing until its deadline fails the
provision phase with no further create. At the end of the run every pod that carries the run's
name and is not the one it used is deleted (nothing ran on it), and whatever could not be
settled is named in the manifest and in the run's pointer, which `ls-stale` and
`cleanup --state-file` match to the pod by its name.
"""

from __future__ import annotations

import logging

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import Forbidden, Invalid, NotFound, PortError, Unauthorized
from pegboard.domain.gpujob.stale import release_command
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.gpu_cloud import POD_TERMINATED, GpuCloud, PodStatus
from pegboard.domain.retry import Backoff

from .phases import pod_is_gone
from .run_state import PodClaim, RunContext, RunProgress

logger = logging.getLogger(__name__)

# Errors no wait can fix: the key or the request is wrong, not the API's health.
_PERMANENT = (Unauthorized, Forbidden, Invalid)


@attrs.frozen
class NameLookup:
    """What a lookup by name found: the live pods of that name, or None when every attempt
    failed until the deadline (`error` says the last failure)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pods: tuple[PodStatus, ...] | None
    error: str | None = None


def look_up_by_name(
    cloud: GpuCloud, name: str, *, clock: Clock, timeout_sec: float, poll: Backoff
) -> NameLookup:
    """`find_pods(name)` until it answers or `timeout_sec` passes (backoff on the Clock)."""
    deadline = clock.monotonic() + timeout_sec
    attempt = 0
    while True:
        try:
            found = cloud.find_pods(name=name)
        except _PERMANENT as exc:
            return NameLookup(None, str(exc))
        except PortError as exc:
            error = str(exc)
        else:
            return NameLookup(tuple(p for p in found if p.desired_status != POD_TERMINATED))
        attempt += 1
        remaining = deadline - clock.monotonic()
        if remaining <= 0:
            return NameLookup(None, error)
        logger.info("[provision] looking up pod %s by name failed (%s); retrying", name, error)
        clock.sleep(min(poll.delay(attempt), remaining))


def settle_ambiguous_creates(run: RunContext, progress: RunProgress, claim: PodClaim) -> bool:
    """Before the run ends: look for pods with the run's name once more; delete each that is
    not the run's own pod, and record what could not be deleted or looked for. True when a pod
    of the run's name other than its own may remain (recorded in `progress.left_behind`)."""
    if claim.ambiguous_name is None or run.backend is None:
        return False
    cloud = run.backend.cloud
    name = claim.ambiguous_name
    lookup = _last_look(run, claim, cloud, name)
    if lookup.pods is None:
        claim.extra_pod_ids = [p for p in claim.extra_pod_ids if p != claim.pod_id]
        progress.leave(
            f"a pod named {name!r} may exist (a create failed after it may have made it, and "
            f"looking it up failed: {lookup.error}); `runpod-deploy ls-stale --provider "
            f"{cloud.provider}` lists it once the API answers; release it with: "
            f"runpod-deploy cleanup --state-file {run.pointers.run.path}"
        )
        run.recorder.event("create_outcome_unknown", pod_name=name, error=str(lookup.error)[:500])
        return True
    claim.unresolved_create = False
    remaining: list[str] = []
    for pod in lookup.pods:
        if pod.pod_id == claim.pod_id:
            continue
        claim.note_created(pod.pod_id)
        if _delete_surplus(cloud, pod.pod_id):
            logger.warning(
                "[lifecycle] deleted pod %s: a create that failed had made it (named %s)",
                pod.pod_id,
                name,
            )
            run.recorder.event("surplus_pod_deleted", pod_id=pod.pod_id, pod_name=name)
            continue
        remaining.append(pod.pod_id)
        progress.leave(
            f"pod {pod.pod_id} (named {name!r}, made by a create that failed) could not be "
            "deleted; release it with: "
            + release_command(pod_id=pod.pod_id, provider=cloud.provider, state_file=None)
        )
    claim.extra_pod_ids = remaining
    return bool(remaining)


def _last_look(run: RunContext, claim: PodClaim, cloud: GpuCloud, name: str) -> NameLookup:
    """The pods of the run's name now; while fewer show than the ambiguous creates may have
    made and one may still be on its way into the listing (Timing.listing_lag_sec), look
    again. Not "until one shows": after two such creates the first twin listed says nothing
    about the second."""
    timing, clock = run.deps.timing, run.clock
    look_until = (
        None if claim.unseen_create_at is None else claim.unseen_create_at + timing.listing_lag_sec
    )
    # The run's own pod counts among them when a lookup found it (adopted, not created).
    own_was_ambiguous = claim.pod_id is not None and not (claim.created or claim.resumed)
    twins_possible = claim.ambiguous_creates - (1 if own_was_ambiguous else 0)
    attempt = 0
    while True:
        lookup = look_up_by_name(
            cloud,
            name,
            clock=clock,
            timeout_sec=timing.final_lookup_timeout_sec,
            poll=timing.ready_poll,
        )
        if lookup.pods is None:
            return lookup
        if sum(p.pod_id != claim.pod_id for p in lookup.pods) >= twins_possible:
            return lookup
        remaining = 0.0 if look_until is None else look_until - clock.monotonic()
        if remaining <= 0:
            return lookup
        attempt += 1
        clock.sleep(min(timing.ready_poll.delay(attempt), remaining))


def _delete_surplus(cloud: GpuCloud, pod_id: str) -> bool:
    """Delete a pod nothing ran on; True once the provider no longer lists it."""
    try:
        cloud.terminate_pod(pod_id)
    except NotFound:
        return True
    except PortError as exc:
        logger.warning("[lifecycle] could not delete surplus pod %s: %s", pod_id, exc)
        return False
    return pod_is_gone(cloud, pod_id)
