"""The `runpod-deploy run` use case: one job through every phase, over the ports.

validate -> provision -> ready -> setup/secrets -> staging -> preflight -> launch -> monitor ->
pull -> lifecycle action -> manifest. Corrections over runpod-deploy 0.8.4 (its §17):
- Ctrl-C and SIGTERM are failures: on_failure runs, the manifest says `interrupted`, exit 130;
- the pod pointer (state file) is written atomically the moment a pod id exists, and only
  removed when the pod is deleted (and only if it still names our pod);
- create retries the next GPU × datacenter candidate, and looks the pod up by name when a
  create failed in a way that may have left one behind;
- the script is delivered as data (no heredoc), runs detached with its pid and exit status
  recorded, and the monitor streams the log: a marker is noticed in ~0.1 s, a dead script in
  ~0.3 s;
- the manifest is always written once the config has loaded (dry runs, early failures,
  interrupts), with the failing phase and reason, and what was left behind and how to remove it;
- secrets are checked before any pod exists, written 0600 as data, quoted for `source`, and
  redacted from every message and record.

This module is the entry point and the order of the phases with their failure handling; the
phases live beside it: provisioning, dry_run, on_pod (ready ... monitor, pull), pod_snapshots,
artifact_pull, lifecycle_action and run_manifest. They share the explicit state of run_state.py,
passed as arguments: the RunContext (fixed), RunProgress (phase, budget, first failure),
the PodClaim (the pod held) and the RunRecord (what the phases produced).
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pegboard.domain.errors import ConfigError, PegboardError, UsageError
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.provider_plugin import LocatorContext
from pegboard.domain.gpujob.records import DeployMetadata

from .dry_run import dry_run
from .exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .job_loading import LoadedJob, load_job
from .lifecycle_action import finish
from .on_pod import run_on_pod
from .phases import Redactor, secret_payload
from .pod_pointers import run_pointer_path
from .provisioning import provision
from .run_manifest import write_manifest
from .run_recorder import prove_writable
from .run_state import PodClaim, RunContext, RunProgress, RunRecord
from .run_types import Backend, PhaseFailed, RunDeps, RunRequest, RunResult
from .state_paths import state_paths

logger = logging.getLogger(__name__)


def run_job(request: RunRequest, deps: RunDeps) -> RunResult:
    """Run one job; config and usage errors raise (exit 2), everything later is a RunResult."""
    now = deps.clock.now()
    loaded = load_job(
        config_path=request.config_path,
        read_document=deps.read_document,
        providers=deps.providers,
        cli_vars=request.cli_vars,
        home=deps.home,
        environ=deps.environ,
        now=datetime.fromtimestamp(now, UTC),
        unique_suffix=deps.random_hex(),
        cost_cap_usd=request.cost_cap_usd,
        max_runtime_minutes=request.max_runtime_minutes,
    )
    # An unusable provider is a usage error (exit 2) before anything starts.
    backend = None if request.offline else _backend(request, deps, loaded)
    try:
        if request.print_run_dir:
            deps.result_line(f"RUN_DIR={loaded.job.run_dir}")
        logger.info("%s", loaded.budget.summary())
        run = RunContext.start(
            request,
            deps,
            document=loaded.document,
            spec=loaded.spec,
            job=loaded.job,
            backend=backend,
        )
        with masked_logging(run.redact):
            return _execute(run)
    finally:
        if backend is not None:
            _close(backend)


def _backend(request: RunRequest, deps: RunDeps, loaded: LoadedJob) -> Backend:
    """The config's provider, reached where its config says (the ssh host, keys, and this
    run's pinned host key file beside its pointer): its plugin's locator from the config."""
    provider = str(loaded.spec.pod.provider)
    plugin = deps.providers.plugin(provider)
    state_dir = state_paths(deps.home, deps.environ).directory
    context = LocatorContext(
        home=deps.home,
        run_pointer=run_pointer_path(state_dir, posixpath.basename(loaded.job.run_dir)),
        ready_timeout_sec=request.ssh_ready_timeout_sec or loaded.spec.budget.ssh_ready_timeout_sec,
    )
    locator = plugin.locator_from_config(loaded.spec, context)
    return _usable(deps.backend_at(provider, locator), request, loaded)


def _usable(backend: Backend, request: RunRequest, loaded: LoadedJob) -> Backend:
    """The backend, once it can work at all (no API key, no usable ssh key are exit 2 with
    nothing recorded), already reaching its provider for a run that will use it."""
    try:
        backend.check_usable()
        if not request.dry_run:
            # Every run past this point reaches the provider: its connection is made while
            # the run is still checking its job and writing its pointer (closed at the end).
            backend.warm_up()
    except BaseException:
        _close(backend)
        raise
    return backend


class _MaskSecrets(logging.Filter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        if self._redact:
            message = record.getMessage()
            masked = self._redact(message)
            if masked != message:
                record.msg, record.args = masked, None
        return True


@contextlib.contextmanager
def masked_logging(redact: Redactor) -> Iterator[None]:
    """Every message any logger prints during the run has its secret values masked (a filter
    on the root logger's handlers, where every record ends up)."""
    handlers = list(logging.getLogger().handlers)
    mask = _MaskSecrets(redact)
    for handler in handlers:
        handler.addFilter(mask)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(mask)


def _close(backend: Backend) -> None:
    """The backend's connection, after the lifecycle action and the manifest, on every path."""
    try:
        backend.close()
    except Exception as exc:  # closing a broken connection: nothing is left to do
        logger.debug("closing the %s backend: %s", backend.cloud.provider, exc)


def _execute(run: RunContext) -> RunResult:
    """The phases in order; whatever happens, the cleanup, then the manifest."""
    progress = RunProgress(run)
    claim = PodClaim()
    record = RunRecord(job=run.job)
    unexpected: BaseException | None = None
    config_error = False
    try:
        record.metadata = _validate(run)
        if run.dry_run:
            record.candidate = dry_run(run, progress)
            progress.outcome = "dry_run"
        else:
            provision(run, progress, claim)
            run_on_pod(run, progress, claim, record)
    except KeyboardInterrupt:
        progress.fail("interrupted (SIGINT/SIGTERM)", outcome="interrupted")
    except PhaseFailed as exc:
        if exc.exit_code is not None:
            record.remote_exit_code = exc.exit_code
        progress.fail(str(exc))
    except ConfigError as exc:  # found with the provider's help (a GPU name it does not know)
        progress.fail(str(exc))
        config_error = True
    except UsageError as exc:  # a one-line message for the user (a missing extra, a bad flag)
        progress.fail(str(exc))
    except (PegboardError, OSError) as exc:
        progress.fail(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a bug: still clean up and record, then surface it
        progress.fail(f"internal error: {type(exc).__name__}: {exc}")
        unexpected = exc
    progress.end_phase()
    finish(run, progress, claim, record)
    run.kill_point(f"enter-{Phase.MANIFEST}")
    manifest_path = write_manifest(run, progress, claim, record)
    if unexpected is not None:
        raise unexpected
    code = EXIT_OK
    if progress.outcome == "interrupted":
        code = EXIT_INTERRUPTED
    elif config_error:
        code = EXIT_USAGE
    elif progress.failed:
        code = EXIT_FAILED
    if progress.failed:
        logger.error("[run] FAILED in %s: %s", progress.failure_phase, progress.failure_reason)
    else:
        logger.info("[run] %s; records in %s", progress.outcome, run.job.run_dir)
    return RunResult(
        exit_code=code,
        outcome=progress.outcome,
        run_dir=run.job.run_dir,
        manifest_path=manifest_path,
        failure_phase=progress.failure_phase,
        failure_reason=progress.failure_reason,
    )


def _validate(run: RunContext) -> DeployMetadata:
    """Local checks before any pod exists: required paths, secrets, local writes; returns the
    deploy metadata (git and lockfile facts) the config asks the manifest to record."""
    missing = [p for p in run.job.required_paths if not Path(p).exists()]
    if missing:
        raise PhaseFailed("required local path(s) missing: " + ", ".join(missing))
    if run.request.offline:
        return DeployMetadata()  # no secrets read, no git: sentinels only
    for secret in run.job.secrets:
        # Checked before any pod exists (0.8.4 found a missing one after provisioning).
        secret_payload(
            secret,
            environ=run.deps.environ,
            read_local_file=run.deps.read_local_file,
            redact=run.redact,
        )
    metadata = DeployMetadata()
    if run.spec.telemetry.capture_local_git or run.spec.telemetry.capture_payload_lockfile:
        metadata = run.deps.deploy_metadata(run.job.project_root)
    if not run.dry_run:
        _prove_local_writes(run)
    return metadata


def _prove_local_writes(run: RunContext) -> None:
    """Every local file written after create must be writable now, while no pod exists:
    the run directory (records, manifest), this run's pointer and the config's state file."""
    targets = (
        ("run directory", Path(run.job.run_dir) / ".write-check"),
        ("run pointer", run.pointers.run.path),
        ("state_file", run.pointers.config.path),
    )
    for what, path in targets:
        try:
            prove_writable(path)
        except OSError as exc:
            raise PhaseFailed(
                f"{what} {path} cannot be written ({exc.strerror or exc}); no pod was created"
            ) from None
