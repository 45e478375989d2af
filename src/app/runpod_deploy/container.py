"""The composition root of runpod-deploy (dependency-injector): the one place that wires the
outside world into `run` and the pod commands; adapters reach it only through the seams it
composes (seams.py: the provider registry, the terminal, local files).

The CLI entry points of `run` (`--offline-dry-run` included) and the pod commands ask it for
one typed bundle each (`run_deps()`, `pod_command_deps()`) and hand that to the use case, which
sees ports and plain values only; nothing else builds such a bundle. Every provider of the
container is typed with what it provides, and each plugin's Backend is typed with its ports, so
mypy proves that each adapter satisfies its port.

The backend of a pod (its GpuCloud, RemoteShell and FileSync) is built by the plugin of its
`pod.provider` (or a `--provider` flag): `provider_registry` is the one list of providers
(pegboard.adapters.providers, one package each), `backend_for(name)` / `backend_at(name,
locator)` ask it (the locator: where its pods are, the config's for `run`, a pod pointer's for
the commands after it). Tests override any provider:
`current_container().backend_for.override(providers.Object(fake_backend_for))`, or the registry
itself (`provider_registry.override(providers.Object(registry.with_plugin(plugin)))`).
Plugins import their adapters when they build, so `--help` never pays for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pegboard import __version__
from pegboard.app.shared.dependency_injection import containers, providers
from pegboard.app.shared.seams import home_dir, random_hex, read_yaml_document, system_clock
from pegboard.app.shared.traced_port import traced
from pegboard.domain.gpujob.provider_plugin import BuildContext
from pegboard.domain.gpujob.provider_registry import ProviderRegistry
from pegboard.domain.gpujob.records import DeployMetadata
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from . import seams
from .pod_access import PodCommandDeps
from .run_types import Backend, BackendAt, BackendFor, ReadDocument, RunDeps, Timing
from .seams import (
    ask_on_stderr,
    deploy_metadata,
    echo_line,
    read_secret_file,
    write_stderr_bytes,
    write_stdout_bytes,
    write_stdout_line,
)

# --- providers: the registry's plugins build every Backend ----------------------------------


def _backend_for(registry: ProviderRegistry, context: BuildContext) -> BackendFor:
    """provider name -> its Backend where nothing says where (a --provider flag alone); a name
    no plugin serves is a usage error naming the registered ones."""

    def backend_for(provider: str) -> Backend:
        return traced_backend(registry.plugin(provider).build(context, None))

    return backend_for


def _backend_at(
    backend_for: BackendFor, registry: ProviderRegistry, context: BuildContext
) -> BackendAt:
    def backend_at(provider: str, locator: Any) -> Backend:
        """The backend that reaches `provider`'s pods at `locator`: the plugin's typed one, or
        the mapping a pointer recorded; none recorded: backend_for(provider), as a test may
        override it."""
        if isinstance(locator, Mapping):
            if not locator or provider not in registry:
                return backend_for(provider)  # an unknown provider: the usage error naming it
            locator = registry[provider].load_locator(locator)
        return traced_backend(registry.plugin(provider).build(context, locator))

    return backend_at


def traced_backend(backend: Backend) -> Backend:
    """`-v` shows every cloud, shell and file-sync call with its duration (traced_port.py)."""
    name = backend.cloud.provider

    def open_shell(status: PodStatus) -> RemoteShell:
        return traced(backend.open_shell(status), f"{name}.shell")

    def open_sync(status: PodStatus) -> FileSync:
        return traced(backend.open_sync(status), f"{name}.sync")

    return attrs.evolve(
        backend,
        cloud=traced(backend.cloud, f"{name}.cloud"),
        open_shell=open_shell,
        open_sync=open_sync,
    )


class RunpodDeployContainer(containers.DeclarativeContainer):
    """Everything `run` and the pod commands need from the outside world."""

    # The outside world, as values
    environ: providers.Provider[Mapping[str, str]] = providers.Object(os.environ)
    home: providers.Provider[str] = providers.Callable(home_dir, environ)
    clock: providers.Provider[Clock] = providers.Singleton(system_clock)
    random_hex: providers.Provider[Callable[[], str]] = providers.Object(random_hex)
    read_document: providers.Provider[ReadDocument] = providers.Object(read_yaml_document)

    # Pods: every Backend is built by the plugin of its `pod.provider` (the registry)
    provider_registry: providers.Provider[ProviderRegistry] = providers.Callable(
        seams.provider_registry
    )
    build_context: providers.Provider[BuildContext] = providers.Callable(
        seams.build_context, environ, home
    )
    backend_for: providers.Provider[BackendFor] = providers.Callable(
        _backend_for, provider_registry, build_context
    )
    backend_at: providers.Provider[BackendAt] = providers.Callable(
        _backend_at, backend_for, provider_registry, build_context
    )

    # The terminal and the local machine, as values (tests override them by name)
    job_output: providers.Provider[Callable[[bytes], None]] = providers.Object(write_stdout_bytes)
    result_line: providers.Provider[Callable[[str], None]] = providers.Object(write_stdout_line)
    tool_output: providers.Provider[Callable[[bytes], None]] = providers.Object(write_stderr_bytes)
    out: providers.Provider[Callable[[str], None]] = providers.Object(echo_line)
    ask: providers.Provider[Callable[[str], str | None]] = providers.Object(ask_on_stderr)
    tool_version: providers.Provider[str] = providers.Object(__version__)
    deploy_metadata: providers.Provider[Callable[[str], DeployMetadata]] = providers.Object(
        deploy_metadata
    )
    read_local_file: providers.Provider[Callable[[str], bytes]] = providers.Object(read_secret_file)
    timing: providers.Provider[Timing] = providers.Object(Timing())

    # One typed bundle per use case
    run_deps: providers.Factory[RunDeps] = providers.Factory(
        RunDeps,
        read_document=read_document,
        providers=provider_registry,
        backend_for=backend_for,
        backend_at=backend_at,
        clock=clock,
        environ=environ,
        random_hex=random_hex,
        job_output=job_output,
        result_line=result_line,
        home=home,
        tool_version=tool_version,
        deploy_metadata=deploy_metadata,
        read_local_file=read_local_file,
        tool_output=tool_output,
        timing=timing,
    )
    pod_command_deps: providers.Factory[PodCommandDeps] = providers.Factory(
        PodCommandDeps,
        environ=environ,
        providers=provider_registry,
        backend_for=backend_for,
        backend_at=backend_at,
        clock=clock,
        home=home,
        read_document=read_document,
        random_hex=random_hex,
        out=out,
        out_bytes=job_output,
        ask=ask,
    )


_CONTAINER: RunpodDeployContainer | None = None


def current_container() -> RunpodDeployContainer:
    """The process-wide container (created on first use; tests override its providers)."""
    global _CONTAINER
    if _CONTAINER is None:
        _CONTAINER = RunpodDeployContainer()
    return _CONTAINER
