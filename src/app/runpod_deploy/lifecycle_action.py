"""The end of a run on a pod, after success or failure: best-effort pulls and capture, then
the lifecycle action (delete, stop, recycle, preserve), the pod's final state, the pod
pointers, and notes on anything left behind. (squarepeg's lifecycle.py is a different thing:
its whole run.) An orchestrator: it writes the action and final state into the RunRecord.
"""

from __future__ import annotations

import logging

from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.gpujob import plan as run_plan
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.spec import LifecycleAction
from pegboard.domain.gpujob.stale import release_command
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import POD_TERMINATED, GpuCloud

from .artifact_pull import pull
from .create_lookup import settle_ambiguous_creates
from .pod_snapshots import capture_end
from .provisioning import remove_pointers, write_intent_pointer, write_pointer
from .run_state import PodClaim, RunContext, RunProgress, RunRecord

logger = logging.getLogger(__name__)


def finish(run: RunContext, progress: RunProgress, claim: PodClaim, record: RunRecord) -> None:
    """After success or failure: best-effort pulls, capture, lifecycle action. Never raises."""
    unsettled = False
    if not run.dry_run:
        # First of all, pods an ambiguous create made besides the one in use (or instead of
        # it): deleted, or named in the manifest and the pointer.
        unsettled = settle_ambiguous_creates(run, progress, claim)
    if run.dry_run or claim.pod_id is None or run.backend is None:
        if unsettled:
            write_intent_pointer(run, status="CREATE_UNSETTLED", other_pod_ids=claim.extra_pod_ids)
        elif not run.dry_run and claim.pod_id is None and not progress.left_behind:
            # No pod was made (every create failed, nothing may exist): drop the pointer
            # written before create. Kept when a pod may exist: it names it by name.
            run.pointers.run.remove_if_no_pod()
        _note_possible_leftovers(progress)
        return
    session = record.session
    if session is not None:
        sync = session.sync
        if (
            progress.failed
            and record.script_started
            and sync is not None
            and progress.failure_phase != Phase.PULL
        ):
            progress.shielded("pull", lambda: _pull_after_failure(run, sync, record))
        if record.script_started:
            progress.shielded("capture", lambda: capture_end(run, session.shell))
        progress.shielded("close", session.shell.close)
    run.kill_point(f"enter-{Phase.LIFECYCLE}")
    progress.start(Phase.LIFECYCLE)
    progress.shielded("lifecycle", lambda: _lifecycle(run, progress, claim, record))
    progress.end_phase()
    if unsettled and run.pointers.run.read() is None:
        # The run's pod is gone with its pointer, but a pod of its name may still be there.
        write_intent_pointer(run, status="CREATE_UNSETTLED", other_pod_ids=claim.extra_pod_ids)
    run.kill_point("after-lifecycle")
    _note_possible_leftovers(progress)


def _pull_after_failure(run: RunContext, sync: FileSync, record: RunRecord) -> None:
    record.artifacts.extend(pull(run, sync, record.job, success=False).artifacts)


def _note_possible_leftovers(progress: RunProgress) -> None:
    for note in progress.left_behind:
        logger.warning("[lifecycle] left behind: %s", note)


def _lifecycle(run: RunContext, progress: RunProgress, claim: PodClaim, record: RunRecord) -> None:
    assert run.backend is not None and claim.pod_id is not None
    cloud = run.backend.cloud
    action = run_plan.action_for(run.spec, failed=progress.failed)
    pod_id = claim.pod_id
    if record.never_ready and action is not LifecycleAction.DELETE:
        logger.warning(
            "[lifecycle] pod %s never became ready: deleting it instead of %s (no work is on "
            "it, and a stopped pod keeps billing for its disk)",
            pod_id,
            action,
        )
        action = LifecycleAction.DELETE
    record.action = action
    logger.info(
        "[lifecycle] %s pod %s (%s)", action, pod_id, "failure" if progress.failed else "success"
    )
    try:
        if action is LifecycleAction.DELETE:
            cloud.terminate_pod(pod_id)
        elif action is LifecycleAction.STOP or (
            action is LifecycleAction.RECYCLE and not run.backend.recycle_keeps_running
        ):
            cloud.stop_pod(pod_id)
    except NotFound:
        # Deleted underneath the run: nothing is left, so nothing to release.
        logger.warning("[lifecycle] pod %s is already gone", pod_id)
        record.final_state = POD_TERMINATED
        run.recorder.event("pod_gone", pod_id=pod_id)
        remove_pointers(run, pod_id)
        return
    except PortError as exc:
        progress.leave(
            f"pod {pod_id} is still there: {action} failed ({exc}); remove it with: "
            + release_command(
                pod_id=pod_id, provider=cloud.provider, state_file=str(run.pointers.run.path)
            )
        )
        run.recorder.event(
            "lifecycle_failed", action=str(action), pod_id=pod_id, error=str(exc)[:500]
        )
        record.final_state = _final_state(cloud, pod_id)
        return
    run.recorder.event("lifecycle_action", action=str(action), pod_id=pod_id)
    if action is LifecycleAction.PRESERVE or (
        action is LifecycleAction.RECYCLE and run.backend.recycle_keeps_running
    ):
        _stamp_kept(run, pod_id, action)
    record.final_state = _final_state(cloud, pod_id)
    session = record.session
    if run_plan.keeps_pointer(action):
        write_pointer(run, claim, record.final_state or "UNKNOWN", lifecycle_action=str(action))
        note = run_plan.leftover_note(
            action=action,
            pod_id=pod_id,
            provider=cloud.provider,
            state_file=str(run.pointers.run.path),
            volume_gb=session.status.volume_gb if session else None,
            billed=run.deps.providers.billed(cloud.provider),
            pod_dir=session.pod_dir if session else None,
            cost_per_hour_usd=session.status.cost_per_hour_usd if session else None,
            stopped_why="for forensics" if progress.failed else "(lifecycle.on_success: stop)",
            kept_running=run.backend.recycle_keeps_running,
        )
        if note:
            progress.leave(note)
    elif record.final_state == POD_TERMINATED:
        remove_pointers(run, pod_id)
        logger.info("[lifecycle] pod %s deleted; disk released", pod_id)
    else:
        # Not confirmed gone: the pointers stay, so the pod stays findable and releasable.
        write_pointer(run, claim, record.final_state or "UNKNOWN", lifecycle_action=str(action))
        progress.leave(
            f"pod {pod_id} was asked to delete but is still listed "
            f"({record.final_state or 'state unknown'}); check and release it with: "
            + release_command(
                pod_id=pod_id, provider=cloud.provider, state_file=str(run.pointers.run.path)
            )
        )


def _stamp_kept(run: RunContext, pod_id: str, action: LifecycleAction) -> None:
    """The pod stays because the user asked: say so where other tools look (best effort: the
    pod is kept either way; only its workspace might then go with a `squarepeg clean`)."""
    assert run.backend is not None
    try:
        run.backend.keep_workspace(pod_id, str(action))
    except PortError as exc:
        logger.warning("[lifecycle] could not mark pod %s's workspace as kept: %s", pod_id, exc)


def _final_state(cloud: GpuCloud, pod_id: str) -> str | None:
    """The pod's state after the action: TERMINATED once the provider no longer has it."""
    try:
        return cloud.get_pod(pod_id).desired_status
    except NotFound:
        return POD_TERMINATED
    except PortError as exc:
        logger.warning("[lifecycle] final state unknown: %s", exc)
        return None
