"""The composition root of squarepeg: the ONLY app module that imports pegboard.adapters.

Providers are grouped by role. Heavy adapters are built lazily (imports inside the factory
functions), so `squarepeg --help` and `squarepeg run --dry-run` never import kubernetes,
runpod or paramiko. Tests override any provider: `container.user_name.override(...)`.
"""

from __future__ import annotations

import os

from dependency_injector import containers, providers

# The factories live in wiring.py so that client-side commands can use them without this module.
from .wiring import (
    build_kubernetes_cluster,
    build_system_clock,
    current_stderr,
    current_stdout,
    dump_yaml,
    home_dir,
    local_user_name,
    new_random_hex,
    new_run_id,
    read_kubeconfig_namespace,
    read_yaml_document,
    serve_kubernetes_sandbox,
)

__all__ = ["Container", "current_container", "existing_container", "local_user_name"]


class Container(containers.DeclarativeContainer):
    """Everything `squarepeg` needs from the outside world."""

    # Environment and identity
    environ = providers.Object(os.environ)
    home = providers.Callable(home_dir, environ)
    cwd = providers.Callable(os.getcwd)
    user_name = providers.Callable(local_user_name, environ)
    run_id = providers.Callable(new_run_id)
    random_hex = providers.Callable(new_random_hex)

    # Streams (resolved at call time, so pytest's capture and redirections are honoured)
    stdout = providers.Callable(current_stdout)
    stderr = providers.Callable(current_stderr)

    # Files: YAML documents and the kubeconfig (no kubernetes import)
    read_document = providers.Object(read_yaml_document)
    dump_yaml = providers.Object(dump_yaml)
    read_kubeconfig_namespace = providers.Object(read_kubeconfig_namespace)

    # Cluster and clock (the lifecycle's ports). `cluster(context=..., lenient_tls=...)` builds
    # KubernetesCluster on first call only, so --help and --dry-run never import kubernetes.
    cluster = providers.Singleton(build_kubernetes_cluster)
    clock = providers.Singleton(build_system_clock)

    # The loopback Kubernetes API sandbox served by `squarepeg sandbox`
    kubernetes_sandbox = providers.Object(serve_kubernetes_sandbox)


_current: Container | None = None


def current_container() -> Container:
    """The process-wide container (created on first use; tests override its providers)."""
    global _current
    if _current is None:
        _current = Container()
    return _current


def existing_container() -> Container | None:
    """The process-wide container if one was made already, without making one."""
    return _current
