"""Tailing a job log (`runpod-deploy logs`): the job log of the pod a config's state file names, over RemoteShell.

    runpod-deploy logs --config PATH [--var K=V ...] [--vars-file F] [--lines N] [--no-follow]

The config is rendered as `run` renders it, with the run stamp of the run that wrote the state
file (so a `log_path` with `{run_id}` finds that run's log). The last N lines (default 200) go
to stdout as raw bytes, then, unless --no-follow, what the job appends, until the job records
its exit status (then exit 0) or Ctrl-C (exit 130). --no-follow exits with the remote `tail`'s
code. A stopped pod has no shell: the message says where `run` pulled the log instead (exit 1).
"""

from __future__ import annotations

import logging
import posixpath
import shlex
from pathlib import Path

import attrs

from pegboard.domain.errors import NotFound, PegboardError, PortError
from pegboard.domain.gpujob.stale import pointer_pod_id, pointer_provider
from pegboard.domain.gpujob.templates import RenderedJob, make_builtins, render_job
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .job_loading import LoadedJob, merge_cli_vars
from .phases import LOG_PIECE, job_paths
from .pod_access import PodCommandDeps, backend_for_pointer, load_config
from .pod_pointers import read_pointer
from .run_history import read_manifest, run_dirs
from .sigterm import sigterm_as_interrupt

logger = logging.getLogger(__name__)

HEARTBEAT_SEC = 1.0  # how often an idle follow checks whether the job has ended
HEAD_TIMEOUT_SEC = 120.0


@attrs.frozen
class LogsRequest:
    config_path: Path
    var_args: tuple[str, ...] = ()
    vars_file: Path | None = None
    lines: int = 200
    follow: bool = True


def tail_logs(request: LogsRequest, deps: PodCommandDeps) -> int:
    loaded = load_config(deps, request.config_path, request.var_args, request.vars_file)
    state_file = loaded.job.state_file
    pointer = read_pointer(Path(state_file))
    pod_id = pointer_pod_id(pointer) if pointer is not None else None
    if pointer is None or pod_id is None:
        raise NotFound(
            f"no pod to read: no state file naming a pod at {state_file}" + _pulled_hint(loaded)
        )
    backend = backend_for_pointer(deps, pointer_provider(pointer), pointer)
    run_dir = pointer.get("run_dir")
    try:
        status = backend.cloud.get_pod(pod_id)
    except NotFound:
        raise NotFound(
            f"pod {pod_id} (named by {state_file}) no longer exists"
            + (f"; its log was pulled to {run_dir}" if run_dir else "")
        ) from None
    job = _job_of_that_run(loaded, deps, request, pointer.get("run_dir"), status)
    log_path = job.run.log_path
    if status.access is None:  # not reachable through its provider's shell
        pulled = f"{run_dir}/{posixpath.basename(log_path)}" if run_dir else "the run directory"
        raise PortError(
            f"pod {pod_id} is {status.desired_status}: no shell to read {log_path} "
            f"(run pulled the log to {pulled})"
        )
    shell = backend.open_shell(status)
    try:
        with sigterm_as_interrupt():
            return _tail(shell, job, log_path, request, deps)
    finally:
        shell.close()


def _pulled_hint(loaded: LoadedJob) -> str:
    """Where the latest run of this config pulled its log, when its pod is released."""
    job = loaded.job
    for run_dir in reversed(run_dirs(Path(job.project_root))):
        manifest = read_manifest(run_dir)
        if manifest is not None and manifest.get("config_path") == job.config_path:
            log = run_dir / posixpath.basename(job.run.log_path)
            where = str(log) if log.is_file() else f"{run_dir} (its run directory)"
            return f"; its last run released the pod and pulled the log to {where}"
    return ""


def _job_of_that_run(
    loaded: LoadedJob,
    deps: PodCommandDeps,
    request: LogsRequest,
    run_dir: object,
    status: PodStatus,
) -> RenderedJob:
    """Re-render with the pointer's run stamp and the pod's real volume path (as run did)."""
    spec = loaded.spec
    root = status.workspace_root
    if root and root != spec.storage.volume_mount:
        spec = attrs.evolve(spec, storage=attrs.evolve(spec.storage, volume_mount=root))
    if not isinstance(run_dir, str) or not run_dir:
        if spec is loaded.spec:
            return loaded.job  # 0.8.4's pointer: no run recorded, today's rendering
        run_stamp = posixpath.basename(loaded.job.run_dir)
    else:
        run_stamp = posixpath.basename(run_dir.rstrip("/"))
    builtins = make_builtins(
        spec,
        document=loaded.document,
        config_path=loaded.job.config_path,
        home=deps.home,
        run_stamp=run_stamp,
    )
    cli_vars = merge_cli_vars(request.var_args, request.vars_file)
    return render_job(spec, cli_vars=cli_vars, builtins=builtins, document=loaded.document)


def _tail(
    shell: RemoteShell, job: RenderedJob, log_path: str, request: LogsRequest, deps: PodCommandDeps
) -> int:
    quoted = shlex.quote(log_path)
    # The size first, then the last N lines of exactly that many bytes: following from that
    # offset neither repeats nor loses a byte written meanwhile.
    head = shell.run(
        f'n=$(wc -c < {quoted}) || exit $?; echo "$n"; head -c "$n" {quoted} | '
        f"tail -n {request.lines}",
        timeout=HEAD_TIMEOUT_SEC,
    )
    if head.exit_code != 0:
        message = head.stderr.decode(errors="replace").strip() or f"cannot read {log_path}"
        logger.error("%s", message)
        return head.exit_code
    size_line, _, tail = head.stdout.partition(b"\n")
    offset = int(size_line.strip() or b"0")
    if not _write(deps, tail) or not request.follow:
        return 0
    paths = job_paths(job.run)
    stream = shell.follow(log_path, from_offset=offset, heartbeat=HEARTBEAT_SEC)
    try:
        for chunk in stream:
            if chunk:
                offset += len(chunk)
                if not _write(deps, chunk):
                    return 0
                continue
            ended = shell.detached_status(pid_path=paths.pid, status_path=paths.status)
            if ended.exit_code is not None:
                # The rest a piece at a time: the job can end far ahead of the follow.
                while piece := shell.read_file(log_path, offset=offset, limit=LOG_PIECE):
                    offset += len(piece)
                    if not _write(deps, piece):
                        return 0
                logger.info("the job ended with exit code %d", ended.exit_code)
                return 0
    finally:
        stream.close()
    return 0


class StdoutRefused(PegboardError):
    """stdout refused the log's bytes (`> /dev/full`): one line and exit 1, like every command."""


def _write(deps: PodCommandDeps, chunk: bytes) -> bool:
    """False once stdout's reader went away (`| head`): stop reading, nothing is wrong."""
    if not chunk:
        return True
    try:
        deps.out_bytes(chunk)
    except (BrokenPipeError, ValueError):
        return False
    except OSError as exc:
        raise StdoutRefused(f"could not write to stdout ({exc.strerror or exc})") from None
    return True
