"""Releasing pods (`runpod-deploy cleanup`): the pod a state file names, or the user's stopped
pods in bulk.

The command `run` and `ls-stale` print for a pod left behind:
    runpod-deploy cleanup --state-file PATH --pod-id ID [--mode preserve|stop|delete] [--dry-run]
    runpod-deploy cleanup --pod-id ID [--provider P]             (no pointer of ours names it)
    runpod-deploy cleanup --state-file PATH                      (0.8.4's form, still accepted)
    runpod-deploy cleanup --config PATH [--var K=V ...]          (the config's state file)
    runpod-deploy cleanup --all-stopped [--yes] [--dry-run] [--provider P]
                          [--name-prefix P ...] [--all-owners] [--include-recycled]

A state file is ours (it records its provider) or 0.8.4's (`pod_id`, `id` or `podId`; RunPod).
A pod that is already gone is not an error: the pointer is removed and the exit is 0. With
`--pod-id`, a state file that names another pod is refused (exit 2): the per-config state file
is shared by that config's runs, so it may name a later run's pod. A pointer goes only once
its pod is confirmed gone; the local provider's pods are found under the pods root the
pointer records, whatever PEGBOARD_LOCAL_PODS_ROOT says now.
The bulk mode fixes 0.8.4's §17.14 (it deleted every EXITED pod on the account): only pods
this user's runs created (see `stale.select_bulk_delete`), never a pod a recycle pointer keeps
warm, after a y/N question on stderr; one failed delete does not stop the others.
Exit (exit_codes.py): 0 done (or nothing to do); 1 aborted at the prompt, or a single delete
failed; 2 a usage error; 4 some bulk deletes failed (0.8.4 exited 2); 130 interrupted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from pegboard.domain.errors import NotFound, PortError, UsageError
from pegboard.domain.gpujob import plan as run_plan
from pegboard.domain.gpujob.spec import DEFAULT_PROVIDER, LifecycleAction
from pegboard.domain.gpujob.stale import (
    KeptWarm,
    kept_warm,
    owner_prefix,
    pointer_pod_id,
    pointer_pod_name,
    pointer_provider,
    select_bulk_delete,
    stale_report,
    stale_table,
    storage_rates,
)
from pegboard.domain.ports.gpu_cloud import POD_EXITED, POD_TERMINATED, GpuCloud, PodStatus

from .exit_codes import EXIT_CLEANUP_PARTIAL, EXIT_FAILED, EXIT_OK
from .pod_access import PodCommandDeps, backend_for_pointer, cloud_for_flag
from .pod_pointers import lifecycle_of, read_pointer, unlink_pointer_if_names, user_pointers
from .state_paths import state_paths

logger = logging.getLogger(__name__)

MODES = ("preserve", "stop", "delete")


@attrs.frozen
class PointerCleanup:
    state_file: Path | None  # None: --pod-id alone
    mode: str = "delete"
    dry_run: bool = False
    expect_pod_id: str | None = None  # --pod-id: the pod the command was printed for


@attrs.frozen
class BulkCleanup:
    provider: str = DEFAULT_PROVIDER
    yes: bool = False
    dry_run: bool = False
    name_prefixes: tuple[str, ...] = ()
    all_owners: bool = False
    include_recycled: bool = False


def cleanup_pointer(request: PointerCleanup, deps: PodCommandDeps) -> int:
    """Apply `mode` to the pod the state file names; remove the file once the pod is gone.

    With `expect_pod_id` (the `--pod-id` that `run` and `ls-stale` print), a pointer that now
    names another pod is refused: a release command only ever touches the pod it was printed
    for. A pointer written before create names its pod by its unique name only.
    """
    path = request.state_file
    assert path is not None
    pointer = read_pointer(path)
    if pointer is None:
        if path.exists():
            raise UsageError(f"--state-file {path}: not a JSON pod pointer")
        logger.warning("no state file at %s: nothing to clean up (already released?)", path)
        return EXIT_OK
    pod_id = pointer_pod_id(pointer)
    pod_name = pointer_pod_name(pointer)
    if pod_id is None and pod_name is None:
        raise UsageError(f"--state-file {path}: names no pod (no pod_id, id or podId)")
    provider = pointer_provider(pointer)
    cloud = backend_for_pointer(deps, provider, pointer).cloud
    if pod_id is None and pod_name is not None:
        pod_id, others = _pod_by_name(cloud, path, pod_name, request.expect_pod_id)
        if others:
            # Another pod of that name is still there: the pointer stays, naming it.
            logger.info("%s also names pod(s) %s (same name); it stays", path, ", ".join(others))
            pod_name = None
        if pod_id is None and request.expect_pod_id is not None:
            # The listing may not show it by name yet: the pod ls-stale printed, if named so.
            pod_id = _pod_named(cloud, request.expect_pod_id, pod_name)
        if pod_id is None:
            logger.info(
                "no pod named %s (%s): it was never created, or is gone", pod_name, provider
            )
            if not request.dry_run and unlink_pointer_if_names(path, None, pod_name=pod_name):
                logger.info("removed the state file %s", path)
            return EXIT_OK
    if pod_id is None:
        raise UsageError(f"--state-file {path}: names no pod (no pod_id, id or podId)")
    expected = request.expect_pod_id
    if expected is not None and expected != pod_id:
        raise UsageError(
            f"--state-file {path} names pod {pod_id}, not --pod-id {expected}: refusing "
            f"(another run's pod); release {expected} with: runpod-deploy cleanup "
            f"--pod-id {expected} --provider {provider}"
        )
    return _release(
        request,
        cloud,
        pod_id=pod_id,
        provider=provider,
        pointers=_pointers_of(path, pointer),
        pod_name=pod_name,
        billed=deps.providers.billed(provider),
    )


def cleanup_pod_id(request: PointerCleanup, provider: str, deps: PodCommandDeps) -> int:
    """`--pod-id ID --provider P` alone: that pod, and every pointer of this user naming it."""
    assert request.expect_pod_id is not None
    cloud = cloud_for_flag(deps, provider)
    pod_id = request.expect_pod_id
    pointers = [
        Path(path)
        for path, data in user_pointers(state_paths(deps.home, deps.environ)).items()
        if pointer_pod_id(data) == pod_id and pointer_provider(data) == provider
    ]
    return _release(
        request,
        cloud,
        pod_id=pod_id,
        provider=provider,
        pointers=pointers,
        billed=deps.providers.billed(provider),
    )


def _pod_by_name(
    cloud: GpuCloud, path: Path, name: str, expected: str | None
) -> tuple[str | None, list[str]]:
    """The one live pod of the pointer's name, or with `--pod-id` (printed by ls-stale for
    one of several pods an ambiguous create left under that name) that one; and the other live
    pods of that name."""
    found = [pod for pod in cloud.find_pods(name=name) if pod.desired_status != POD_TERMINATED]
    if expected is not None and any(pod.pod_id == expected for pod in found):
        return expected, [pod.pod_id for pod in found if pod.pod_id != expected]
    if len(found) > 1:
        ids = ", ".join(pod.pod_id for pod in found)
        raise UsageError(
            f"--state-file {path}: {len(found)} pods are named {name} ({ids}); "
            "release each with --pod-id ID --provider P"
        )
    return (found[0].pod_id if found else None), []


def _pod_named(cloud: GpuCloud, pod_id: str, name: str | None) -> str | None:
    """`pod_id` if the provider has that pod under `name`, else None."""
    try:
        status = cloud.get_pod(pod_id)
    except NotFound:
        return None
    return pod_id if status.name == name and status.desired_status != POD_TERMINATED else None


def _pointers_of(path: Path, pointer: Mapping[str, Any]) -> list[Path]:
    """The state file given, and the other pointer of the same run that names the same pod."""
    paths = [path]
    for key in ("run_pointer", "config_state_file"):
        other = pointer.get(key)
        if isinstance(other, str) and other and Path(other) != path:
            paths.append(Path(other))
    return paths


def _release(
    request: PointerCleanup,
    cloud: GpuCloud,
    *,
    pod_id: str,
    provider: str,
    pointers: list[Path],
    pod_name: str | None = None,
    billed: bool = True,
) -> int:
    path = request.state_file or "no state file"
    dry = "[dry-run] " if request.dry_run else ""
    try:
        status = cloud.get_pod(pod_id)
    except NotFound:
        logger.info("pod %s (%s) is already gone", pod_id, provider)
        if request.dry_run:
            logger.info("[dry-run] would remove the state file(s) naming it")
        else:
            _unlink_all(pointers, pod_id, pod_name)
        return EXIT_OK
    logger.info("%spod %s (%s, %s): %s", dry, pod_id, status.name, provider, status.desired_status)
    if request.mode == "preserve":
        logger.info("preserve: pod %s left as it is (%s)", pod_id, status.desired_status)
        return EXIT_OK
    if request.mode == "stop":
        return _stop(request, cloud, status, provider, billed=billed)
    if request.dry_run:
        logger.info("[dry-run] would delete pod %s and remove the state file(s) naming it", pod_id)
        return EXIT_OK
    try:
        cloud.terminate_pod(pod_id)
    except PortError as exc:
        raise PortError(f"delete of pod {pod_id} failed: {exc}; {path} still names it") from None
    # The pointers go only once the pod is confirmed gone.
    try:
        after = cloud.get_pod(pod_id).desired_status
    except NotFound:
        after = POD_TERMINATED
    if after != POD_TERMINATED:
        raise PortError(
            f"pod {pod_id} is still listed ({after}) after delete; {path} still names it"
        )
    _unlink_all(pointers, pod_id, pod_name)
    logger.info("pod %s deleted; disk released; its state file(s) removed", pod_id)
    return EXIT_OK


def _status_after_delete(cloud: GpuCloud, pod_id: str) -> str:
    """TERMINATED once the provider no longer has the pod; otherwise what it reports."""
    try:
        return cloud.get_pod(pod_id).desired_status
    except NotFound:
        return POD_TERMINATED
    except PortError as exc:
        return f"unknown: {exc}"


def _unlink_all(pointers: list[Path], pod_id: str, pod_name: str | None) -> None:
    """Each pointer that still names the pod: by id, or (written before create) by name."""
    for pointer in pointers:
        if unlink_pointer_if_names(pointer, pod_id) or (
            pod_name is not None and unlink_pointer_if_names(pointer, None, pod_name=pod_name)
        ):
            logger.info("removed the state file %s", pointer)


def _stop(
    request: PointerCleanup, cloud: GpuCloud, status: PodStatus, provider: str, *, billed: bool
) -> int:
    pod_id = status.pod_id
    if status.desired_status == POD_EXITED:
        logger.info("pod %s is already stopped", pod_id)
    elif request.dry_run:
        logger.info("[dry-run] would stop pod %s", pod_id)
        return EXIT_OK
    else:
        try:
            cloud.stop_pod(pod_id)
        except PortError as exc:
            raise PortError(f"stop of pod {pod_id} failed: {exc}") from None
    note = run_plan.leftover_note(
        action=LifecycleAction.STOP,
        pod_id=pod_id,
        provider=provider,
        state_file=None if request.state_file is None else str(request.state_file),
        volume_gb=status.volume_gb,
        billed=billed,
        stopped_why="(cleanup --mode stop)",
    )
    if note:
        logger.warning("%s", note)
    return EXIT_OK


def cleanup_all_stopped(request: BulkCleanup, deps: PodCommandDeps) -> int:
    """Delete this user's stopped pods after confirmation; collect failures."""
    provider = request.provider
    cloud = cloud_for_flag(deps, provider)
    stopped = cloud.list_pods(status=POD_EXITED)
    pointers = {
        path: data
        for path, data in user_pointers(state_paths(deps.home, deps.environ)).items()
        if pointer_provider(data) == provider
    }
    run_prefixes = {p for p in (owner_prefix(data) for data in pointers.values()) if p}
    warm: dict[str, KeptWarm] = {}
    for path, data in pointers.items():
        pod_id = pointer_pod_id(data)
        keeper = kept_warm(
            pod_id=pod_id or "", state_file=path, lifecycle_action=lifecycle_of(data)
        )
        if pod_id and keeper is not None:
            warm.setdefault(pod_id, keeper)
    selection = select_bulk_delete(
        stopped,
        run_prefixes=run_prefixes,
        name_prefixes=request.name_prefixes,
        all_owners=request.all_owners,
        warm=warm,
        include_recycled=request.include_recycled,
    )
    if selection.not_ours:
        logger.info(
            "left alone: %d stopped pod(s) not created by your runs "
            "(match them with --name-prefix P, or take every pod with --all-owners)",
            len(selection.not_ours),
        )
    for pod, reason in selection.kept:
        logger.info(
            "left alone: pod %s (%s): %s (--include-recycled deletes it)",
            pod.pod_id,
            pod.name,
            reason,
        )
    if not selection.delete:
        logger.info("no stopped pod to delete (%s)", provider)
        return _offer_to_remove_dangling(request, deps, cloud)
    report = stale_report(
        pods=selection.delete,
        pointers={},
        provider=provider,
        now=deps.clock.now(),
        volume_rates=storage_rates(billed=deps.providers.billed(provider)),
    )
    for line in stale_table(report):
        deps.out(line)
    count = len(selection.delete)
    if request.dry_run:
        logger.info("[dry-run] would delete %d stopped pod(s) and their disks", count)
        return EXIT_OK
    if not request.yes:
        answer = deps.ask(f"Delete these {count} stopped pod(s) and their disks? [y/N] ")
        if answer is None or answer.strip().lower() not in ("y", "yes"):
            logger.warning("aborted: nothing deleted")
            return EXIT_FAILED
    failures: list[str] = []
    for pod in selection.delete:
        try:
            cloud.terminate_pod(pod.pod_id)
        except PortError as exc:
            failures.append(f"{pod.pod_id}: {exc}")
            logger.error("delete of pod %s failed: %s", pod.pod_id, exc)
            continue
        after = _status_after_delete(cloud, pod.pod_id)
        if after != POD_TERMINATED:  # its pointers stay until it is confirmed gone
            failures.append(f"{pod.pod_id}: still listed ({after}) after delete")
            logger.error("pod %s is still listed (%s) after delete", pod.pod_id, after)
            continue
        logger.info("deleted pod %s (%s)", pod.pod_id, pod.name)
        for path, data in pointers.items():
            if pointer_pod_id(data) == pod.pod_id and unlink_pointer_if_names(
                Path(path), pod.pod_id
            ):
                logger.info("removed the state file %s", path)
    logger.info("deleted %d of %d stopped pod(s)", count - len(failures), count)
    if failures:
        logger.error("%d delete(s) failed: %s", len(failures), "; ".join(failures))
        return EXIT_CLEANUP_PARTIAL
    return _offer_to_remove_dangling(request, deps, cloud)


def _offer_to_remove_dangling(
    request: BulkCleanup,
    deps: PodCommandDeps,
    cloud: GpuCloud,
) -> int:
    """State files whose pod is gone (or, written before a create that never happened, never
    existed): listed, and removed after confirmation, each only while it still names the same
    pod (a run writing it meanwhile keeps it)."""
    pointers = user_pointers(state_paths(deps.home, deps.environ))
    dangling = stale_report(
        pods=cloud.list_pods(),
        pointers=pointers,
        provider=request.provider,
        now=deps.clock.now(),
        volume_rates=storage_rates(billed=deps.providers.billed(request.provider)),
    ).dangling
    if not dangling:
        return EXIT_OK
    deps.out("dangling state files (their pod is gone, or was never created):")
    for pointer in dangling:
        deps.out(f"  {pointer.state_file}  (pod {pointer.pod_id or 'never created'})")
    if request.dry_run:
        logger.info("[dry-run] would remove %d dangling state file(s)", len(dangling))
        return EXIT_OK
    if not request.yes:
        answer = deps.ask(f"Remove these {len(dangling)} dangling state file(s)? [y/N] ")
        if answer is None or answer.strip().lower() not in ("y", "yes"):
            logger.info("dangling state files kept")
            return EXIT_OK
    for pointer in dangling:
        data = pointers.get(pointer.state_file) or {}
        if unlink_pointer_if_names(
            Path(pointer.state_file), pointer.pod_id or None, pod_name=pointer_pod_name(data)
        ):
            logger.info("removed the state file %s", pointer.state_file)
    return EXIT_OK
