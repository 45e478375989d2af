"""The end of a run on a pod, after success or failure: best-effort pulls and capture, then
the lifecycle action (delete, stop, recycle, keep), the pod's final state, the pod pointer,
and notes on anything left behind.
"""

from __future__ import annotations

import logging

from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.gpujob import plan as run_plan
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.spec import LifecycleAction
from pegboard.domain.gpujob.stale import release_command
from pegboard.domain.ports.gpu_cloud import POD_TERMINATED, GpuCloud

from .artifact_pull import pull
from .pod_snapshots import capture_end
from .provisioning import remove_pointers, write_pointer
from .run_state import RunState

logger = logging.getLogger(__name__)


def finish(run: RunState) -> None:
    """After success or failure: best-effort pulls, capture, lifecycle action. Never raises."""
    if run.dry_run or run.pod_id is None or run.backend is None:
        if not run.dry_run and run.pod_id is None and not run.left_behind:
            # No pod was made (every create failed, nothing may exist): drop the pointer
            # written before create. Kept when a pod may exist: it names it by name.
            run.run_pointer.remove_if_no_pod()
        _note_possible_leftovers(run)
        return
    if (
        run.failed
        and run.script_started
        and run.sync is not None
        and run.failure_phase != Phase.PULL
    ):
        run.shielded("pull", lambda: pull(run, success=False))
    if run.script_started:
        run.shielded("capture", lambda: capture_end(run))
    if run.shell is not None:
        run.shielded("close", run.shell.close)
    run.kill_point(f"enter-{Phase.LIFECYCLE}")
    run.phase = Phase.LIFECYCLE
    run.phase_started = run.clock.monotonic()
    run.shielded("lifecycle", lambda: _lifecycle(run))
    run.end_phase()
    run.kill_point("after-lifecycle")
    _note_possible_leftovers(run)


def _note_possible_leftovers(run: RunState) -> None:
    for note in run.left_behind:
        logger.warning("[lifecycle] left behind: %s", note)


def _lifecycle(run: RunState) -> None:
    assert run.backend is not None and run.pod_id is not None
    cloud = run.backend.cloud
    action = run_plan.action_for(run.spec, failed=run.failed)
    run.action = action
    pod_id = run.pod_id
    logger.info(
        "[lifecycle] %s pod %s (%s)", action, pod_id, "failure" if run.failed else "success"
    )
    try:
        if action is LifecycleAction.DELETE:
            cloud.terminate_pod(pod_id)
        elif action in (LifecycleAction.STOP, LifecycleAction.RECYCLE):
            cloud.stop_pod(pod_id)
    except NotFound:
        # Deleted underneath the run: nothing is left, so nothing to release.
        logger.warning("[lifecycle] pod %s is already gone", pod_id)
        run.final_state = POD_TERMINATED
        run.recorder.event("pod_gone", pod_id=pod_id)
        remove_pointers(run, pod_id)
        return
    except PortError as exc:
        run.left_behind.append(
            f"pod {pod_id} is still there: {action} failed ({exc}); remove it with: "
            + release_command(
                pod_id=pod_id, provider=cloud.provider, state_file=str(run.run_pointer.path)
            )
        )
        run.recorder.event(
            "lifecycle_failed", action=str(action), pod_id=pod_id, error=str(exc)[:500]
        )
        _record_final_state(run, cloud, pod_id)
        return
    run.recorder.event("lifecycle_action", action=str(action), pod_id=pod_id)
    _record_final_state(run, cloud, pod_id)
    if run_plan.keeps_pointer(action):
        write_pointer(run, run.final_state or "UNKNOWN", lifecycle_action=str(action))
        note = run_plan.leftover_note(
            action=action,
            pod_id=pod_id,
            provider=cloud.provider,
            state_file=str(run.run_pointer.path),
            volume_gb=run.status.volume_gb if run.status else None,
            pod_dir=run.pod_dir,
        )
        if note:
            run.left_behind.append(note)
    elif run.final_state == POD_TERMINATED:
        remove_pointers(run, pod_id)
        logger.info("[lifecycle] pod %s deleted; disk released", pod_id)
    else:
        # Not confirmed gone: the pointers stay, so the pod stays findable and releasable.
        write_pointer(run, run.final_state or "UNKNOWN", lifecycle_action=str(action))
        run.left_behind.append(
            f"pod {pod_id} was asked to delete but is still listed "
            f"({run.final_state or 'state unknown'}); check and release it with: "
            + release_command(
                pod_id=pod_id, provider=cloud.provider, state_file=str(run.run_pointer.path)
            )
        )


def _record_final_state(run: RunState, cloud: GpuCloud, pod_id: str) -> None:
    try:
        run.final_state = cloud.get_pod(pod_id).desired_status
    except NotFound:
        run.final_state = POD_TERMINATED
    except PortError as exc:
        logger.warning("[lifecycle] final state unknown: %s", exc)
