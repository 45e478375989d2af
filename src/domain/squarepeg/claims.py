"""Claims: the manifest fields the command line set, which config passthrough must not change.

A claim is a path relative to the Pod (`/metadata/...`, `/spec/...`); in Job mode the same paths
apply to `spec.template`. Path format (shared with `merge.deep_merge`): `/`-separated keys, with an
item of a list merged by name written `[name=X]`, e.g. `/spec/containers/[name=main]/env/[name=FOO]`.

Some fields are claimed on every run, whatever the command line said, because squarepeg depends on
them: the image, `restartPolicy: Never`, the container's name, and the managed-by, created-by and
run-id labels (the orphan sweep finds resources by them).
"""

from __future__ import annotations

from collections.abc import Iterable

from pegboard.domain.kubernetes import labels
from pegboard.domain.squarepeg.request import RunRequest

__all__ = [
    "ClaimPath",
    "Segment",
    "always_claimed",
    "as_strings",
    "claims_for",
    "named",
    "path_string",
]

Segment = str
ClaimPath = tuple[Segment, ...]


def named(name: str) -> Segment:
    """The path segment of a list item merged by its `name` key."""
    return f"[name={name}]"


def path_string(path: ClaimPath) -> str:
    return "/" + "/".join(path)


def as_strings(claims: Iterable[ClaimPath]) -> frozenset[str]:
    """The claim set in the string form `deep_merge(..., claims=...)` takes."""
    return frozenset(path_string(p) for p in claims)


def always_claimed(*, container_name: str, keep: bool) -> frozenset[ClaimPath]:
    """What no passthrough may change on any run."""
    container = ("spec", "containers", named(container_name))
    claims = {
        ("spec", "restartPolicy"),
        (*container, "name"),
        (*container, "image"),
        ("metadata", "labels", labels.MANAGED_BY),
        ("metadata", "labels", labels.CREATED_BY),
        ("metadata", "labels", labels.RUN_ID),
    }
    if keep:
        claims.add(("metadata", "labels", labels.KEEP))
    return frozenset(claims)


def claims_for(
    request: RunRequest,
    *,
    container_name: str,
    env_keys: Iterable[str],
    cli_volume_names: Iterable[str],
    user_label_keys: Iterable[str] = (),
    gpu_resource: str,
    keep: bool,
    namespace_explicit: bool,
) -> frozenset[ClaimPath]:
    """Every path the command line set, plus the always-claimed ones."""
    container = ("spec", "containers", named(container_name))
    security = (*container, "securityContext")
    claims = set(always_claimed(container_name=container_name, keep=keep))

    def claim(*path: Segment) -> None:
        claims.add(path)

    if request.name is not None:
        claim("metadata", "name")
    if namespace_explicit:
        claim("metadata", "namespace")
    for key in user_label_keys:
        claim("metadata", "labels", key)
    for key in env_keys:
        claim(*container, "env", named(key))
    for volume in cli_volume_names:
        claim("spec", "volumes", named(volume))
        claim(*container, "volumeMounts", named(volume))
    if request.command:
        claim(*container, "args")
    if request.entrypoint is not None:
        claim(*container, "command")
    if request.workdir is not None:
        claim(*container, "workingDir")
    if request.pull is not None:
        claim(*container, "imagePullPolicy")
    if request.tty:
        claim(*container, "tty")
        claim(*container, "stdin")
    if request.interactive:
        claim(*container, "stdin")
    resources = (*container, "resources")
    if request.cpus is not None or request.request_cpu is not None:
        claim(*resources, "requests", "cpu")
    if request.cpus is not None or request.limit_cpu is not None:
        claim(*resources, "limits", "cpu")
    if request.memory is not None or request.request_memory is not None:
        claim(*resources, "requests", "memory")
    if request.memory is not None or request.limit_memory is not None:
        claim(*resources, "limits", "memory")
    if request.gpus is not None:
        claim(*resources, "requests", gpu_resource)
        claim(*resources, "limits", gpu_resource)
    if request.user is not None:
        claim(*security, "runAsUser")
        if request.user.split(":", 1)[0] not in ("0", ""):
            claim(*security, "runAsNonRoot")
        if ":" in request.user:
            claim(*security, "runAsGroup")
    if request.read_only:
        claim(*security, "readOnlyRootFilesystem")
    if request.privileged:
        claim(*security, "privileged")
    if request.cap_add:
        claim(*security, "capabilities", "add")
    if request.cap_drop:
        claim(*security, "capabilities", "drop")
    for option in request.security_opt:
        key = option.partition("=")[0].partition(":")[0]
        field = {
            "no-new-privileges": "allowPrivilegeEscalation",
            "seccomp": "seccompProfile",
            "apparmor": "appArmorProfile",
            "label": "seLinuxOptions",
        }.get(key)
        if field is not None:
            claim(*security, field)
    if request.hostname is not None:
        claim("spec", "hostname")
    if request.add_hosts:
        claim("spec", "hostAliases")
    if request.platform is not None:
        claim("spec", "nodeSelector", "kubernetes.io/arch")
        if "/" in request.platform:
            claim("spec", "nodeSelector", "kubernetes.io/os")
    return frozenset(claims)
