"""The composition root of squarepeg: the ONLY app module that wires adapters to ports.

Each provider is typed with what it provides (a port, a seam value), and its factory is annotated
with the port type, so mypy proves every adapter satisfies its port. Entry points (the click
commands) build one Container and hand use cases `seams()` and `cluster_ports()`; no use case
sees the container. Heavy adapters are built lazily (imports inside the factory functions), so
`squarepeg --help` never imports kubernetes. Tests and the CI harness override providers:
`container.cluster.override(providers.Object(fake))`, then pass the container to `cli.main`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from pegboard.app.shared.dependency_injection import containers, providers
from pegboard.app.shared.seams import (
    current_stderr,
    current_stdout,
    dump_yaml,
    home_dir,
    local_user_name,
    random_hex,
    read_yaml_document,
    system_clock,
)
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster

from .seams import (
    ClusterPorts,
    Seams,
    build_kubernetes_cluster,
    new_run_id,
    read_kubeconfig_namespace,
    serve_kubernetes_sandbox,
)

__all__ = ["Container"]


class Container(containers.DeclarativeContainer):
    """Everything `squarepeg` needs from the outside world."""

    # Environment and identity
    environ: providers.Provider[Mapping[str, str]] = providers.Object(os.environ)
    home: providers.Provider[str] = providers.Callable(home_dir, environ)
    cwd: providers.Provider[str] = providers.Callable(os.getcwd)
    user_name: providers.Provider[str] = providers.Callable(local_user_name, environ)
    run_id: providers.Provider[str] = providers.Callable(new_run_id)
    random_hex: providers.Provider[str] = providers.Callable(random_hex)

    # Streams (resolved at call time, so pytest's capture and redirections are honoured)
    stdout: providers.Provider[TextIO] = providers.Callable(current_stdout)
    stderr: providers.Provider[TextIO] = providers.Callable(current_stderr)

    # Files: YAML documents and the kubeconfig (no kubernetes import)
    read_document: providers.Provider[Callable[..., Any]] = providers.Object(read_yaml_document)
    dump_yaml: providers.Provider[Callable[[Any], str]] = providers.Object(dump_yaml)
    read_kubeconfig_namespace: providers.Provider[Callable[..., str | None]] = providers.Object(
        read_kubeconfig_namespace
    )

    seams: providers.Provider[Seams] = providers.Factory(
        Seams,
        environ=environ,
        home=home,
        cwd=cwd,
        user_name=user_name,
        run_id=run_id,
        random_hex=random_hex,
        stdout=stdout,
        stderr=stderr,
        read_document=read_document,
        dump_yaml=dump_yaml,
        read_kubeconfig_namespace=read_kubeconfig_namespace,
    )

    # The ports. `cluster(context=..., lenient_tls=...)` is a Factory: every call builds the
    # adapter with the arguments it is given (a Singleton would silently keep the first ones).
    cluster: providers.Provider[Cluster] = providers.Factory(
        build_kubernetes_cluster, environ=environ, home=home
    )
    clock: providers.Provider[Clock] = providers.Singleton(system_clock)
    cluster_ports: providers.Provider[ClusterPorts] = providers.Factory(
        ClusterPorts, open_cluster=cluster.provider, clock=clock
    )

    # The loopback Kubernetes API sandbox served by `squarepeg sandbox`
    kubernetes_sandbox: providers.Provider[Callable[..., None]] = providers.Object(
        serve_kubernetes_sandbox
    )
