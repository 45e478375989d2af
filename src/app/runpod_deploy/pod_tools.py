"""What the pod-side commands share (`cleanup`, `ls-stale`, `logs`, the GPU commands): their
dependencies, and reading the user's pod pointers (state files) with `run`'s own reader.

The state files of this user are `~/.runpod-deploy/state/*.json` (the per-config default of
`templates.default_state_file`) and `~/.runpod-deploy/state/runs/*.json` (one per run, written
before its pod is created); a config's own `state_file:` elsewhere is found through `--config`
or `--state-file`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import click

from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.records import MANIFEST_NAME
from pegboard.domain.gpujob.stale import pointer_pod_id, pointer_pod_name
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.gpu_cloud import GpuCloud

from .job_loading import LoadedJob, ReadDocument, load_job, merge_cli_vars
from .run_job import Backend
from .run_records import RUN_POINTERS_SUBDIR, PodPointer, state_dir

logger = logging.getLogger(__name__)

PROVIDERS = ("runpod", "local")
# 0.8.4's one state file for every config (its default `state_file`): still read, never written.
LEGACY_STATE_FILE = ".runpod-deploy-current"


def _stdout_line(line: str) -> None:
    click.echo(line)


def _stdout_bytes(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


def _ask_on_stderr(prompt: str) -> str | None:
    """The prompt on stderr (stdout stays results), the answer from stdin; None at EOF."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        sys.stderr.write("\n")  # EOF: end the prompt's line before the next message
        return None
    return line


@attrs.frozen
class PodToolDeps:
    """The outside world of the pod-side commands (the container provides the real one)."""

    backend_for: Callable[[str], Backend]  # provider -> Backend; UsageError if unavailable
    clock: Clock
    home: str
    read_document: ReadDocument
    random_hex: Callable[[], str]
    # provider + a pointer's content -> the Backend that reaches the pod it names (the local
    # provider's recorded pods root); None: backend_for(provider)
    backend_at: Callable[[str, Mapping[str, Any]], Backend] | None = None
    out: Callable[[str], None] = _stdout_line  # one result line on stdout
    out_bytes: Callable[[bytes], None] = _stdout_bytes  # raw bytes on stdout (logs)
    ask: Callable[[str], str | None] = _ask_on_stderr


def tool_deps() -> PodToolDeps:
    from pegboard.app.runpod_deploy.container import current_container

    container = current_container()
    return PodToolDeps(
        backend_for=container.backend_for(),
        backend_at=container.backend_at(),
        clock=container.clock(),
        home=container.home(),
        read_document=container.read_document(),
        random_hex=container.random_hex_fn(),
    )


def cloud_for_flag(deps: PodToolDeps, provider: str) -> GpuCloud:
    """The GpuCloud a `--provider` flag names; an unavailable one is a usage error naming it."""
    try:
        return deps.backend_for(provider).cloud
    except UsageError as exc:
        raise UsageError(f"--provider {provider}: {exc}") from None


def backend_for_pointer(deps: PodToolDeps, provider: str, pointer: Mapping[str, Any]) -> Backend:
    """The backend that reaches the pod a pointer names (its recorded locator wins)."""
    if deps.backend_at is not None:
        return deps.backend_at(provider, pointer)
    return deps.backend_for(provider)


def read_pointer(path: Path) -> dict[str, Any] | None:
    """A state file's content via run's reader (None: missing or unreadable)."""
    return PodPointer(path).read()


def user_pointers(home: str) -> dict[str, dict[str, Any]]:
    """Every readable state file of this user that names a pod: the state directory, its
    `runs/`, and 0.8.4's `~/.runpod-deploy-current`."""
    directory = state_dir(home)
    found = {}
    paths = [Path(home) / LEGACY_STATE_FILE]
    if directory.is_dir():
        paths += sorted(directory.glob("*.json"))
        paths += sorted((directory / RUN_POINTERS_SUBDIR).glob("*.json"))
    for path in paths:
        data = read_pointer(path)
        if data is not None and (pointer_pod_id(data) or pointer_pod_name(data)):
            found[str(path)] = data
    return found


def unlink_pointer_if_names(path: Path, pod_id: str | None, *, pod_name: str | None = None) -> bool:
    """Remove the state file only while it still names `pod_id` (any spelling of the key), or,
    with `pod_id` None, while it still names no pod id but the pod name `pod_name`."""
    current = read_pointer(path)
    if current is None or pointer_pod_id(current) != pod_id:
        return False
    if pod_id is None and (pod_name is None or pointer_pod_name(current) != pod_name):
        return False
    path.unlink(missing_ok=True)
    return True


def lifecycle_of(pointer: Mapping[str, Any]) -> str | None:
    """The lifecycle action of the run that wrote the pointer (from its manifest), if known."""
    recorded = pointer.get("lifecycle_action")
    if isinstance(recorded, str) and recorded:
        return recorded
    run_dir = pointer.get("run_dir")
    if not isinstance(run_dir, str) or not run_dir:
        return None
    from pegboard.app.runpod_deploy.wiring import read_record_bytes
    from pegboard.domain.gpujob.forensics import parse_manifest
    from pegboard.domain.input_limits import MAX_RECORD_BYTES

    try:  # bounded and depth-checked like every record reader (input_limits)
        manifest = parse_manifest(
            read_record_bytes(Path(run_dir) / MANIFEST_NAME, MAX_RECORD_BYTES)
        )
    except (OSError, ValueError):
        return None
    action = manifest.get("lifecycle_action") if isinstance(manifest, dict) else None
    # The manifest must be about the pod the pointer names (a later run may have reused it).
    if manifest.get("pod_id") != pointer_pod_id(pointer):
        return None
    return action if isinstance(action, str) and action else None


def load_config(
    deps: PodToolDeps, config_path: Path, var_args: Sequence[str], vars_file: Path | None
) -> LoadedJob:
    """The config rendered exactly as `run` renders it (state file, log path, budget)."""
    cli_vars = merge_cli_vars(var_args, vars_file)
    return load_job(
        config_path=config_path,
        read_document=deps.read_document,
        cli_vars=cli_vars,
        home=deps.home,
        now=datetime.fromtimestamp(deps.clock.now(), UTC),
        unique_suffix=deps.random_hex(),
    )
