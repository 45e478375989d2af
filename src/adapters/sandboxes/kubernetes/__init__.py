"""Kubernetes API sandbox: a loopback HTTP/1.1 emulator of the Kubernetes API for tests and demos.

    with KubernetesSandbox() as sandbox:
        api = kubernetes.config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))

It serves pods (with /log and /status), batch/v1 jobs, events and leases, and the objects that
lock a namespace down (namespaces, resource quotas, limit ranges: Pod Security, quota and
LimitRange admission; RBAC-limited users via `users=`); a simulated kubelet runs each
container's command as a local process, so it executes code: it binds 127.0.0.1 only and
requires the bearer token on every request. See docs/sandbox.md.
"""

from __future__ import annotations

from .faults import Faults, LogDrop, RejectRule
from .kubeconfig import write_kubeconfig
from .sandbox import KubernetesSandbox, serve
from .server import Deletion, RecordedRequest

__all__ = [
    "Deletion",
    "Faults",
    "KubernetesSandbox",
    "LogDrop",
    "RecordedRequest",
    "RejectRule",
    "serve",
    "write_kubeconfig",
]
