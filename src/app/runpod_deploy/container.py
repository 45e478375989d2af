"""The composition root of runpod-deploy (dependency-injector): the ONLY app module, with the
seams it composes, that imports pegboard.adapters, and the only one that knows the container.

The CLI entry points of `run` and the pod commands ask it for one typed bundle each
(`run_deps()`, `pod_command_deps()`) and hand that to the use case, which sees ports and plain
values only. Every provider is typed with what it provides, and every factory is annotated with
its port, so mypy proves that each adapter satisfies its port.

The backend of a pod (its GpuCloud, RemoteShell and FileSync) is chosen by `pod.provider` (or a
`--provider` flag) from `backends`, one Factory per provider, each taking a `locator` (where
its pods are: the config's for `run`, a pod pointer's for the commands after it; see
provider_locators.py). Tests override any provider:
`current_container().backend_for.override(providers.Object(fake_backend_for))`.
Adapters are imported inside the factory functions, so `--help` never pays for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from pegboard import __version__
from pegboard.app.shared import xdg
from pegboard.app.shared.dependency_injection import containers, providers
from pegboard.app.shared.seams import home_dir, random_hex, read_yaml_document, system_clock
from pegboard.app.shared.traced_port import traced
from pegboard.domain.errors import UsageError
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import GpuCloud, PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .pod_access import PodCommandDeps
from .run_types import Backend, BackendAt, BackendFor, LocatorNeeded, ReadDocument, RunDeps
from .seams import (
    ask_on_stderr,
    deploy_metadata,
    echo_line,
    read_secret_file,
    write_stderr_bytes,
    write_stdout_bytes,
    write_stdout_line,
)

# --- one factory per provider, each typed with the ports it builds ---------------------------


def _pods_root(environ: Mapping[str, str], home: str) -> Path:
    """$PEGBOARD_LOCAL_PODS_ROOT, else $XDG_DATA_HOME/pegboard/local-pods by the one XDG rule
    both tools use (app/shared/xdg.py: a relative XDG_DATA_HOME is ignored)."""
    from pegboard.adapters.local_pod_paths import DEFAULT_PODS_ROOT_ENV, default_pods_root

    if environ.get(DEFAULT_PODS_ROOT_ENV):
        return default_pods_root(dict(environ))
    return xdg.data_home(environ, home) / "pegboard" / "local-pods"


def _local_backend(pods_root: Path, locator: Mapping[str, Any] | None = None) -> Backend:
    """`pod.provider: local`: pods are directories under `pods_root` on this machine (the one a
    pointer recorded wins over this process's PEGBOARD_LOCAL_PODS_ROOT)."""
    from pegboard.adapters.local_file_sync import LocalFileSync
    from pegboard.adapters.local_gpu_cloud import LocalGpuCloud
    from pegboard.adapters.local_shell import LocalShell

    recorded = (locator or {}).get("pods_root")
    local = LocalGpuCloud(Path(recorded) if isinstance(recorded, str) and recorded else pods_root)
    cloud: GpuCloud = local

    def open_shell(status: PodStatus) -> RemoteShell:
        return LocalShell(local.paths(status.pod_id))

    def open_sync(status: PodStatus) -> FileSync:
        return LocalFileSync(local.paths(status.pod_id))

    return Backend(
        cloud=cloud,
        open_shell=open_shell,
        open_sync=open_sync,
        locator={"pods_root": str(local.pods_root)},
    )


def _ssh_backend(locator: Mapping[str, Any] | None = None) -> Backend:
    """`pod.provider: ssh`: a machine you already have. One SshProvider (one connection) per
    Backend; the run closes it at its end, a pod command when the process exits."""
    import sys

    from pegboard.adapters.ssh_connection import SshTarget
    from pegboard.adapters.ssh_provider import SshProvider

    where = dict(locator or {})
    host, known_hosts = where.get("host"), where.get("known_hosts")
    if not isinstance(host, str) or not host or not isinstance(known_hosts, str):
        raise LocatorNeeded(
            "pod.provider ssh: no host to reach (a config's ssh.host, or a state file "
            "written by a run on that host)"
        )
    key_path = where.get("key_path")
    target = SshTarget(
        host=host,
        port=int(where.get("port") or 22),
        user=str(where.get("user") or "root"),
        key_path=key_path if isinstance(key_path, str) and key_path else None,
        use_agent=bool(where.get("use_agent", False)),
        pod=str(where.get("pod_id") or host),
    )
    workspaces_root = str(where.get("workspaces_root") or "~/pegboard-workspaces")
    provider = SshProvider(
        target,
        known_hosts=known_hosts,
        workspaces_root=workspaces_root,
        connect_timeout=float(where.get("connect_timeout") or 10.0),
        progress=sys.stderr.buffer,
    )
    return Backend(
        cloud=provider.cloud,
        open_shell=provider.open_shell,
        open_sync=provider.open_sync,
        check_usable=lambda: _check_ssh_key(target.key_path, use_agent=target.use_agent),
        create_proves_shell=True,  # the claim is one command over the run's one connection
        locator={
            "host": target.host,
            "port": target.port,
            "user": target.user,
            "key_path": target.key_path,
            "use_agent": target.use_agent,
            "workspaces_root": workspaces_root,
            "known_hosts": known_hosts,
        },
        close=provider.close,
    )


def _runpod_backend(
    environ: Mapping[str, str], home: str, locator: Mapping[str, Any] | None = None
) -> Backend:
    """`pod.provider: runpod`: the account over RunPod's REST API v2 (RUNPOD_API_KEY or
    ~/.runpod/config.toml, RUNPOD_API_BASE_URL; GraphQL only for spot), each pod over SSH at the endpoint it publishes
    with the ssh provider's adapters, its host key pinned in the run's pin file (a pointer's),
    else in one file per pod beside the user's pointers. New pods get the user's public key
    in their PUBLIC_KEY, which RunPod's images put in root's authorized_keys."""
    import re
    import sys

    from pegboard.adapters.runpod import RunPodGpuCloud
    from pegboard.adapters.runpod_pod_ssh import RunPodPodSsh, authorized_key

    from .state_paths import state_paths

    where = dict(locator or {})
    key_path = where.get("key_path", os.path.join(home, ".ssh", "id_ed25519"))
    key_path = key_path if isinstance(key_path, str) and key_path else None
    use_agent = bool(where.get("use_agent", False))
    known_hosts = where.get("known_hosts")
    pins_dir = state_paths(home, environ).directory / "pods"

    def pin_file(pod_id: str) -> Path:
        if isinstance(known_hosts, str) and known_hosts:
            return Path(known_hosts)
        pins_dir.mkdir(parents=True, exist_ok=True)
        return pins_dir / (re.sub(r"[^A-Za-z0-9_-]", "_", pod_id) + ".known_hosts")

    pods = RunPodPodSsh(
        key_path=key_path,
        use_agent=use_agent,
        pin_file=pin_file,
        connect_timeout=float(where.get("connect_timeout") or 10.0),
        progress=sys.stderr.buffer,
    )

    def pod_env() -> Mapping[str, str]:
        public = authorized_key(key_path, use_agent=use_agent)
        return {"PUBLIC_KEY": public} if public else {}

    account = RunPodGpuCloud(environ=environ, home=home)
    cloud: GpuCloud = account

    def check_usable() -> None:
        _check_runpod_account(environ, home)
        _check_ssh_key(key_path, use_agent=use_agent)

    def close() -> None:
        pods.close()
        account.close()

    return Backend(
        cloud=cloud,
        open_shell=pods.open_shell,
        open_sync=pods.open_sync,
        check_usable=check_usable,
        locator={
            "key_path": key_path,
            "use_agent": use_agent,
            **({"known_hosts": known_hosts} if isinstance(known_hosts, str) else {}),
        },
        close=close,
        pod_env=pod_env,
    )


def _check_ssh_key(key_path: str | None, *, use_agent: bool) -> None:
    """A key no connection could log in with is a usage error before any pod exists (a pod
    created without one bills for its whole ready timeout)."""
    from pegboard.adapters.ssh_keys import key_problem

    problem = key_problem(key_path, use_agent=use_agent)
    if problem is not None:
        raise UsageError(f"ssh.key_path: {problem}")


RUNPOD_INSTALL_HINT = "reinstall pegboard (the RunPod adapter needs only the standard library)"


def _check_runpod_account(environ: Mapping[str, str], home: str) -> None:
    """The RunPod adapter is installed and an API key is there (not checked against RunPod)."""
    try:
        from pegboard.adapters.runpod.credentials import api_key
    except ImportError as exc:  # an optional dependency of the adapter is missing
        raise UsageError(
            f"pod.provider runpod is not available in this install ({exc}); {RUNPOD_INSTALL_HINT}"
        ) from None
    from pegboard.domain.errors import PortError

    try:
        api_key(environ, Path(home))
    except PortError as exc:
        raise UsageError(f"pod.provider runpod: {exc}") from None


def _backend_for(backends: providers.Aggregate[Backend]) -> BackendFor:
    """provider name -> Backend; a name no factory serves is a usage error naming it."""

    def backend_for(provider: str) -> Backend:
        if provider not in backends.providers:
            raise UsageError(
                f"pod.provider: unknown provider {provider!r} ({' or '.join(backends.providers)})"
            )
        return traced_backend(backends(provider))

    return backend_for


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


def _backend_at(backend_for: BackendFor, backends: providers.Aggregate[Backend]) -> BackendAt:
    def backend_at(provider: str, locator: Mapping[str, Any]) -> Backend:
        """The backend that reaches `provider`'s pods at `locator` (the config's, or the one a
        pointer recorded); no locator: backend_for(provider), as a test may override it."""
        if not locator or provider not in backends.providers:
            return backend_for(provider)  # an unknown provider: the usage error naming it
        return traced_backend(backends(provider, locator=locator))

    return backend_at


class RunpodDeployContainer(containers.DeclarativeContainer):
    """Everything `run` and the pod commands need from the outside world."""

    # The outside world, as values
    environ: providers.Provider[Mapping[str, str]] = providers.Object(os.environ)
    home: providers.Provider[str] = providers.Callable(home_dir, environ)
    clock: providers.Provider[Clock] = providers.Singleton(system_clock)
    random_hex: providers.Provider[Callable[[], str]] = providers.Object(random_hex)
    read_document: providers.Provider[ReadDocument] = providers.Object(read_yaml_document)

    # Pods: one backend Factory per `pod.provider`, chosen by name at call time
    pods_root: providers.Provider[Path] = providers.Callable(_pods_root, environ, home)
    local_backend: providers.Factory[Backend] = providers.Factory(
        _local_backend, pods_root=pods_root
    )
    runpod_backend: providers.Factory[Backend] = providers.Factory(
        _runpod_backend, environ=environ, home=home
    )
    ssh_backend: providers.Factory[Backend] = providers.Factory(_ssh_backend)
    backends: providers.Aggregate[Backend] = providers.Aggregate(
        local=local_backend, runpod=runpod_backend, ssh=ssh_backend
    )
    backend_for: providers.Provider[BackendFor] = providers.Callable(
        _backend_for, backends.provider
    )
    backend_at: providers.Provider[BackendAt] = providers.Callable(
        _backend_at, backend_for, backends.provider
    )

    # One typed bundle per use case
    run_deps: providers.Factory[RunDeps] = providers.Factory(
        RunDeps,
        read_document=read_document,
        backend_for=backend_for,
        backend_at=backend_at,
        clock=clock,
        environ=environ,
        random_hex=random_hex,
        job_output=providers.Object(write_stdout_bytes),
        result_line=providers.Object(write_stdout_line),
        home=home,
        tool_version=providers.Object(__version__),
        deploy_metadata=providers.Object(deploy_metadata),
        read_local_file=providers.Object(read_secret_file),
        tool_output=providers.Object(write_stderr_bytes),
    )
    pod_command_deps: providers.Factory[PodCommandDeps] = providers.Factory(
        PodCommandDeps,
        environ=environ,
        backend_for=backend_for,
        backend_at=backend_at,
        clock=clock,
        home=home,
        read_document=read_document,
        random_hex=random_hex,
        out=providers.Object(echo_line),
        out_bytes=providers.Object(write_stdout_bytes),
        ask=providers.Object(ask_on_stderr),
    )


_CONTAINER: RunpodDeployContainer | None = None


def current_container() -> RunpodDeployContainer:
    """The process-wide container (created on first use; tests override its providers)."""
    global _CONTAINER
    if _CONTAINER is None:
        _CONTAINER = RunpodDeployContainer()
    return _CONTAINER
