"""What squarepeg takes from the outside world: a `Seams` value and the cluster ports.

Use cases receive these as arguments; none of them sees the dependency-injector container.
Two places build them, from the same plain functions:
- `container.py` (the composition root, dependency-injector) for commands that reach a cluster;
  tests and the CI harness override its providers;
- `local_seams()` for the commands that never leave this machine (`run --dry-run`,
  `config show`): importing dependency-injector pulls in asyncio and pydantic (~100 ms), more
  than a whole dry run may take.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import attrs

from pegboard.app.shared.seams import (
    current_stderr,
    current_stdout,
    dump_yaml,
    home_dir,
    local_user_name,
    random_hex,
    read_yaml_document,
)
from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

if TYPE_CHECKING:
    from pegboard.domain.documents import SourceDocument
    from pegboard.domain.ports.clock import Clock
    from pegboard.domain.ports.cluster import Cluster


@attrs.frozen
class Seams:
    """The outside world one squarepeg command sees: values, and the files it reads."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    environ: Mapping[str, str]
    home: str
    cwd: str
    user_name: str
    run_id: str
    random_hex: str
    stdout: TextIO
    stderr: TextIO
    read_document: Callable[[Path], SourceDocument]
    dump_yaml: Callable[[Any], str]
    # (context, environ, home) -> the kubeconfig context's namespace, or None
    read_kubeconfig_namespace: Callable[[str | None, Mapping[str, str], str], str | None]
    # () -> whether stdin brings data (a pipe, a file): `-i` refuses it rather than drop it
    stdin_brings_input: Callable[[], bool] = attrs.field(factory=lambda: stdin_brings_input)


class OpenCluster(Protocol):
    """A new Cluster port for a kubeconfig context (every argument honoured on every call)."""

    def __call__(self, *, context: str | None, lenient_tls: bool) -> Cluster: ...


@attrs.frozen
class ClusterPorts:
    """The ports of a command that reaches the cluster."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    open_cluster: OpenCluster
    clock: Clock


def new_run_id() -> str:
    return str(uuid.uuid4())


def local_seams(environ: Mapping[str, str] | None = None) -> Seams:
    """The Seams of a client-side command, built without dependency-injector."""
    env = os.environ if environ is None else environ
    return Seams(
        environ=env,
        home=home_dir(env),
        cwd=os.getcwd(),
        user_name=local_user_name(env),
        run_id=new_run_id(),
        random_hex=random_hex(),
        stdout=current_stdout(),
        stderr=current_stderr(),
        read_document=read_yaml_document,
        dump_yaml=dump_yaml,
        read_kubeconfig_namespace=read_kubeconfig_namespace,
    )


def stdin_brings_input() -> bool:
    """Whether this process's stdin holds data someone means to be read: a pipe, a file or a
    socket. A terminal, a character device such as /dev/null, a closed stdin or one without a
    file descriptor bring nothing that could be lost."""
    stream = sys.stdin
    if stream is None:
        return False
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def read_kubeconfig_namespace(context: str | None, env: Mapping[str, str], home: str) -> str | None:
    """The kubeconfig context's namespace without importing kubernetes; None when unknown."""
    try:
        from pegboard.adapters.kubeconfig_file import read_kubeconfig_namespace as read
    except ImportError:
        return None
    try:
        found = read(context, env, home)
    except Exception:  # a dry run degrades gracefully: no namespace rather than a failure
        return None
    return found[1] if found else None


COMPLETION_TIMEOUT_SECONDS = 2.0  # a TAB must answer soon: past it, no namespaces are offered


def kubeconfig_context_names(environ: Mapping[str, str], home: str) -> list[str]:
    """The contexts of the kubeconfig (`$KUBECONFIG` or ~/.kube/config), for completing
    `--context`; [] when there is none or it cannot be read (a TAB never fails)."""
    try:
        from pegboard.adapters.kubeconfig_file import (
            context_names,
            kubeconfig_paths,
            load_documents,
        )

        return context_names(load_documents(kubeconfig_paths(environ, Path(home))))
    except Exception:
        return []


def cluster_namespace_names(
    context: str | None, environ: Mapping[str, str], home: str
) -> list[str]:
    """The cluster's namespaces, for completing `-n`, asked with a short timeout; [] when the
    cluster cannot say (no kubeconfig, unreachable, forbidden): a TAB never fails."""
    try:
        from pegboard.adapters.kubernetes_cluster import KubernetesCluster

        cluster = KubernetesCluster(
            context=context,
            env=environ,
            home=Path(home),
            connect_timeout=COMPLETION_TIMEOUT_SECONDS,
            read_timeout=COMPLETION_TIMEOUT_SECONDS,
        )
        try:
            return cluster.namespace_names(timeout=COMPLETION_TIMEOUT_SECONDS)
        finally:
            cluster.close()
    except Exception:
        return []


def build_kubernetes_cluster(
    *,
    context: str | None = None,
    lenient_tls: bool = False,
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
) -> Cluster:
    """The real Cluster adapter (imports kubernetes, ~0.5 s: only commands that need it), on the
    container's environment ($KUBECONFIG) and home (~/.kube/config)."""
    from pegboard.adapters.kubernetes_cluster import KubernetesCluster
    from pegboard.app.shared import api_warnings, call_trace

    return KubernetesCluster(
        context=context,
        lenient_tls=lenient_tls,
        env=environ,
        home=Path(home) if home is not None else None,
        on_call=call_trace.observer(),
        on_warning=api_warnings.report,
    )


def serve_kubernetes_sandbox(
    port: int,
    kubeconfig_path: Any,
    *,
    token: str | None = None,
    users: Sequence[tuple[str, str]] = (),
    pod_security: Mapping[str, str] | None = None,
    object_files: Sequence[Any] = (),
    kubelet: dict[str, Any] | None = None,
) -> None:
    from pegboard.adapters.sandboxes.kubernetes import serve

    serve(
        port,
        kubeconfig_path,
        token=token,
        users=users,
        pod_security=pod_security,
        object_files=object_files,
        kubelet=kubelet,
    )
