"""The composition root of runpod-deploy: the ONLY app module that imports pegboard.adapters.

Providers (tests override any of them: `current_container().clock.override(...)`):
  environ, home, clock, utc_now, random_hex          the outside world, as values
  read_document                                       YAML file -> SourceDocument
  capture_deploy_metadata                             project root -> git/lockfile facts (dict)
  pods_root, local_cloud                              the local provider's pods directory/cloud
  backend_for                                         provider name -> run_job.Backend
  gpu_cloud                                           the RunPod GpuCloud (not in this release)
  job_output, result_line, tool_output                where bytes and result lines go
Adapters are imported inside the factory functions, so `--help` never pays for them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dependency_injector import containers, providers

from pegboard import __version__
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.records import DeployMetadata
from pegboard.domain.ports.gpu_cloud import GpuCloud, PodStatus

from .run_job import Backend, RunDeps
from .wiring import (
    RUNPOD_NOT_AVAILABLE,
    capture_deploy_metadata,
    home_dir,
    random_hex,
    read_record_bytes,
    read_yaml_document,
    runpod_cloud,
    system_clock,
    utc_now,
)


def _pods_root(environ: Mapping[str, str]) -> Path:
    from pegboard.adapters.local_pod_paths import default_pods_root

    return default_pods_root(dict(environ))


def _local_cloud(pods_root: Path) -> GpuCloud:
    from pegboard.adapters.local_gpu_cloud import LocalGpuCloud

    return LocalGpuCloud(pods_root)


def _local_backend(cloud: Any) -> Backend:
    from pegboard.adapters.local_file_sync import LocalFileSync
    from pegboard.adapters.local_shell import LocalShell

    def open_shell(status: PodStatus) -> Any:
        return LocalShell(cloud.paths(status.pod_id))

    def open_sync(status: PodStatus) -> Any:
        return LocalFileSync(cloud.paths(status.pod_id))

    return Backend(
        cloud=cloud,
        open_shell=open_shell,
        open_sync=open_sync,
        locator={"pods_root": str(cloud.pods_root)},
    )


def _backend_at_selector(
    backend_for: Callable[[str], Backend],
) -> Callable[[str, Mapping[str, Any]], Backend]:
    def backend_at(provider: str, pointer: Mapping[str, Any]) -> Backend:
        """The backend that reaches the pod a pointer names: the local provider's pods root
        it recorded wins over this process's PEGBOARD_LOCAL_PODS_ROOT."""
        recorded = pointer.get("pods_root")
        if provider == "local" and isinstance(recorded, str) and recorded:
            return _local_backend(_local_cloud(Path(recorded)))
        return backend_for(provider)

    return backend_at


def _backend_selector(local_cloud: providers.Provider[Any]) -> Callable[[str], Backend]:
    def backend_for(provider: str) -> Backend:
        if provider == "local":
            return _local_backend(local_cloud())
        if provider == "runpod":
            raise UsageError(RUNPOD_NOT_AVAILABLE)
        raise UsageError(f"pod.provider: unknown provider {provider!r} (runpod or local)")

    return backend_for


def _write_stdout_bytes(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


def _write_stdout_line(line: str) -> None:
    sys.stdout.buffer.write(line.encode() + b"\n")
    sys.stdout.buffer.flush()


def _write_stderr_bytes(chunk: bytes) -> None:
    sys.stderr.flush()
    sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.flush()


def _deploy_metadata(capture: Callable[[Path], dict[str, Any]]) -> Callable[[str], DeployMetadata]:
    def metadata(project_root: str) -> DeployMetadata:
        facts = capture(Path(project_root))
        return DeployMetadata(
            local_git_sha=facts.get("local_git_sha"),
            local_git_dirty=facts.get("local_git_dirty"),
            local_git_branch=facts.get("local_git_branch"),
            payload_lockfile=facts.get("payload_lockfile"),
            payload_lockfile_sha256=facts.get("payload_lockfile_sha256"),
        )

    return metadata


def _read_local_file(path: str) -> bytes:
    """A secret's file, bounded (MAX_SECRET_FILE_BYTES): `file: /dev/zero` must not hang a run."""
    from pegboard.domain.input_limits import MAX_SECRET_FILE_BYTES

    return read_record_bytes(Path(path), MAX_SECRET_FILE_BYTES)


class RunpodDeployContainer(containers.DeclarativeContainer):
    environ = providers.Object(os.environ)
    home = providers.Callable(home_dir, environ)
    clock = providers.Singleton(system_clock)
    utc_now = providers.Callable(utc_now, clock)
    random_hex = providers.Callable(random_hex)
    random_hex_fn = providers.Object(random_hex)
    read_document = providers.Object(read_yaml_document)
    capture_deploy_metadata = providers.Object(capture_deploy_metadata)
    pods_root = providers.Callable(_pods_root, environ)
    local_cloud = providers.Singleton(_local_cloud, pods_root)
    backend_for = providers.Callable(_backend_selector, local_cloud.provider)
    backend_at = providers.Callable(_backend_at_selector, backend_for)
    gpu_cloud = providers.Callable(runpod_cloud)
    job_output = providers.Object(_write_stdout_bytes)
    result_line = providers.Object(_write_stdout_line)
    tool_output = providers.Object(_write_stderr_bytes)
    run_deps = providers.Factory(
        RunDeps,
        read_document=read_document,
        backend_for=backend_for,
        clock=clock,
        environ=environ,
        random_hex=random_hex_fn,
        job_output=job_output,
        result_line=result_line,
        home=home,
        tool_version=providers.Object(__version__),
        deploy_metadata=providers.Callable(_deploy_metadata, capture_deploy_metadata),
        read_local_file=providers.Object(_read_local_file),
        tool_output=tool_output,
    )


_CONTAINER: RunpodDeployContainer | None = None


def current_container() -> RunpodDeployContainer:
    """The process-wide container (created on first use)."""
    global _CONTAINER
    if _CONTAINER is None:
        _CONTAINER = RunpodDeployContainer()
    return _CONTAINER


def existing_container() -> RunpodDeployContainer | None:
    """The process-wide container if one was made already, without making one."""
    return _CONTAINER
