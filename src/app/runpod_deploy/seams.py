"""The seams only runpod-deploy takes from the outside world, as plain functions; the ones both
apps take (home dir, random hex, YAML reader, bounded file readers, clock) are
pegboard.app.shared.seams.

container.py (dependency-injector, the one composition root of `run` and the pod commands)
composes both; there is no second hand-built copy of their dependencies. Commands that only
read local files and build no RunDeps (`--help`, `validate`, the record readers) call single
seams directly (dependency-injector pulls in asyncio, ~50 ms, more than such a command should
take). Adapters are imported inside the functions, so nothing heavy loads until it is used.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard.app.shared.seams import read_record_bytes

if TYPE_CHECKING:  # annotations only: the record readers must not import them (startup)
    from pegboard.domain.gpujob.provider_plugin import BuildContext
    from pegboard.domain.gpujob.provider_registry import ProviderRegistry
    from pegboard.domain.gpujob.records import DeployMetadata
    from pegboard.domain.ports.gpu_cloud import GpuCloud


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


# --- providers ------------------------------------------------------------------------------


def provider_registry() -> ProviderRegistry:
    """The one list of providers (pegboard.adapters.providers: one package each); its plugins
    import their adapters only when they build."""
    from pegboard.adapters.providers import discover_registry

    return discover_registry()


def provider_names() -> tuple[str, ...]:
    """The registered providers' names, default first: the `--provider` choices."""
    return provider_registry().names()


def build_context(environ: Mapping[str, str], home: str) -> BuildContext:
    """What every provider plugin's `build` gets: the outside world, as values."""
    from pegboard.app.shared import xdg
    from pegboard.app.shared.seams import local_user_name
    from pegboard.domain.gpujob.provider_plugin import BuildContext

    from .state_paths import state_paths

    return BuildContext(
        environ=environ,
        home=home,
        state_dir=state_paths(home, environ).directory,
        data_dir=xdg.data_home(environ, home),
        progress=sys.stderr.buffer,
        user_name=local_user_name(environ),
    )


def provider_gpu_cloud(provider: str, environ: Mapping[str, str]) -> GpuCloud:
    """`provider`'s GpuCloud where nothing says where (RunPod: the account of RUNPOD_API_KEY
    or ~/.runpod/config.toml, RUNPOD_API_BASE_URL)."""
    from pegboard.app.shared.seams import home_dir

    context = build_context(environ, home_dir(environ))
    return provider_registry().plugin(provider).build(context, None).cloud


def contact_provider_early(config_path: str, ready_timeout_flag: int | None) -> None:
    """`run --config PATH`, before the CLI has loaded: the config's provider starts reaching
    the machine it names (ProviderPlugin.early_contact). Only a regular file is read (a FIFO
    or /dev/stdin stays for the run to read); any problem is left to the run to report, so
    this says nothing and raises nothing."""
    import os
    import stat

    from pegboard.app.shared.seams import home_dir, read_yaml_document

    try:
        path = Path(config_path).expanduser().absolute()
        if not stat.S_ISREG(path.stat().st_mode):
            return
        data = read_yaml_document(path).data
        pod = data.get("pod")
        provider = pod.get("provider") if isinstance(pod, Mapping) else None
        if not isinstance(provider, str):
            return
        registry = provider_registry()
        if provider not in registry:
            return
        contact = registry[provider].early_contact
        if contact is not None:
            contact(data, ready_timeout_flag, home_dir(os.environ))
    except Exception:  # the run reads the config again and reports what is wrong with it
        return


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
