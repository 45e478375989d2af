"""Kubernetes names both cores check, and the namespace a command works in (pure)."""

from __future__ import annotations

import re

__all__ = ["DEFAULT_NAMESPACE", "MAX_LABEL_LENGTH", "is_rfc1123_label", "namespace_in_use"]

MAX_LABEL_LENGTH = 63
DEFAULT_NAMESPACE = "default"
_RFC1123_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def is_rfc1123_label(value: str) -> bool:
    """A lowercase RFC1123 label: alphanumerics and '-', alphanumeric at both ends, ≤ 63 chars."""
    return len(value) <= MAX_LABEL_LENGTH and _RFC1123_LABEL.fullmatch(value) is not None


def namespace_in_use(explicit: str | None, context_namespace: str | None) -> str:
    """kubectl's rule: the namespace asked for (a flag, a config key), else the kubeconfig
    context's (or the service account's, in-cluster), else `default`."""
    return explicit or context_namespace or DEFAULT_NAMESPACE
