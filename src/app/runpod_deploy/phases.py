"""The pod-side steps of a run, each a function over the ports (used by run_job and on_pod).

A phase that cannot go on raises PhaseFailed with a one-line reason; port errors are turned
into reasons by the caller. Nothing here writes to stdout except the job's own log bytes.
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import NotFound, PortError, Unauthorized
from pegboard.domain.gpujob.monitor import LogMonitor, Outcome, StepEvent, Verdict
from pegboard.domain.gpujob.plan import RunBudget
from pegboard.domain.gpujob.records import metrics_command, parse_metrics
from pegboard.domain.gpujob.templates import (
    RenderedCommand,
    RenderedRemoteEnv,
    RenderedRun,
    RenderedSecret,
)
from pegboard.domain.input_limits import InputRejected
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.gpu_cloud import POD_TERMINATED, GpuCloud, PodStatus
from pegboard.domain.ports.remote_shell import ByteStream, HostKeyRejected, RemoteShell
from pegboard.domain.secret_masking import MaskingStream, SecretMasker

from .run_types import PhaseFailed, Timing

logger = logging.getLogger(__name__)


EmitEvent = Callable[..., None]


class Redactor:
    """Masks secret values (`***`, pegboard.domain.secret_masking) in whatever the run prints
    or records: messages, events, the manifest, and the job's and commands' output streams.

    Secrets are added before the pod exists (the validate phase reads each one), so every
    stream opened later masks all of them.
    """

    def __init__(self) -> None:
        self._raw: list[str] = []
        self._masker = SecretMasker(())

    def add(self, value: str) -> None:
        if value not in self._raw:
            self._raw.append(value)
            self._masker = SecretMasker(self._raw)

    def __bool__(self) -> bool:
        return bool(self._masker)

    def __call__(self, text: str) -> str:
        return self._masker.mask_text(text)

    def mask_bytes(self, data: bytes) -> bytes:
        return self._masker.mask_bytes(data)

    def mask_record(self, value: Any) -> Any:
        """A JSON-like value with every string in it masked (keys included)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self.mask_record(k): self.mask_record(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask_record(item) for item in value]
        return value

    def stream(self, sink: Callable[[bytes], None]) -> MaskedOutput:
        return MaskedOutput(self._masker.stream(), sink)


class MaskedOutput:
    """A byte sink that masks secrets split across chunks: call it with each chunk, then
    `flush()` once the stream has ended (it releases the few bytes held back)."""

    def __init__(self, stream: MaskingStream, sink: Callable[[bytes], None]) -> None:
        self._stream = stream
        self._sink = sink

    def __call__(self, chunk: bytes) -> None:
        masked = self._stream.feed(chunk)
        if masked:
            self._sink(masked)

    def flush(self) -> None:
        rest = self._stream.flush()
        if rest:
            self._sink(rest)


# --- provisioning: waiting for the pod ----------------------------------------------------------


class PodNeverReady(PhaseFailed):
    """The pod did not answer within the ready timeout, or can never start: no work is on it."""


# What no wait can fix: a key missing, unusable or refused, a changed host key. (RunPod's images
# put PUBLIC_KEY into authorized_keys before sshd starts, so a refusal is final, not a race.)
NEVER_RETRIED = (Unauthorized, HostKeyRejected)

LOG_PIECE = 1 << 20  # the job log's unread rest is read this much at a time: memory stays flat
READY_HEARTBEAT_SEC = 30.0  # a waiting run says so at least this often (a cold pull takes minutes)


def wait_until_ready(
    cloud: GpuCloud,
    pod_id: str,
    *,
    open_shell: Callable[[PodStatus], RemoteShell],
    clock: Clock,
    timeout_sec: float,
    timing: Timing,
    probe: bool = True,
) -> tuple[PodStatus, RemoteShell]:
    """Poll the pod until it is ready (its provider's shell and file sync can reach it:
    PodStatus.access) and a command runs over its shell; transient errors are retried.

    `probe=False`: a command already ran over the shell's connection (the ssh provider's
    claim), so a published pod is ready without running another one.

    Logs a heartbeat (status, waited, left) every READY_HEARTBEAT_SEC; raises PodNeverReady
    when `timeout_sec` passes first.
    """
    started = clock.monotonic()
    deadline = started + timeout_sec
    next_heartbeat = started + READY_HEARTBEAT_SEC
    polls = 0
    last = "no status yet"
    while True:
        try:
            status = cloud.get_pod(pod_id)
            last = status.desired_status
            if status.start_failure is not None:
                raise PodNeverReady(f"pod {pod_id} cannot start: {status.start_failure}")
            if status.ready:
                shell = open_shell(status)
                if not probe:
                    return status, shell
                try:
                    shell.run("true", timeout=timing.shell_probe_timeout_sec)
                    return status, shell
                except PortError as exc:
                    shell.close()
                    if isinstance(exc, NEVER_RETRIED):
                        raise
                    last = f"{status.desired_status}, shell not answering ({exc})"
        except NotFound:
            raise PhaseFailed(f"pod {pod_id} disappeared while starting") from None
        except NEVER_RETRIED as exc:
            raise PhaseFailed(f"pod {pod_id}: {exc} (no retry can fix this)") from None
        except PortError as exc:
            last = f"status query failed ({exc})"
        now = clock.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            raise PodNeverReady(f"pod {pod_id} not ready after {timeout_sec:g}s (last: {last})")
        if now >= next_heartbeat:
            logger.info(
                "[ready] waiting for pod %s: %s; %.0fs waited, %.0fs left",
                pod_id,
                last,
                now - started,
                remaining,
            )
            next_heartbeat = now + READY_HEARTBEAT_SEC
        polls += 1
        clock.sleep(min(timing.ready_poll.delay(polls), remaining, max(0.0, next_heartbeat - now)))


def pod_is_gone(cloud: GpuCloud, pod_id: str) -> bool:
    """True only when the provider says the pod no longer exists (an error is not an answer)."""
    try:
        return cloud.get_pod(pod_id).desired_status == POD_TERMINATED
    except NotFound:
        return True
    except PortError:
        return False


# --- commands -----------------------------------------------------------------------------------


def run_commands(
    shell: RemoteShell,
    commands: Sequence[RenderedCommand],
    *,
    label: str,
    remote_env: RenderedRemoteEnv,
    budget: RunBudget,
    clock: Clock,
    on_output: Callable[[bytes], None],
    redact: Redactor,
) -> None:
    """Run setup or preflight commands in order; the first non-zero exit fails the phase."""
    for index, item in enumerate(commands):
        command = (remote_env.shell_prefix() if item.with_env else "") + item.command
        remaining = budget.remaining(clock.monotonic())
        if remaining <= 0:
            raise PhaseFailed(budget.exceeded_reason(clock.monotonic()) or "budget exhausted")
        logger.info("[%s] %d/%d: %s", label, index + 1, len(commands), _brief(redact(item.command)))
        result = shell.run(command, timeout=min(item.timeout_sec, remaining), on_output=on_output)
        if result.exit_code != 0:
            tail = redact(result.stderr.decode(errors="replace").strip())[-300:]
            raise PhaseFailed(
                f"{label} command {index + 1} exited {result.exit_code}: "
                f"{_brief(redact(item.command))}" + (f" ({tail})" if tail else ""),
                exit_code=result.exit_code,
            )


# --- secrets ------------------------------------------------------------------------------------


def secret_payload(
    secret: RenderedSecret,
    *,
    environ: Mapping[str, str],
    read_local_file: Callable[[str], bytes],
    redact: Redactor,
) -> bytes:
    """The secret file's bytes: `KEY='value'` lines (shell-quoted for `source`) or the file."""
    if secret.file is not None:
        try:
            data = read_local_file(secret.file)
        except FileNotFoundError:
            raise PhaseFailed(f"secret {secret.name!r}: no such file {secret.file}") from None
        except OSError as exc:
            raise PhaseFailed(
                f"secret {secret.name!r}: cannot read {secret.file}: {exc.strerror or exc}"
            ) from None
        except InputRejected as exc:  # past MAX_SECRET_FILE_BYTES
            raise PhaseFailed(f"secret {secret.name!r}: {secret.file}: {exc}") from None
        redact.add(data.decode(errors="replace"))  # the whole file and each of its lines
        return data
    lines = []
    for key, variable in secret.env_keys:
        if variable not in environ:
            raise PhaseFailed(f"secret {secret.name!r}: environment variable {variable} is not set")
        redact.add(environ[variable])
        lines.append(f"{key}={shlex.quote(environ[variable])}\n")
    return "".join(lines).encode()


# --- launch and monitor -------------------------------------------------------------------------


@attrs.frozen
class JobPaths:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    script: str
    log: str
    status: str
    pid: str


def job_paths(run: RenderedRun) -> JobPaths:
    return JobPaths(
        run.script_path, run.log_path, run.script_path + ".exit", run.script_path + ".pid"
    )


def launch(shell: RemoteShell, run: RenderedRun, paths: JobPaths) -> int:
    """Deliver the script as data (no heredoc: any body is safe) and start it detached."""
    body = run.body if run.body.endswith("\n") else run.body + "\n"
    shell.write_file(paths.script, body.encode(), mode=0o755)
    return shell.start_detached(
        paths.script, log_path=paths.log, status_path=paths.status, pid_path=paths.pid
    )


@attrs.frozen
class MonitorResult:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    verdict: Verdict
    log_bytes: int


def monitor(
    shell: RemoteShell,
    run: RenderedRun,
    paths: JobPaths,
    *,
    budget: RunBudget,
    clock: Clock,
    timing: Timing,
    job_output: Callable[[bytes], None],
    emit: EmitEvent,
    pod_gone: Callable[[], bool] = lambda: False,
) -> MonitorResult:
    """Stream the log to `job_output` and decide; a transient error never ends the run.

    Unless the pod itself is gone: every error is checked against `pod_gone` first, so a pod
    deleted underneath the run ends it at once instead of after `lost_contact_after_sec`.
    """
    machine = LogMonitor(success_marker=run.success_marker, failure_markers=run.failure_markers)
    offset = 0
    stream: ByteStream | None = None
    last_probe = float("-inf")
    trouble_since: float | None = None
    retries = 0  # within the current outage: reset as soon as the pod answers again

    def take(data: bytes, now: float) -> None:
        nonlocal offset
        if not data:
            return
        offset += len(data)
        job_output(data)
        _emit_steps(emit, machine.feed(data, now=now))

    try:
        while machine.verdict is None:
            now = clock.monotonic()
            try:
                if stream is None:
                    stream = shell.follow(
                        paths.log, from_offset=offset, heartbeat=timing.follow_heartbeat_sec
                    )
                take(next(stream), clock.monotonic())
                if machine.verdict is not None:
                    break
                now = clock.monotonic()
                marker_at = machine.success_seen_at
                interval = (
                    timing.after_marker_probe_sec
                    if marker_at is not None
                    else timing.probe_interval_sec
                )
                # The first probe after the success marker goes at once: waiting for the
                # interval would also wait for the follow's next heartbeat (~0.1 s).
                if now - last_probe >= interval or (
                    marker_at is not None and last_probe < marker_at
                ):
                    last_probe = now
                    status = shell.detached_status(pid_path=paths.pid, status_path=paths.status)
                    if not status.running:
                        # Everything the script wrote is in the file now: read it all first,
                        # a piece at a time (a fast script can end far ahead of the follow).
                        while piece := shell.read_file(paths.log, offset=offset, limit=LOG_PIECE):
                            take(piece, now)
                        _emit_steps(emit, machine.end_of_log(now=now))
                        machine.observe_status(status, now=now)
                trouble_since = None
                retries = 0
            except PortError as exc:
                if stream is not None:
                    stream.close()
                    stream = None
                if pod_gone():
                    # 0.8.4's event for a pod that died under the run (recipes query it).
                    emit("pod_killed_unexpected", state=POD_TERMINATED, note=str(exc)[:500])
                    raise PhaseFailed(
                        f"the pod is gone (deleted outside this run): {exc}"
                    ) from None
                trouble_since = now if trouble_since is None else trouble_since
                if now - trouble_since >= timing.lost_contact_after_sec:
                    raise PhaseFailed(
                        f"lost contact with the pod for {now - trouble_since:.0f}s: {exc}"
                    ) from None
                logger.warning("[monitor] transient error, retrying: %s", exc)
                retries += 1
                clock.sleep(timing.monitor_retry.delay(retries))
                continue
            machine.tick(now=clock.monotonic(), grace=timing.success_exit_grace_sec)
            if machine.verdict is not None:
                break
            now = clock.monotonic()
            exceeded = budget.exceeded_reason(now)
            if exceeded is not None:
                raise PhaseFailed(exceeded)
    finally:
        if stream is not None:
            stream.close()
    verdict = machine.verdict
    assert verdict is not None
    if verdict.outcome is Outcome.FAILED:
        raise PhaseFailed(verdict.reason, exit_code=verdict.exit_code)
    return MonitorResult(verdict=verdict, log_bytes=offset)


def _emit_steps(emit: EmitEvent, steps: list[StepEvent]) -> None:
    for step in steps:
        emit(step.event, name=step.name)


class MetricsSampler:
    """metrics.jsonl rows from a background thread, first one at once, then every interval.

    A thread, so a slow sample (`top` alone takes ~0.2 s) never delays noticing a marker. It
    shares the run's connection (one command per sample); failures are logged, never fatal.
    """

    def __init__(
        self,
        shell: RemoteShell,
        *,
        volume_mount: str,
        clock: Clock,
        interval_sec: float,
        record: Callable[[dict[str, object]], None],
    ) -> None:
        self._shell = shell
        self._command = metrics_command(volume_mount)
        self._clock = clock
        self._interval = interval_sec
        self._record = record
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pegboard-metrics", daemon=True)

    def __enter__(self) -> MetricsSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                result = self._shell.run(self._command, timeout=30)
            except Exception as exc:  # telemetry never ends a run
                logger.debug("[telemetry] sample failed: %s", exc)
            else:
                text = result.stdout.decode(errors="replace")
                self._record(parse_metrics(text, ts=self._clock.now()))
            self._stop.wait(self._interval)


def _brief(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    more = " ..." if len(command.strip().splitlines()) > 1 else ""
    return (first if len(first) <= 120 else first[:117] + "...") + more
