"""The seams only runpod-deploy takes from the outside world, as plain functions; the ones both
apps take (home dir, random hex, YAML reader, bounded file readers, clock) are
pegboard.app.shared.seams.

container.py (dependency-injector, the composition root of `run` and the pod commands)
composes both. Commands that only read local files (`--help`, `validate`, the record readers,
`run --offline-dry-run` through client_side_run_deps) call them directly instead: importing
dependency-injector pulls in asyncio and pydantic (~100 ms), more than such a command should take. Both paths call the same functions; adapters
are imported inside them, so nothing heavy loads until it is used.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard.app.shared.seams import read_record_bytes

if TYPE_CHECKING:  # annotations only: the record readers must not import them (startup)
    from pegboard.domain.gpujob.records import DeployMetadata
    from pegboard.domain.ports.gpu_cloud import GpuCloud

    from .run_types import Backend, RunDeps

# --- local files ----------------------------------------------------------------------------


def read_secret_file(path: str) -> bytes:
    """A secret's file, bounded (MAX_SECRET_FILE_BYTES): `file: /dev/zero` must not hang a run."""
    from pegboard.domain.input_limits import MAX_SECRET_FILE_BYTES

    return read_record_bytes(Path(path), MAX_SECRET_FILE_BYTES)


def capture_deploy_metadata(project_root: Path) -> dict[str, Any]:
    """Git and lockfile facts of a project (`capture-env` prints them as JSON)."""
    from pegboard.adapters.git_metadata import capture_deploy_metadata as capture

    return dict(capture(Path(project_root)))


def deploy_metadata(project_root: str) -> DeployMetadata:
    """The same facts as the manifest records them."""
    from pegboard.domain.gpujob.records import DeployMetadata

    facts = capture_deploy_metadata(Path(project_root))
    return DeployMetadata(
        local_git_sha=facts.get("local_git_sha"),
        local_git_dirty=facts.get("local_git_dirty"),
        local_git_branch=facts.get("local_git_branch"),
        payload_lockfile=facts.get("payload_lockfile"),
        payload_lockfile_sha256=facts.get("payload_lockfile_sha256"),
    )


# --- RunPod ---------------------------------------------------------------------------------


def runpod_gpu_cloud(environ: Mapping[str, str]) -> GpuCloud:
    """The RunPod account (RUNPOD_API_KEY or ~/.runpod/config.toml, RUNPOD_API_BASE_URL) over
    REST v2; nothing beyond the standard library is imported."""
    from pegboard.adapters.runpod import RunPodGpuCloud
    from pegboard.app.shared.seams import home_dir

    return RunPodGpuCloud(environ=environ, home=home_dir(environ))


def ssh_key_problem(key_path: str | None, use_agent: bool) -> str | None:
    """Why no SSH login could work with this key file / agent setting (one line), or None."""
    from pegboard.adapters.ssh_keys import key_problem

    return key_problem(key_path, use_agent=use_agent)


# --- the terminal: results on stdout, the tool's own output on stderr -----------------------


def write_stdout_bytes(chunk: bytes) -> None:
    """Raw bytes on stdout. Started with stdout closed (`>&-`), Python's sys.stdout is None:
    the bytes are dropped, as click.echo drops text (app/shared/console.py's rule)."""
    if sys.stdout is None:
        return
    stdout = sys.stdout.buffer
    stdout.write(chunk)
    stdout.flush()


def write_stdout_line(line: str) -> None:
    write_stdout_bytes(line.encode() + b"\n")


def write_stderr_bytes(chunk: bytes) -> None:
    sys.stderr.flush()
    sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.flush()


def echo_line(line: str) -> None:
    """One result line on whatever sys.stdout is now (pytest capture, redirections)."""
    if sys.stdout is None:  # started with stdout closed: dropped, as click.echo does
        return
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def ask_on_stderr(prompt: str) -> str | None:
    """The prompt on stderr (stdout stays results), the answer from stdin; None at EOF."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        sys.stderr.write("\n")  # EOF: end the prompt's line before the next message
        return None
    return line


# --- the RunPod API sandbox (`runpod-deploy sandbox`) -----------------------------------------


def serve_runpod_sandbox(
    port: int,
    *,
    api_key: str | None,
    public_key_files: list[str],
    ssh: bool,
    faults: dict[str, Any] | None = None,
) -> None:
    """Serve the RunPod API sandbox in the foreground until SIGINT/SIGTERM (stdout: exports).

    A busy port, an unreadable key file or a bad fault knob is a UsageError naming it.
    """
    from pegboard.adapters.sandboxes.runpod import Faults, serve
    from pegboard.domain.errors import UsageError

    knobs = Faults()
    try:
        knobs.update_from_json(faults or {})
    except ValueError as exc:
        raise UsageError(f"fault flags: {exc}") from None

    for path in public_key_files:
        try:
            Path(path).expanduser().read_text()
        except OSError as exc:
            raise UsageError(
                f"--public-key {path}: cannot read it ({exc.strerror or exc})"
            ) from None
    try:
        serve(
            port,
            api_key=api_key,
            public_key_files=public_key_files or None,
            ssh=ssh,
            faults=knobs,
        )
    except OSError as exc:
        raise UsageError(
            f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})"
        ) from None


# --- `run --offline-dry-run`: the run's dependencies without dependency-injector -------------


def client_side_run_deps(environ: Mapping[str, str] | None = None) -> RunDeps:
    """RunDeps for a run that never leaves this machine (`--offline-dry-run`): the seams the
    container's `run_deps` composes, and no provider at all (an offline run asks none)."""
    from pegboard import __version__
    from pegboard.app.shared.seams import home_dir, random_hex, read_yaml_document, system_clock

    from .run_types import RunDeps

    env = os.environ if environ is None else environ
    return RunDeps(
        read_document=read_yaml_document,
        backend_for=_no_provider_offline,
        clock=system_clock(),
        environ=env,
        random_hex=random_hex,
        job_output=write_stdout_bytes,
        result_line=write_stdout_line,
        home=home_dir(env),
        tool_version=__version__,
        deploy_metadata=deploy_metadata,
        read_local_file=read_secret_file,
        tool_output=write_stderr_bytes,
    )


def _no_provider_offline(provider: str) -> Backend:
    from pegboard.domain.errors import UsageError

    raise UsageError(f"--offline-dry-run makes no call to a provider (pod.provider {provider!r})")
