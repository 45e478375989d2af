"""Cluster credentials the way kubectl finds them, then the pod's own service account.

1. Kubeconfig: `$KUBECONFIG` (a path list) or `~/.kube/config`, at the explicit context or the
   current one.
2. In-cluster (service-account token and CA, namespace file), tried only when no context was
   given and the kubeconfig could not be loaded at all. An explicit context never falls back.

Every failure is one line that says what to do: a missing kubeconfig names where it was looked
for and how to get one, a malformed one its file and line; an explicit context that no file
defines is a UsageError (exit 2) listing the ones that exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pegboard.domain.errors import Unauthorized, UsageError
from pegboard.domain.ports.cluster import ClusterTarget

from . import kubernetes_imports
from .kubeconfig_file import (
    context_names,
    current_context,
    find_context,
    kubeconfig_paths,
    load_documents,
)

GET_A_KUBECONFIG = (
    "point KUBECONFIG at a kubeconfig file, or serve a local cluster with "
    "'squarepeg sandbox --kubeconfig PATH'"
)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class Credentials:
    """A ready kubernetes.client.Configuration and where it points."""

    configuration: Any
    target: ClusterTarget


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text and text[0] else type(exc).__name__


def _from_kubeconfig(paths: list[Path], context: str | None) -> Credentials:
    kube_config = kubernetes_imports.kube_config()  # untyped module

    from kubernetes.client import Configuration

    existing = [p for p in paths if p.is_file()]
    if not existing:
        raise FileNotFoundError(f"no kubeconfig at {', '.join(map(str, paths))}")
    documents = load_documents(existing)  # bad YAML: ValueError naming the file and line
    files = ", ".join(map(str, existing))
    if context is not None and find_context(documents, context) is None:
        known = ", ".join(context_names(documents)) or "none"
        raise UsageError(f"--context {context}: no such context in {files} (contexts: {known})")
    merger = kube_config.KubeConfigMerger(":".join(str(p) for p in existing))
    if merger.config is None:
        raise ValueError(f"{files}: no configuration found")
    # kubectl's rule for current-context (first file wins); the client's merger takes the last.
    active = context or current_context(documents)
    if not active:
        known = ", ".join(context_names(documents)) or "none"
        raise ValueError(f"{files} sets no current-context (pass --context; contexts: {known})")
    loader = kube_config.KubeConfigLoader(config_dict=merger.config, active_context=active)
    configuration = type.__call__(Configuration)  # a fresh one, not a copy of the global default
    loader.load_and_set(configuration)
    body = loader.current_context["context"]  # a dict or the client's ConfigNode
    namespace = body.get("namespace") if isinstance(body, dict) else body.safe_get("namespace")
    return Credentials(configuration, ClusterTarget(active, namespace or None))


def _from_service_account(env: Mapping[str, str], directory: Path) -> Credentials:
    import importlib

    kubernetes_imports.lean_kubernetes()
    from kubernetes.client import Configuration

    incluster: Any = importlib.import_module("kubernetes.config.incluster_config")
    configuration = type.__call__(Configuration)
    incluster.InClusterConfigLoader(
        token_filename=str(directory / "token"),
        cert_filename=str(directory / "ca.crt"),
        environ=env,
    ).load_and_set(configuration)
    namespace_file = directory / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.is_file() else ""
    return Credentials(configuration, ClusterTarget("in-cluster", namespace or None))


def resolve_credentials(
    *,
    context: str | None,
    env: Mapping[str, str],
    home: Path,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> Credentials:
    """Kubeconfig first, in-cluster as the fallback; Unauthorized (a PortError: the Cluster
    port's methods raise it) with the reason(s) otherwise; UsageError for an unknown --context."""
    paths = kubeconfig_paths(env, home)
    try:
        return _from_kubeconfig(paths, context)
    except UsageError:
        raise
    except Exception as exc:  # the client raises ConfigException, OSError, yaml and key errors
        kubeconfig_reason = _one_line(exc)
        if context is not None:
            raise Unauthorized(
                f"could not load kubeconfig context '{context}': {kubeconfig_reason}"
            ) from exc
        missing = isinstance(exc, FileNotFoundError)
    try:
        return _from_service_account(env, service_account_dir)
    except Exception as exc:
        if "KUBERNETES_SERVICE_HOST" in env:  # inside a pod: both reasons matter
            raise Unauthorized(
                f"no cluster credentials: kubeconfig: {kubeconfig_reason}; "
                f"in-cluster: {_one_line(exc)}"
            ) from exc
        if missing:
            raise Unauthorized(
                f"no cluster credentials: {kubeconfig_reason} and not inside a cluster "
                f"({GET_A_KUBECONFIG})"
            ) from exc
        raise Unauthorized(
            f"bad kubeconfig: {kubeconfig_reason} (fix it, or point KUBECONFIG at another file)"
        ) from exc
