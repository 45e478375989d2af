"""A simulated kubelet: runs each container's command as a local process, no image is pulled.

Per pod a daemon thread walks the real lifecycle (scheduled, pulled, created, started, terminated),
writes schema-complete statuses and Events, and feeds the merged stdout+stderr of each process
into a ContainerLog. Deleting the pod kills its process groups.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import queue
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pegboard.adapters.kube_semantics import podstatus
from pegboard.adapters.kube_semantics.events import scheduled_message
from pegboard.adapters.kube_semantics.expansion import expand
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339
from pegboard.adapters.kube_semantics.status import StatusError

from . import container_fs
from .events import NODE_NAME, record_event
from .faults import Faults
from .logs import ContainerLog
from .scheduler import Scheduler
from .store import PERSISTENT_VOLUME_CLAIMS, PODS, Change, JsonObject, Store

logger = logging.getLogger(__name__)

_F_SETPIPE_SZ = 1031  # Linux fcntl: a bigger pipe means fewer, larger reads of heavy output
_READ_SIZE = 1 << 20
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_LOOPBACK = "127.0.0.1"  # the node's and every pod's address


def _now() -> str:
    return format_rfc3339(time.time_ns())


class PodGone(Exception):
    """The pod was deleted while the kubelet was working on it."""


# Set by the container runtime or the image, not by the kubelet: its expansion never sees them.
_RUNTIME_ENV = ("PATH", "HOME", "HOSTNAME")


def kubelet_defined(env: dict[str, str]) -> dict[str, str]:
    """The variables the kubelet's `$(VAR)` expansion knows: the service env and the declared
    env (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables), without what the runtime adds."""
    return {key: value for key, value in env.items() if key not in _RUNTIME_ENV}


def container_argv(container: JsonObject, env: dict[str, str]) -> list[str]:
    """Entrypoint: `command` + `args`, each expanded as the kubelet does
    (ExpandContainerCommandAndArgs, see kube_semantics.expansion); args alone run as argv (the
    images we mimic have no ENTRYPOINT); neither runs `true` (their default `sh` exits at once on
    a closed stdin)."""
    defined = kubelet_defined(env)
    command = [expand(str(part), defined) for part in container.get("command") or ()]
    args = [expand(str(part), defined) for part in container.get("args") or ()]
    argv = command + args
    return argv or ["true"]


def _unschedulable(message: str) -> Callable[[JsonObject], None]:
    def mutate(pod: JsonObject) -> None:
        podstatus.mark_unschedulable(pod, message=message, stamp=_now())

    return mutate


def _set_entry(key: str, index: int, value: JsonObject) -> Callable[[JsonObject], None]:
    """A pod mutation replacing one entry of status[key] (containerStatuses, initContainerStatuses)."""

    def mutate(pod: JsonObject) -> None:
        pod["status"][key][index] = value

    return mutate


@dataclasses.dataclass
class ContainerRun:
    """One container process and what became of it."""

    spec: JsonObject
    log: ContainerLog
    container_id: str
    process: subprocess.Popen[bytes] | None = None
    started_at: str = ""
    finished_at: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    oom_killed: bool = False
    env: dict[str, str] = dataclasses.field(default_factory=dict)  # what an exec runs with too
    workdir: Path = Path()
    isolated_root: str = ""  # set, with its working directory, when it has its own mounts
    isolated_workdir: str | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.exit_code is None

    def status(self) -> JsonObject:
        if self.exit_code is None:
            return podstatus.running_status(
                self.spec, container_id=self.container_id, started_at=self.started_at
            )
        return podstatus.terminated_status(
            self.spec,
            container_id=self.container_id,
            exit_code=self.exit_code,
            reason=self.reason,
            started_at=self.started_at or None,
            finished_at=self.finished_at,
            message=self.message,
        )


class PodRuntime:
    """The kubelet's state for one pod."""

    def __init__(self, pod: JsonObject, scratch: Path) -> None:
        meta = pod["metadata"]
        self.namespace: str = meta["namespace"]
        self.name: str = meta["name"]
        self.uid: str = meta["uid"]
        self.scratch = scratch
        self.deleted = threading.Event()
        self.logs: dict[str, ContainerLog] = {}
        self.runs: dict[str, ContainerRun] = {}
        self.volumes: dict[str, tuple[Path, bool]] = {}  # volume name -> host directory
        self.execs: set[subprocess.Popen[bytes]] = set()  # exec'd commands: they die with the pod
        self.lock = threading.Lock()

    def kill(self, grace_seconds: float) -> None:
        """SIGTERM every process group, SIGKILL after the grace period (in the background)."""
        self.deleted.set()
        with self.lock:
            # An exited (reaped) container needs no signal, nor a thread to wait for it.
            processes = [
                run.process
                for run in self.runs.values()
                if run.process and run.process.returncode is None
            ]
            processes += [process for process in self.execs if process.returncode is None]
            logs = list(self.logs.values())
        for process in processes:
            _signal_group(process, signal.SIGTERM)
        if processes:
            threading.Thread(
                target=_kill_after, args=(processes, grace_seconds), daemon=True
            ).start()
        for log in logs:
            log.close()


class _StartFailed(Exception):
    """The mount helper could not set the container up or exec its command (its words)."""


def _spawn(argv: list[str], *, helper: bool, **popen: Any) -> subprocess.Popen[bytes]:
    """Popen, or through mount_helper with an error pipe: returns once the command is exec'd;
    _StartFailed with the helper's message when it could not be."""
    if not helper:
        return subprocess.Popen(argv, bufsize=0, **popen)
    read_end, write_end = os.pipe()
    try:
        env = {**popen.pop("env"), "PEGBOARD_ERROR_FD": str(write_end)}
        process = subprocess.Popen(argv, bufsize=0, env=env, pass_fds=(write_end,), **popen)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as errors:
        message = errors.read()
    if message:
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        raise _StartFailed(message.decode(errors="replace"))
    return process


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _reap(process: subprocess.Popen[bytes], forget_group: Callable[[int], None]) -> None:
    """When the main process exits, the container ends: kill what it left running in its group,
    so a background child holding the output pipe cannot keep the container alive."""
    process.wait()
    _signal_group(process, signal.SIGKILL)
    forget_group(process.pid)


def _kill_after(processes: list[subprocess.Popen[bytes]], grace_seconds: float) -> None:
    for process in processes:
        try:
            process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(process, signal.SIGKILL)


class Kubelet:
    """Watches the store for pods and runs them; `container_log` serves /log."""

    def __init__(
        self,
        store: Store,
        faults: Faults,
        scratch_root: Path,
        *,
        kill_grace_seconds: float = 1.0,
        track_group: Callable[[int], None] = lambda pgid: None,
        forget_group: Callable[[int], None] = lambda pgid: None,
        scheduler: Scheduler | None = None,
        isolate_volumes: bool = True,
    ) -> None:
        self._scheduler = scheduler
        # Containers with volume mounts get a mount namespace of their own (container_fs).
        self._isolate = isolate_volumes and container_fs.isolation_unavailable() is None
        # Told each container's process group when it starts and ends (the sandbox's reaper).
        self._track_group = track_group
        self._forget_group = forget_group
        self._store = store
        self._faults = faults
        self._scratch_root = scratch_root
        self._kill_grace = kill_grace_seconds
        self._pods: dict[str, PodRuntime] = {}
        self._lock = threading.Lock()
        self._stopped = False
        # Scratch directories of deleted pods, and their containers' logs, removed by one
        # background thread (started on first use): like the real kubelet (its container GC
        # removes a deleted pod's containers and log files: pkg/kubelet/kuberuntime/
        # kuberuntime_gc.go), cleanup is not the DELETE request's work. Freeing a 256 MiB log
        # took 35-60 ms, which the DELETE answer waited for.
        self._to_remove: queue.SimpleQueue[tuple[Path, PodRuntime | None] | None] = (
            queue.SimpleQueue()
        )
        self._remover: threading.Thread | None = None
        self._deleted_claims: set[Path] = set()
        store.subscribe(self._on_change)

    # -- public ----------------------------------------------------------------------------------

    def set_scratch_root(self, scratch_root: Path) -> None:
        """Where pods get their working directories (the sandbox makes it on start)."""
        self._scratch_root = scratch_root

    def container_log(self, uid: str, container: str) -> ContainerLog | None:
        with self._lock:
            runtime = self._pods.get(uid)
        return runtime.logs.get(container) if runtime else None

    @property
    def isolates_volumes(self) -> bool:
        return self._isolate

    def claim_directory(self, namespace: str, claim: str) -> Path:
        """A PersistentVolumeClaim's data: one directory per claim object (its uid), kept until
        the claim is deleted."""
        found = self._store.find(PERSISTENT_VOLUME_CLAIMS, namespace, claim)
        suffix = f"-{found['metadata']['uid'][:8]}" if found else ""
        return self._scratch_root.parent / "claims" / namespace / f"{claim}{suffix}"

    def running_container(self, uid: str, container: str) -> ContainerRun | None:
        """The container's run while its main process is alive (what the runtime can exec in)."""
        with self._lock:
            runtime = self._pods.get(uid)
        if runtime is None:
            return None
        with runtime.lock:
            run = runtime.runs.get(container)
        return run if run is not None and run.running else None

    def exec_process(
        self,
        uid: str,
        container: str,
        argv: list[str],
        *,
        stdin: int,
        stdout: int,
        stderr: int,
        tty: bool,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` in a running container: its environment and working directory. A
        StatusError 500 `container not found ("c")` when it is not running (the kubelet's
        GetExec, pkg/kubelet/kubelet_pods.go); OSError when the command cannot start."""
        with self._lock:
            runtime = self._pods.get(uid)
        run = self.running_container(uid, container)
        if runtime is None or run is None:
            raise StatusError(500, f"container not found ({json.dumps(container)})")
        # With a terminal the command leads a session whose controlling terminal it is (as
        # runc's exec with a console), so ^C typed into it is a SIGINT.
        setsid = shutil.which("setsid") if tty else None
        isolated = run.isolated_workdir is not None and run.process is not None
        if isolated:
            assert run.process is not None and run.isolated_workdir is not None
            argv = container_fs.exec_argv(
                run.process.pid, run.isolated_root, run.isolated_workdir, argv
            )
        try:
            process = _spawn(
                [setsid, "--ctty", "--", *argv] if setsid else argv,
                helper=isolated,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=run.workdir,
                env=run.env,
                start_new_session=setsid is None,
            )
        except _StartFailed as exc:
            raise OSError(errno.ENOENT, str(exc)) from None
        self._track_group(process.pid)
        with runtime.lock:
            runtime.execs.add(process)
            gone = runtime.deleted.is_set()
        if gone:
            _signal_group(process, signal.SIGKILL)
        threading.Thread(target=self._reap_exec, args=(runtime, process), daemon=True).start()
        return process

    def _reap_exec(self, runtime: PodRuntime, process: subprocess.Popen[bytes]) -> None:
        process.wait()
        self._forget_group(process.pid)
        with runtime.lock:
            runtime.execs.discard(process)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            runtimes = list(self._pods.values())
        self._to_remove.put(None)
        for runtime in runtimes:
            runtime.kill(0.0)

    # -- reacting to the store -------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.resource is PERSISTENT_VOLUME_CLAIMS and change.type == "DELETED":
            meta = change.object["metadata"]
            directory = self._scratch_root.parent / "claims" / meta["namespace"]
            self._forget_claim(directory / f"{meta['name']}-{meta['uid'][:8]}")
            return
        if change.resource is not PODS:
            return
        uid = change.object["metadata"]["uid"]
        if change.type == "ADDED":
            scratch = self._scratch_root / f"{change.object['metadata']['name']}-{uid[:8]}"
            runtime = PodRuntime(change.object, scratch)
            with self._lock:
                if self._stopped:
                    return
                self._pods[uid] = runtime
            faults = dataclasses.replace(self._faults)  # knobs are fixed per pod at pickup
            threading.Thread(
                target=self._run_pod,
                args=(runtime, change.object, faults),
                daemon=True,
                name=f"kubelet-{runtime.name}",
            ).start()
        elif change.type == "DELETED":
            with self._lock:
                runtime_or_none = self._pods.pop(uid, None)
            if runtime_or_none is not None:
                grace = change.object["spec"].get("terminationGracePeriodSeconds", 30)
                runtime_or_none.kill(min(float(grace), self._kill_grace))
                self._remove_later(runtime_or_none.scratch, runtime_or_none)
                for directory in list(self._deleted_claims):
                    self._forget_claim(directory)

    def _forget_claim(self, directory: Path) -> None:
        """A deleted claim's data goes once no pod of ours mounts it any more (a running pod
        keeps it, as the pvc-protection finalizer keeps the claim on a cluster)."""
        with self._lock:
            in_use = any(
                directory == source
                for runtime in self._pods.values()
                for source, _ in runtime.volumes.values()
            )
            if in_use:
                self._deleted_claims.add(directory)
                return
            self._deleted_claims.discard(directory)
        self._remove_later(directory)

    def _remove_later(self, scratch: Path, runtime: PodRuntime | None = None) -> None:
        with self._lock:
            if self._remover is None:
                self._remover = threading.Thread(
                    target=self._remove_scratch, daemon=True, name="kubelet-cleanup"
                )
                self._remover.start()
        self._to_remove.put((scratch, runtime))

    def _remove_scratch(self) -> None:
        while (item := self._to_remove.get()) is not None:
            scratch, runtime = item
            shutil.rmtree(scratch, ignore_errors=True)
            if runtime is not None:
                for log in runtime.logs.values():
                    log.release()
            del item, runtime  # the last references: a deleted pod's memory goes here

    # -- the pod lifecycle ---------------------------------------------------------------------------

    def _update(self, runtime: PodRuntime, mutate: Callable[[JsonObject], None]) -> JsonObject:
        if runtime.deleted.is_set():
            raise PodGone
        try:
            return self._store.update(PODS, runtime.namespace, runtime.name, mutate)
        except StatusError as exc:
            raise PodGone from exc

    def _event(
        self,
        pod: JsonObject,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        component: str = "kubelet",
        field_path: str | None = None,
    ) -> None:
        record_event(
            self._store,
            pod,
            reason=reason,
            message=message,
            type=type,
            component=component,
            field_path=field_path,
        )

    def _run_pod(self, runtime: PodRuntime, pod: JsonObject, faults: Faults) -> None:
        try:
            self._lifecycle(runtime, pod, faults)
        except PodGone:
            pass
        except Exception:
            logger.exception(
                "simulated kubelet failed on pod %s/%s", runtime.namespace, runtime.name
            )

    def _lifecycle(self, runtime: PodRuntime, pod: JsonObject, faults: Faults) -> None:
        if faults.delete_pod_after_seconds is not None:
            threading.Thread(
                target=self._delete_later,
                args=(runtime, faults.delete_pod_after_seconds),
                daemon=True,
            ).start()
        spec = pod["spec"]
        if faults.unschedulable:
            message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
            self._update(
                runtime, lambda p: podstatus.mark_unschedulable(p, message=message, stamp=_now())
            )
            self._event(
                pod, "FailedScheduling", message, type="Warning", component="default-scheduler"
            )
            return
        init_specs: list[JsonObject] = spec.get("initContainers") or []
        app_specs: list[JsonObject] = spec["containers"]
        pod = self._bind(runtime, pod)
        if faults.slow_start_seconds and runtime.deleted.wait(faults.slow_start_seconds):
            raise PodGone
        runtime.scratch.mkdir(parents=True, exist_ok=True)
        runtime.volumes = container_fs.volume_sources(pod, runtime.scratch, self.claim_directory)

        for index, init in enumerate(init_specs):
            if index == 0 and faults.init_container_waiting_reason:
                reason = faults.init_container_waiting_reason
                self._update(
                    runtime,
                    _set_entry(
                        "initContainerStatuses",
                        0,
                        podstatus.waiting_status(
                            init, reason, f"init container {init['name']} is stuck"
                        ),
                    ),
                )
                self._event(
                    pod,
                    "BackOff" if "BackOff" in reason else "Failed",
                    f"init container {init['name']}: {reason}",
                    type="Warning",
                    field_path=f"spec.initContainers{{{init['name']}}}",
                )
                return
            if not self._pull(runtime, pod, init, faults, "initContainerStatuses", index):
                return
            run = self._start(runtime, pod, init, faults, pod_env=self._pod_env(pod))
            self._update(
                runtime,
                _set_entry("initContainerStatuses", index, run.status()),
            )
            self._wait(runtime, run)
            self._update(
                runtime,
                _set_entry("initContainerStatuses", index, run.status()),
            )
            if run.exit_code != 0:
                self._finish(runtime, [run], failed_init=True)
                return
        if init_specs:
            self._update(
                runtime, lambda p: podstatus.set_condition(p["status"], "Initialized", True, _now())
            )

        for index, container in enumerate(app_specs):
            if not self._pull(runtime, pod, container, faults, "containerStatuses", index):
                return
        runs = [
            self._start(runtime, pod, container, faults, pod_env=self._pod_env(pod))
            for container in app_specs
        ]

        def running(p: JsonObject) -> None:
            p["status"]["containerStatuses"] = [run.status() for run in runs]
            podstatus.set_phase(p, "Running", _now(), pod_ip=_LOOPBACK)

        if any(run.process for run in runs):
            self._update(runtime, running)
        for run in runs:
            self._wait(runtime, run)
        self._finish(runtime, runs)

    def _bind(self, runtime: PodRuntime, pod: JsonObject) -> JsonObject:
        """The scheduler's part: bind the pod to a node (the one node of a sandbox without
        declared nodes; else the scheduler's choice), waiting Pending while none fits or a
        claim it mounts does not exist."""

        def on(node: str) -> Callable[[JsonObject], None]:
            return lambda p: podstatus.mark_scheduled(p, node=node, host_ip=_LOOPBACK, stamp=_now())

        scheduler = self._scheduler
        preset = pod["spec"].get("nodeName")
        if scheduler is None or (preset and scheduler.declared):
            bound = self._update(runtime, on(preset or NODE_NAME))
        else:
            reported = None
            placed: list[JsonObject] = []
            while not placed:
                generation = scheduler.generation
                message = scheduler.schedule(
                    pod, lambda node: placed.append(self._update(runtime, on(node)))
                )
                if message is None:
                    break
                if message != reported:  # a new verdict: the condition and one more event
                    reported = message
                    self._update(runtime, _unschedulable(message))
                    self._event(
                        pod, "FailedScheduling", message, type="Warning",
                        component="default-scheduler",
                    )  # fmt: skip
                if runtime.deleted.is_set() or self._stopped:
                    raise PodGone
                scheduler.wait(generation, 0.5)
            bound = placed[0]
        node_name = bound["spec"]["nodeName"]
        self._event(
            bound, "Scheduled", scheduled_message(bound, node_name), component="default-scheduler"
        )
        return bound

    def _delete_later(self, runtime: PodRuntime, seconds: float) -> None:
        if runtime.deleted.wait(seconds) or self._stopped:
            return
        with contextlib.suppress(StatusError):
            self._store.remove(PODS, runtime.namespace, runtime.name)

    def _pull(
        self,
        runtime: PodRuntime,
        pod: JsonObject,
        container: JsonObject,
        faults: Faults,
        statuses_key: str,
        index: int,
    ) -> bool:
        """Events of an image pull; on an injected failure leave the container waiting forever."""
        image = container.get("image", "")
        group = "initContainers" if statuses_key == "initContainerStatuses" else "containers"
        field_path = f"spec.{group}{{{container['name']}}}"
        self._event(pod, "Pulling", f'Pulling image "{image}"', field_path=field_path)
        if faults.image_pull_failure and faults.image_pull_fails(image):
            message = f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and unpack image "{image}": not found'
            self._update(
                runtime,
                _set_entry(
                    statuses_key,
                    index,
                    podstatus.waiting_status(container, "ErrImagePull", message),
                ),
            )
            self._event(pod, "Failed", message, type="Warning", field_path=field_path)
            self._event(pod, "Failed", "Error: ErrImagePull", type="Warning", field_path=field_path)
            if runtime.deleted.wait(0.2):
                raise PodGone
            backoff = f'Back-off pulling image "{image}"'
            self._update(
                runtime,
                _set_entry(
                    statuses_key,
                    index,
                    podstatus.waiting_status(container, "ImagePullBackOff", backoff),
                ),
            )
            self._event(pod, "BackOff", backoff, field_path=field_path)
            self._event(
                pod, "Failed", "Error: ImagePullBackOff", type="Warning", field_path=field_path
            )
            return False
        self._event(
            pod,
            "Pulled",
            f'Successfully pulled image "{image}" in 1ms (1ms including waiting). Image size: 3623807 bytes.',
            field_path=field_path,
        )
        return True

    def _pod_env(self, pod: JsonObject) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", _DEFAULT_PATH),
            "HOSTNAME": pod["metadata"]["name"],
            "KUBERNETES_SERVICE_HOST": _LOOPBACK,
            "KUBERNETES_SERVICE_PORT": "443",
        }

    def _container_env(
        self, pod: JsonObject, container: JsonObject, base: dict[str, str], home: Path
    ) -> dict[str, str]:
        env = dict(base)
        env["HOME"] = str(home)
        field_refs = {
            "metadata.name": pod["metadata"]["name"],
            "metadata.namespace": pod["metadata"]["namespace"],
            "metadata.uid": pod["metadata"]["uid"],
            "spec.nodeName": pod["spec"].get("nodeName") or NODE_NAME,
            "status.podIP": _LOOPBACK,
            "status.hostIP": _LOOPBACK,
        }
        for item in container.get("env") or ():
            if "value" in item:
                env[item["name"]] = expand(str(item["value"]), kubelet_defined(env))
            elif (ref := (item.get("valueFrom") or {}).get("fieldRef")) is not None:
                env[item["name"]] = field_refs.get(ref.get("fieldPath", ""), "")
        return env

    def _start(
        self,
        runtime: PodRuntime,
        pod: JsonObject,
        container: JsonObject,
        faults: Faults,
        *,
        pod_env: dict[str, str],
    ) -> ContainerRun:
        name = container["name"]
        group = (
            "initContainers"
            if container in (pod["spec"].get("initContainers") or ())
            else "containers"
        )
        field_path = f"spec.{group}{{{name}}}"
        log = ContainerLog(rotation=faults.rotation())  # the kubelet's log manager policy
        run = ContainerRun(
            spec=container, log=log, container_id=f"containerd://{secrets.token_hex(32)}"
        )
        with runtime.lock:
            if runtime.deleted.is_set():
                raise PodGone
            runtime.logs[name] = log
            runtime.runs[name] = run
        env = self._container_env(pod, container, pod_env, runtime.scratch)
        plan = None
        if self._isolate:
            plan = container_fs.mount_plan(
                container,
                runtime.volumes,
                root=runtime.scratch / "roots" / name,
                default_workdir=str(runtime.scratch),
            )
        workdir = runtime.scratch
        if plan is not None:
            run.isolated_root, run.isolated_workdir = plan["root"], plan["workdir"]
        elif container.get("workingDir"):
            workdir = runtime.scratch / str(container["workingDir"]).lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        argv = container_argv(container, env)
        run.env, run.workdir = env, workdir
        self._event(pod, "Created", f"Created container: {name}", field_path=field_path)
        run.started_at = _now()
        try:
            run.process = _spawn(
                container_fs.start_argv(plan, argv) if plan is not None else argv,
                helper=plan is not None,
                # core/v1 Container.stdin: without it "reads from stdin in the container will
                # always result in EOF"; with it (and no stdinOnce) the runtime keeps a stdin
                # buffer open that only an attach writes to: a read waits. Nobody attaches here.
                stdin=subprocess.PIPE if container.get("stdin") else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
            self._track_group(run.process.pid)
        except (OSError, _StartFailed) as exc:
            detail = (
                str(exc)
                if isinstance(exc, _StartFailed)
                else f'exec: "{argv[0]}": {exc.strerror or exc}'
            )
            run.exit_code, run.reason, run.finished_at = 128, "StartError", _now()
            run.message = f"failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: {detail}: unknown"
            log.finish()
            self._event(
                pod, "Failed", f"Error: {run.message}", type="Warning", field_path=field_path
            )
            return run
        if runtime.deleted.is_set():
            _signal_group(run.process, signal.SIGKILL)
        self._event(pod, "Started", f"Started container {name}", field_path=field_path)
        threading.Thread(
            target=self._pump, args=(run, faults.oom_limit(container.get("image", ""))), daemon=True
        ).start()
        return run

    def _pump(self, run: ContainerRun, oom_limit: int | None) -> None:
        """Copy process output into the log, and OOM-kill at the injected limit."""
        process = run.process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        with contextlib.suppress(OSError):
            import fcntl

            fcntl.fcntl(fd, _F_SETPIPE_SZ, _READ_SIZE)
        if oom_limit == 0:
            run.oom_killed = True
            _signal_group(process, signal.SIGKILL)
        threading.Thread(target=_reap, args=(process, self._forget_group), daemon=True).start()
        written = 0
        try:
            while data := os.read(fd, _READ_SIZE):
                run.log.feed(data)
                written += len(data)
                if oom_limit is not None and not run.oom_killed and written >= oom_limit:
                    run.oom_killed = True
                    _signal_group(process, signal.SIGKILL)
        finally:
            process.stdout.close()
            code = process.wait()
            if process.stdin is not None:
                process.stdin.close()
            run.finished_at = _now()
            run.exit_code = code if code >= 0 else 128 - code
            if run.oom_killed:
                run.exit_code, run.reason = 137, "OOMKilled"
            else:
                run.reason = podstatus.exit_reason(run.exit_code)
            run.log.finish()

    def _wait(self, runtime: PodRuntime, run: ContainerRun) -> None:
        """Block until the container's output is drained and its exit code known."""
        if run.process is None:
            return
        while not run.log.wait_finished(0.5):
            if runtime.deleted.is_set():
                raise PodGone
        if runtime.deleted.is_set():
            raise PodGone

    def _finish(
        self, runtime: PodRuntime, runs: list[ContainerRun], *, failed_init: bool = False
    ) -> None:
        succeeded = not failed_init and all(run.exit_code == 0 for run in runs)

        def terminal(p: JsonObject) -> None:
            if not failed_init:
                p["status"]["containerStatuses"] = [run.status() for run in runs]
            phase = "Succeeded" if succeeded else "Failed"
            podstatus.set_phase(p, phase, _now(), pod_ip=None if failed_init else _LOOPBACK)

        self._update(runtime, terminal)
