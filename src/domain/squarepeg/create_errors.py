"""One-line messages with a hint for a failed create (real run or --dry-run-server) (pure)."""

from __future__ import annotations

from pegboard.domain.errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    PortError,
    Transient,
    Unauthorized,
    error_kind,
)
from pegboard.domain.ports.cluster import ResourceKind

_PLURAL = {ResourceKind.POD: "pods", ResourceKind.JOB: "jobs"}


def create_failure_message(
    error: PortError, *, kind: ResourceKind, name: str, namespace: str, dry_run: bool = False
) -> str:
    """What went wrong creating `kind/name` in `namespace`, and what to do about it."""
    what = f"{'server dry run of ' if dry_run else ''}creating {kind.value.lower()} {name!r}"
    reason = str(error) or type(error).__name__
    hint = _hint(error, kind=kind, name=name, namespace=namespace)
    text = f"{what} in namespace {namespace!r} failed: {reason}"
    return f"{text} ({hint})" if hint else text


def _hint(error: PortError, *, kind: ResourceKind, name: str, namespace: str) -> str:
    plural = _PLURAL[kind]
    meaning = error_kind(error)  # a bare PortError(status=403) reads as a Forbidden
    if issubclass(meaning, Invalid):
        return "run with --dry-run to inspect the manifest"
    if issubclass(meaning, Unauthorized):
        return "check your credentials: the cluster rejected them"
    if issubclass(meaning, Forbidden):
        if "quota" in str(error).lower():
            return (
                f"a ResourceQuota in namespace {namespace!r} refused it; "
                f"see 'kubectl describe resourcequota -n {namespace}' or ask for less"
            )
        return f"check with 'kubectl auth can-i create {plural} -n {namespace}'"
    if issubclass(meaning, Conflict):
        return (
            f"a {kind.value.lower()} named {name!r} already exists and was left alone; "
            f"omit --name, or clean up a kept run with "
            f"'kubectl delete {kind.value.lower()} {name} -n {namespace}'"
        )
    if issubclass(meaning, NotFound):
        return f"check that namespace {namespace!r} exists"
    if issubclass(meaning, Transient):
        return "the cluster could not be reached or failed; check the connection and retry"
    return ""
