"""The composition root of squarepeg: the ONLY app module that imports pegboard.adapters.

Providers are grouped by role. Heavy adapters are built lazily (imports inside the factory
functions), so `squarepeg --help` and `squarepeg run --dry-run` never import kubernetes,
runpod or paramiko. Tests override any provider: `container.user_name.override(...)`.
"""

from __future__ import annotations

import os
import secrets
import sys
import uuid
from collections.abc import Mapping
from typing import Any, TextIO

from dependency_injector import containers, providers


def local_user_name(environ: Mapping[str, str] | None = None) -> str:
    """The local user name, never raising: LOGNAME/USER/LNAME/USERNAME, then the passwd entry,
    then `uid-<n>` (OpenShift-style arbitrary UIDs have no passwd entry)."""
    env = os.environ if environ is None else environ
    for key in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if env.get(key):
            return env[key]
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None:
        try:
            import pwd

            return pwd.getpwuid(uid).pw_name
        except (KeyError, ImportError, OSError):
            return f"uid-{uid}"
    return "unknown"


def new_run_id() -> str:
    return str(uuid.uuid4())


def new_random_hex() -> str:
    return secrets.token_hex(3)


def _current_stdout() -> TextIO:
    return sys.stdout


def _current_stderr() -> TextIO:
    return sys.stderr


def _read_yaml_document(path: Any) -> Any:
    from pegboard.adapters.yaml_documents import read_yaml_document

    return read_yaml_document(path)


def _dump_yaml(obj: Any) -> str:
    from pegboard.adapters.yaml_documents import dump_yaml

    return dump_yaml(obj)


def _read_kubeconfig_namespace(
    context: str | None, env: Mapping[str, str], home: str
) -> str | None:
    """The kubeconfig context's namespace without importing kubernetes; None when unknown."""
    try:
        from pegboard.adapters.kubeconfig_file import read_kubeconfig_namespace
    except ImportError:
        return None
    try:
        found = read_kubeconfig_namespace(context, env, home)
    except Exception:  # a dry run degrades gracefully: no namespace rather than a failure
        return None
    return found[1] if found else None


def _build_kubernetes_cluster(*, context: str | None = None, lenient_tls: bool = False) -> Any:
    from pegboard.adapters.kubernetes_cluster import KubernetesCluster

    return KubernetesCluster(context=context, lenient_tls=lenient_tls)


def _build_system_clock() -> Any:
    from pegboard.adapters.system_clock import SystemClock

    return SystemClock()


def _serve_kubernetes_sandbox(port: int, kubeconfig_path: Any) -> None:
    from pegboard.adapters.sandboxes.kubernetes import serve

    serve(port, kubeconfig_path)


def _home(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


class Container(containers.DeclarativeContainer):
    """Everything `squarepeg` needs from the outside world."""

    # Environment and identity
    environ = providers.Object(os.environ)
    home = providers.Callable(_home, environ)
    cwd = providers.Callable(os.getcwd)
    user_name = providers.Callable(local_user_name, environ)
    run_id = providers.Callable(new_run_id)
    random_hex = providers.Callable(new_random_hex)

    # Streams (resolved at call time, so pytest's capture and redirections are honoured)
    stdout = providers.Callable(_current_stdout)
    stderr = providers.Callable(_current_stderr)

    # Files: YAML documents and the kubeconfig (no kubernetes import)
    read_document = providers.Object(_read_yaml_document)
    dump_yaml = providers.Object(_dump_yaml)
    read_kubeconfig_namespace = providers.Object(_read_kubeconfig_namespace)

    # Cluster and clock (the lifecycle's ports). `cluster(context=..., lenient_tls=...)` builds
    # KubernetesCluster on first call only, so --help and --dry-run never import kubernetes.
    cluster = providers.Singleton(_build_kubernetes_cluster)
    clock = providers.Singleton(_build_system_clock)

    # The loopback Kubernetes API sandbox served by `squarepeg sandbox`
    kubernetes_sandbox = providers.Object(_serve_kubernetes_sandbox)


_current: Container | None = None


def current_container() -> Container:
    """The process-wide container (created on first use; tests override its providers)."""
    global _current
    if _current is None:
        _current = Container()
    return _current
