"""Getting a pod for a run: the GPU x datacenter candidate plan, create with failover to the
next candidate, the lookup by name after a create that may have left a pod behind, resuming a
paused pod (recycle), and the pod pointer (state file) written the moment a pod id exists.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from pegboard.domain.errors import (
    ConfigError,
    ConfigProblem,
    NoCandidateHelps,
    NotFound,
    PortError,
    Unauthorized,
)
from pegboard.domain.gpujob.network_volume import (
    VolumePlacement,
    VolumePlacementError,
    place_on_volume,
)
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.provider_plugin import unstructure_locator
from pegboard.domain.gpujob.provisioning import (
    Candidate,
    CandidatePlan,
    decide_resume,
    override_candidate,
    plan_candidates,
    pod_request,
)
from pegboard.domain.gpujob.records import iso_utc, pod_pointer
from pegboard.domain.gpujob.spec import LifecycleAction, StorageMode
from pegboard.domain.ports.gpu_cloud import CreateOutcomeUnknown, GpuCloud, NoCapacity, PodStatus

from .create_lookup import look_up_by_name
from .gpu_names import gpu_catalog, refuse_unknown_gpus, unknown_gpu_message
from .pod_pointers import PodPointer
from .provider_locators import LOCATOR_KEY
from .run_state import PodClaim, RunContext, RunProgress
from .run_types import PhaseFailed, RunRequest

logger = logging.getLogger(__name__)


def override_plan(request: RunRequest) -> CandidatePlan | None:
    """`--gpu-id` with `--datacenter-id` names the one candidate, skipping the stock check."""
    if request.gpu_id and request.datacenter_id:
        return override_candidate(request.gpu_id, request.datacenter_id)
    return None


def candidate_plan(run: RunContext, cloud: GpuCloud) -> CandidatePlan:
    placement = _volume_placement(run, cloud)
    volume_id = placement.volume.volume_id if placement else None
    override = override_plan(run.request)
    if override is not None:
        gpu_id = override.candidates[0].gpu_id
        catalog = gpu_catalog(cloud, run.spec.pod, listed=_has_catalog(run, cloud))
        if catalog and gpu_id not in catalog:
            problem = ConfigProblem(
                source="--gpu-id", path="", message=unknown_gpu_message(gpu_id, catalog)
            )
            raise ConfigError([problem])
        held_in = placement.volume.datacenter_id if placement else None
        if held_in is not None and override.candidates[0].datacenter_id != held_in:
            raise PhaseFailed(
                f"--datacenter-id {override.candidates[0].datacenter_id}: the network volume "
                f"is in {held_in}"
            )
        return attrs.evolve(override, network_volume_id=volume_id)
    pod = run.spec.pod
    datacenters = placement.datacenters if placement else pod.datacenters
    stock = cloud.gpu_availability(
        gpu_ids=pod.gpu_order, datacenter_ids=datacenters, cloud_type=str(pod.cloud_type)
    )
    prices: dict[str, float] = {}
    try:
        prices = cloud.gpu_prices(cloud_type=str(pod.cloud_type), spot=pod.spot)
    except PortError as exc:
        logger.warning("[provision] GPU prices unavailable (%s); price cap not checked", exc)
    if run.request.max_gpu_price_usd is not None and not prices:
        logger.warning("[provision] no GPU prices known: --max-gpu-price cannot be checked")
    refuse_unknown_gpus(
        cloud, pod, run.document, stock=stock, prices=prices, listed=_has_catalog(run, cloud)
    )
    plan = plan_candidates(
        gpu_order=pod.gpu_order,
        datacenters=datacenters,
        stock=stock,
        prices=prices,
        max_gpu_price_usd=run.request.max_gpu_price_usd,
    )
    if run.request.max_gpu_price_usd is not None and prices:
        for gpu in sorted({c.gpu_id for c in plan.candidates if c.price_per_hour_usd is None}):
            logger.warning(
                "[provision] %s: price unknown, --max-gpu-price $%.2f/h cannot be checked for it",
                gpu,
                run.request.max_gpu_price_usd,
            )
    for skipped in plan.skipped:
        logger.info(
            "[provision] skip %s @ %s: %s",
            skipped.gpu_id,
            skipped.datacenter_id,
            skipped.reason,
        )
    return attrs.evolve(plan, network_volume_id=volume_id)


def _has_catalog(run: RunContext, cloud: GpuCloud) -> bool:
    """GPU type ids are this provider's catalog (not labels, as on a machine you already have)."""
    return run.deps.providers.has_gpu_catalog(cloud.provider)


def _volume_placement(run: RunContext, cloud: GpuCloud) -> VolumePlacement | None:
    """For network_volume storage: the volume, and the configured datacenter that holds it."""
    storage = run.spec.storage
    if storage.mode is not StorageMode.NETWORK_VOLUME or not storage.volume_name:
        return None
    try:
        volume = cloud.network_volume(storage.volume_name)
        placement = place_on_volume(
            volume_name=storage.volume_name, volume=volume, datacenters=run.spec.pod.datacenters
        )
    except PortError as exc:
        raise PhaseFailed(f"network volume {storage.volume_name!r}: lookup failed: {exc}") from None
    except VolumePlacementError as exc:
        raise PhaseFailed(str(exc)) from None
    logger.info("[provision] %s", placement.info_line())
    return placement


def provision(run: RunContext, progress: RunProgress, claim: PodClaim) -> None:
    """Resume the paused pod (recycle) or create one, trying each candidate in turn; `claim`
    names the pod the moment its id exists."""
    progress.enter(Phase.PROVISION)
    assert run.backend is not None
    cloud = run.backend.cloud
    plan = candidate_plan(run, cloud)
    if not plan.candidates:
        raise PhaseFailed(plan.no_candidate_message())
    if run.spec.lifecycle.on_success is LifecycleAction.RECYCLE and _try_resume(
        run, progress, claim, cloud, plan.candidates[0]
    ):
        return
    # Before any pod exists, this run's pointer names the pod it is about to create (by its
    # unique name): a crash between create and the next write still leaves a pointer that
    # `ls-stale` matches to the pod and `cleanup --state-file` releases.
    write_intent_pointer(run)
    pod_env = run.backend.pod_env()  # the plugin warns about what it cannot put there
    errors: list[str] = []
    for index, candidate in enumerate(plan.candidates):
        request = pod_request(
            run.spec,
            candidate,
            name=run.job.run_id,
            network_volume_id=plan.network_volume_id,
            env=pod_env,
        )
        logger.info(
            "[provision] creating pod on %s @ %s", candidate.gpu_id, candidate.datacenter_id
        )
        run.kill_point("before-create")
        try:
            handle = cloud.create_pod(request)
        except CreateOutcomeUnknown as exc:
            recovered = _recover_after_bad_create(run, claim, cloud, candidate, request.name, exc)
            if recovered is not None:
                _adopt(run, claim, recovered.pod_id, candidate)
                _use_candidate_price(run, progress, candidate)
                return
            errors.append(
                f"{candidate.gpu_id}@{candidate.datacenter_id}: {exc} (no pod of that name was "
                "made)"
            )
        except (Unauthorized, NoCandidateHelps) as exc:
            # The account or the API refused, not this place: every other candidate would
            # get the same answer, so asking them only repeats it (and RunPod's 402 says stop).
            errors.append(f"{candidate.gpu_id}@{candidate.datacenter_id}: {exc}")
            raise PhaseFailed(
                "pod create refused for every candidate alike: " + "; ".join(errors)
            ) from None
        except PortError as exc:
            errors.append(f"{candidate.gpu_id}@{candidate.datacenter_id}: {exc}")
        else:
            _adopt(run, claim, handle.pod_id, candidate, created=True)
            _use_candidate_price(run, progress, candidate)
            return
        following = plan.candidates[index + 1] if index + 1 < len(plan.candidates) else None
        if following is not None:
            logger.warning(
                "[provision] %s; trying %s @ %s",
                errors[-1],
                following.gpu_id,
                following.datacenter_id,
            )
            run.recorder.event(
                "datacenter_failover",
                **{"from": candidate.datacenter_id, "to": following.datacenter_id},
                from_gpu_id=candidate.gpu_id,
                to_gpu_id=following.gpu_id,
                reason=errors[-1],
            )
    raise PhaseFailed("pod create failed on every candidate: " + "; ".join(errors))


def _use_candidate_price(run: RunContext, progress: RunProgress, candidate: Candidate) -> None:
    """The listed price x gpu_count counts from create (the ready wait bills too) until the pod
    reports its own price; an unknown one keeps the assumed rate (said once, at ready)."""
    if candidate.price_per_hour_usd is not None and candidate.price_per_hour_usd > 0:
        price = candidate.price_per_hour_usd * run.spec.pod.gpu_count
        progress.budget = progress.budget.with_price(price, "gpu_prices")


def _recover_after_bad_create(
    run: RunContext,
    claim: PodClaim,
    cloud: GpuCloud,
    candidate: Candidate,
    name: str,
    error: Exception,
) -> PodStatus | None:
    """The pod a failed create made, found by its name with a bounded wait; None when the
    lookup answered that there is none. Raises PhaseFailed when the lookup never answered:
    another create could then make a second pod while the first one bills unseen."""
    logger.warning(
        "[provision] create failed after it may have made a pod (%s); looking it up by name %s",
        error,
        name,
    )
    claim.ambiguous_name = name
    claim.unresolved_create = True
    claim.ambiguous_creates += 1
    claim.unseen_create_at = run.clock.monotonic()
    timing = run.deps.timing
    lookup = look_up_by_name(
        cloud,
        name,
        clock=run.clock,
        timeout_sec=timing.create_lookup_timeout_sec,
        poll=timing.ready_poll,
    )
    if lookup.pods is None:
        raise PhaseFailed(
            f"create on {candidate.gpu_id}@{candidate.datacenter_id} failed after it may have "
            f"made pod {name!r} ({error}), and looking it up by name failed for "
            f"{timing.create_lookup_timeout_sec:g}s ({lookup.error}); no other pod is created "
            "while that one may exist"
        )
    claim.unresolved_create = False
    if not lookup.pods:
        return None
    if len(lookup.pods) >= claim.ambiguous_creates:
        # One pod per such create is listed: none is still on its way. Fewer: the one found
        # may be an earlier create's, and this create's may show late (the last look waits).
        claim.unseen_create_at = None
    first, *extras = lookup.pods
    for extra in extras:  # deleted before the run ends (settle_ambiguous_creates)
        claim.note_created(extra.pod_id)
        claim.extra_pod_ids.append(extra.pod_id)
    return first


def _adopt(
    run: RunContext,
    claim: PodClaim,
    pod_id: str,
    candidate: Candidate,
    *,
    resumed: bool = False,
    created: bool = False,
) -> None:
    run.kill_point("after-create")
    claim.adopt(pod_id, candidate, resumed=resumed, created=created)
    write_pointer(run, claim, "CREATED")
    run.kill_point("after-pointer")
    run.recorder.event(
        "gpu_selected", gpu_id=candidate.gpu_id, datacenter_id=candidate.datacenter_id
    )
    run.recorder.event("pod_created", pod_id=pod_id)
    logger.info(
        "[provision] pod %s (state file %s; this run's %s)",
        pod_id,
        run.pointers.config.path,
        run.pointers.run.path,
    )


def _try_resume(
    run: RunContext, progress: RunProgress, claim: PodClaim, cloud: GpuCloud, first: Candidate
) -> bool:
    pointer = run.pointers.config.read()
    if pointer is None or pointer.get("provider", cloud.provider) != cloud.provider:
        return False
    old = str(pointer.get("pod_id", ""))
    if run.request.force_fresh:
        logger.info("[recycle] --force-fresh: deleting paused pod %s", old)
        if _terminate_quietly(progress, cloud, old):
            run.pointers.config.remove_if_points_at(old)
            _forget_run_pointer(pointer, old)
        return False
    try:
        status: PodStatus | None = cloud.get_pod(old)
    except NotFound:
        status = None
    decision = decide_resume(
        pointer=pointer,
        status=status,
        candidate=first,
        image=run.spec.pod.image,
        kept_running=run.backend is not None and run.backend.recycle_keeps_running,
    )
    logger.info("[recycle] %s: %s", old, decision.reason)
    if decision.terminate_old and _terminate_quietly(progress, cloud, old):
        run.pointers.config.remove_if_points_at(old)
        _forget_run_pointer(pointer, old)
    if not decision.resume:
        if status is None:
            run.pointers.config.remove_if_points_at(old)
            _forget_run_pointer(pointer, old)
        return False
    try:
        cloud.resume_pod(old, gpu_count=run.spec.pod.gpu_count)
    except NoCapacity as exc:
        # Its host has no free GPU: the pod is stuck there (a stopped pod cannot move), and
        # it was kept only to be resumed. Delete it rather than leave its disk billing.
        logger.warning(
            "[recycle] resume of %s found no free GPU on its host (%s); deleting it and "
            "creating a fresh pod",
            old,
            exc,
        )
        if _terminate_quietly(progress, cloud, old):
            run.pointers.config.remove_if_points_at(old)
            _forget_run_pointer(pointer, old)
        run.recorder.event("recycle_fallback", pod_id=old, reason=str(exc)[:500])
        return False
    except PortError as exc:
        # Not known to be stuck: it stays stopped, named by its own run's pointer (ls-stale).
        logger.warning("[recycle] resume of %s failed (%s); creating a fresh pod", old, exc)
        return False
    _adopt(run, claim, old, first, resumed=True)
    _forget_run_pointer(pointer, old)  # this run's pointer names the pod from now on
    run.recorder.event(
        "pod_resumed", pod_id=old, gpu_id=first.gpu_id, datacenter_id=first.datacenter_id
    )
    return True


def _terminate_quietly(progress: RunProgress, cloud: GpuCloud, pod_id: str) -> bool:
    """Delete an old pod; True once it is gone (its pointers may then go)."""
    try:
        cloud.terminate_pod(pod_id)
    except PortError as exc:
        logger.warning("[recycle] could not delete pod %s: %s", pod_id, exc)
        progress.leave(f"old pod {pod_id} could not be deleted: {exc}")
        return False
    return True


def _forget_run_pointer(config_pointer: Mapping[str, Any], pod_id: str) -> None:
    """Remove the per-run pointer of the run that kept `pod_id` (recycle), if it still names it."""
    path = config_pointer.get("run_pointer")
    if isinstance(path, str) and path:
        PodPointer(Path(path)).remove_if_points_at(pod_id)


def pointer_locator(run: RunContext) -> dict[str, Any]:
    """What a pointer records besides the pod id so that any later process can clean it up."""
    assert run.backend is not None
    return {
        "pod_name": run.job.run_id,
        "run_pointer": str(run.pointers.run.path),
        "config_state_file": str(run.pointers.config.path),
        LOCATOR_KEY: unstructure_locator(run.backend.locator),
    }


def write_intent_pointer(
    run: RunContext, *, status: str = "CREATING", other_pod_ids: Sequence[str] = ()
) -> None:
    """This run's pointer before create: the provider, where its pods live, the pod's name.
    Written again at the end of a run that may have left a pod of that name (`status`
    CREATE_UNSETTLED, `other_pod_ids` the ones known and not deleted).

    Raises OSError (the run fails with no pod) when it cannot be written before create.
    """
    assert run.backend is not None
    data: dict[str, Any] = {
        "pod_id": None,
        "provider": run.backend.cloud.provider,
        "image": run.spec.pod.image,
        "run_id": run.job.run_id,
        "run_dir": run.job.run_dir,
        "config_path": run.job.config_path,
        "status": status,
        "updated_at_utc": iso_utc(run.clock.now()),
        **pointer_locator(run),
    }
    if other_pod_ids:
        data["other_pod_ids"] = list(other_pod_ids)
    if status == "CREATING":
        run.pointers.run.write(data)
        return
    try:
        run.pointers.run.write(data)
    except OSError as exc:
        logger.warning("[state] could not write %s: %s", run.pointers.run.path, exc)


def write_pointer(
    run: RunContext, claim: PodClaim, status: str, *, lifecycle_action: str | None = None
) -> None:
    """Both pod pointers, rewritten atomically whenever the pod's state changes.

    Never raises: the per-run pointer was proven writable before create and, if a later write
    fails, still names the pod by name; the config's shared pointer is a convenience.
    """
    assert claim.pod_id is not None and claim.candidate is not None and run.backend
    data = pod_pointer(
        pod_id=claim.pod_id,
        provider=run.backend.cloud.provider,
        gpu_id=claim.candidate.gpu_id,
        datacenter_id=claim.candidate.datacenter_id,
        image=run.spec.pod.image,
        run_id=run.job.run_id,
        run_dir=run.job.run_dir,
        config_path=run.job.config_path,
        status=status,
        updated_at=run.clock.now(),
        lifecycle_action=lifecycle_action,
    )
    data.update(pointer_locator(run))
    if claim.extra_pod_ids:
        data["other_pod_ids"] = list(claim.extra_pod_ids)
    for pointer in (run.pointers.run, run.pointers.config):
        try:
            pointer.write(data)
        except OSError as exc:
            logger.warning("[state] could not write %s: %s", pointer.path, exc)


def remove_pointers(run: RunContext, pod_id: str) -> None:
    """After the pod is confirmed gone: both pointers, each only while it names this pod."""
    run.pointers.config.remove_if_points_at(pod_id)
    run.pointers.run.remove_if_points_at(pod_id)
