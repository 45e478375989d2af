"""One-line messages with a hint for a failed create (real run or --dry-run-server) (pure)."""

from __future__ import annotations

import re

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
        return refusal_hint(str(error), namespace=namespace) or (
            f"check with 'kubectl auth can-i create {plural} -n {namespace}'"
        )
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


_QUOTA_FLAGS = {
    "limits.cpu": "--limit-cpu (or --cpus)",
    "limits.memory": "--limit-memory (or -m)",
    "requests.cpu": "--request-cpu (or --cpus)",
    "cpu": "--request-cpu (or --cpus)",
    "requests.memory": "--request-memory (or -m)",
    "memory": "--request-memory (or -m)",
}
RESTRICTED_FIX = (
    "set 'security: restricted' in config with -u UID, or pass --security-opt "
    "no-new-privileges --cap-drop ALL --security-opt seccomp=runtime/default -u UID "
    "(a non-root UID)"
)


def refusal_hint(message: str, *, namespace: str) -> str:
    """The fix for an admission or RBAC refusal, from the apiserver's own wording; "" when the
    message is none of those (pod-security-admission, ResourceQuota, LimitRanger, RBAC)."""
    if match := re.search(r'violates PodSecurity "(\w+):', message):
        level = match.group(1)
        if level == "restricted":
            return f"namespace {namespace!r} enforces Pod Security 'restricted': {RESTRICTED_FIX}"
        return (
            f"namespace {namespace!r} enforces Pod Security {level!r}: drop what it names "
            "(--privileged, --cap-add, host paths, host ports, host namespaces)"
        )
    if match := re.search(r"failed quota: ([^:]+): must specify (.+)", message):
        wanted = [part.split(" for:")[0].strip() for part in match.group(2).split(";")]
        flags = ", ".join(dict.fromkeys(_QUOTA_FLAGS.get(w, w) for w in wanted))
        return (
            f"ResourceQuota {match.group(1)!r} in namespace {namespace!r} needs every container "
            f"to state it: pass {flags}, or set defaults in config"
        )
    if match := re.search(r"exceeded quota: ([^,]+),", message):
        return (
            f"ResourceQuota {match.group(1)!r} in namespace {namespace!r} is used up; ask for "
            f"less, or wait for other pods to finish "
            f"('kubectl describe resourcequota {match.group(1)} -n {namespace}')"
        )
    if re.search(r"(maximum|minimum) \S+ usage per (Container|Pod)", message):
        return (
            f"a LimitRange in namespace {namespace!r} bounds it: ask for a value within it "
            f"(--cpus, -m, --request-*/--limit-*; 'kubectl describe limitrange -n {namespace}')"
        )
    if match := re.search(
        r'User "([^"]*)" cannot (\S+) resource "([^"]+)" in API group "([^"]*)"', message
    ):
        user, verb, resource, group = match.groups()
        qualified = f"{resource}.{group}" if group else resource
        return (
            f"RBAC: user {user!r} lacks '{verb}' on {qualified} in namespace {namespace!r}; "
            f"ask for it ('kubectl auth can-i {verb} {qualified} -n {namespace}')"
        )
    return ""
