"""Pod Security Admission: the namespace's `pod-security.kubernetes.io/<mode>` labels and the
baseline/restricted checks, with the apiserver's own wording.

Sources (kubernetes/kubernetes, staging/src/k8s.io/pod-security-admission):
- api/helpers.go PolicyToEvaluate: labels per mode (enforce, audit, warn), each defaulting to
  `privileged:latest` (the apiserver's default PodSecurityConfiguration); a bad label is an
  error on the namespace and evaluates as `restricted:latest` for enforce.
- admission/admission.go EvaluatePod: enforce refuses with
  `violates PodSecurity "<level>:<version>": <ForbiddenDetail>` (wrapped by
  apierrors.NewForbidden into `pods "<name>" is forbidden: ...`, 403); warn adds
  `would violate PodSecurity ...` as a response warning, only when the request is allowed;
  ValidatePodController: a Job is checked for warn (and audit) only, never enforced: its pods
  are, when the job controller creates them.
- policy/registry.go populate: baseline checks first, then restricted, each sorted by ID;
  restricted checks that override a baseline one replace it.
- policy/checks.go ForbiddenDetail: `reason (detail), reason (detail)`.
- policy/check_*.go: each check's reason and detail text (cited per check below).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]

LEVELS = ("privileged", "baseline", "restricted")
MODES = ("enforce", "audit", "warn")
LABEL_PREFIX = "pod-security.kubernetes.io/"
_VERSION = re.compile(r"^v1\.(0|[1-9][0-9]*)$")
LATEST_MINOR = 31  # the sandbox is Kubernetes 1.31: `latest` evaluates as v1.31


@dataclass(frozen=True)
class LevelVersion:
    level: str
    version: str  # "latest" or "v1.N"

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    @property
    def minor(self) -> int:
        return LATEST_MINOR if self.version == "latest" else int(self.version.split(".")[1])


PRIVILEGED = LevelVersion("privileged", "latest")


def namespace_policy(labels: dict[str, str]) -> dict[str, LevelVersion]:
    """The level:version each mode evaluates (api/helpers.go PolicyToEvaluate)."""
    policy: dict[str, LevelVersion] = {}
    for mode in MODES:
        level = labels.get(f"{LABEL_PREFIX}{mode}", "privileged")
        version = labels.get(f"{LABEL_PREFIX}{mode}-version", "latest")
        if level not in LEVELS:
            # enforce fails closed (restricted), audit and warn fail open (privileged)
            level = "restricted" if mode == "enforce" else "privileged"
        if version != "latest" and not _VERSION.match(version):
            version = "latest"
        policy[mode] = LevelVersion(level, version)
    return policy


def namespace_label_problems(labels: dict[str, Any]) -> list[str]:
    """The field errors ValidateNamespace answers (422) for bad Pod Security labels."""
    problems = []
    for mode in MODES:
        key = f"{LABEL_PREFIX}{mode}"
        if key in labels and labels[key] not in LEVELS:
            problems.append(
                f'metadata.labels[{key}]: Invalid value: "{labels[key]}": '
                "must be one of privileged, baseline, restricted"
            )
        key = f"{LABEL_PREFIX}{mode}-version"
        if key in labels and labels[key] != "latest" and not _VERSION.match(str(labels[key])):
            problems.append(
                f'metadata.labels[{key}]: Invalid value: "{labels[key]}": '
                'must be "latest" or "v1.x"'
            )
    return problems


# -- the checks ------------------------------------------------------------------------------


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _containers(spec: JsonObject) -> Iterator[JsonObject]:
    """visitor.go visitContainers: init containers, containers, ephemeral containers."""
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(group) or ():
            if isinstance(container, dict):
                yield container


def _security(container: JsonObject) -> JsonObject:
    context = container.get("securityContext")
    return context if isinstance(context, dict) else {}


def _pod_security(spec: JsonObject) -> JsonObject:
    context = spec.get("securityContext")
    return context if isinstance(context, dict) else {}


Result = tuple[str, str] | None  # (ForbiddenReason, ForbiddenDetail), None when allowed


def _host_namespaces(spec: JsonObject) -> Result:
    """check_hostNamespaces.go"""
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    return ("host namespaces", ", ".join(used)) if used else None


def _host_path_volumes(spec: JsonObject) -> Result:
    """check_hostPathVolumes.go (baseline; restricted checks volume types instead)"""
    names = [v.get("name", "") for v in spec.get("volumes") or () if v.get("hostPath") is not None]
    if not names:
        return None
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_quoted(names)}")


def _host_ports(spec: JsonObject) -> Result:
    """check_hostPorts.go"""
    names: list[str] = []
    found: set[str] = set()
    for container in _containers(spec):
        used = {str(p["hostPort"]) for p in container.get("ports") or () if p.get("hostPort")}
        if used:
            names.append(container.get("name", ""))
            found |= used
    ports = sorted(found)  # a sets.String's List(): sorted as strings
    if not names:
        return None
    return (
        "hostPort",
        f"{_plural('container', 'containers', len(names))} {_quoted(names)} "
        f"{_plural('uses', 'use', len(names))} {_plural('hostPort', 'hostPorts', len(ports))} "
        + ", ".join(ports),
    )


def _privileged(spec: JsonObject) -> Result:
    """check_privileged.go"""
    names = [c.get("name", "") for c in _containers(spec) if _security(c).get("privileged")]
    if not names:
        return None
    return (
        "privileged",
        f"{_plural('container', 'containers', len(names))} {_quoted(names)} "
        "must not set securityContext.privileged=true",
    )


_BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip


def _added_capabilities(container: JsonObject) -> list[str]:
    capabilities = _security(container).get("capabilities")
    return [str(c) for c in (capabilities or {}).get("add") or ()]


def _capabilities_baseline(spec: JsonObject) -> Result:
    """check_capabilities_baseline.go"""
    names: list[str] = []
    bad: set[str] = set()
    for container in _containers(spec):
        extra = [c for c in _added_capabilities(container) if c not in _BASELINE_CAPABILITIES]
        if extra:
            names.append(container.get("name", ""))
            bad.update(extra)
    if not names:
        return None
    return (
        "non-default capabilities",
        f"{_plural('container', 'containers', len(names))} {_quoted(names)} must not include "
        f"{_quoted(sorted(bad))} in securityContext.capabilities.add",
    )


def _seccomp_type(context: JsonObject) -> str | None:
    profile = context.get("seccompProfile")
    return str(profile.get("type")) if isinstance(profile, dict) else None


def _seccomp_baseline(spec: JsonObject) -> Result:
    """check_seccompProfile_baseline.go: Unconfined is the one value baseline refuses."""
    setters = []
    if _seccomp_type(_pod_security(spec)) == "Unconfined":
        setters.append("pod")
    names = [
        c.get("name", "") for c in _containers(spec) if _seccomp_type(_security(c)) == "Unconfined"
    ]
    if names:
        setters.append(f"{_plural('container', 'containers', len(names))} {_quoted(names)}")
    if not setters:
        return None
    return (
        "seccompProfile",
        f'{" and ".join(setters)} must not set securityContext.seccompProfile.type to "Unconfined"',
    )


def _allow_privilege_escalation(spec: JsonObject) -> Result:
    """check_allowPrivilegeEscalation.go: must be set, and false."""
    names = [
        c.get("name", "")
        for c in _containers(spec)
        if _security(c).get("allowPrivilegeEscalation") is not False
    ]
    if not names:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_plural('container', 'containers', len(names))} {_quoted(names)} "
        "must set securityContext.allowPrivilegeEscalation=false",
    )


def _capabilities_restricted(spec: JsonObject) -> Result:
    """check_capabilities_restricted.go: drop ALL; add nothing but NET_BIND_SERVICE."""
    missing_drop: list[str] = []
    adding: list[str] = []
    bad: set[str] = set()
    for container in _containers(spec):
        capabilities = _security(container).get("capabilities")
        if not isinstance(capabilities, dict):
            missing_drop.append(container.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or ()):
            missing_drop.append(container.get("name", ""))
        extra = [str(c) for c in capabilities.get("add") or () if c != "NET_BIND_SERVICE"]
        if extra:
            adding.append(container.get("name", ""))
            bad.update(extra)
    details = []
    if missing_drop:
        details.append(
            f"{_plural('container', 'containers', len(missing_drop))} {_quoted(missing_drop)} "
            'must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_plural('container', 'containers', len(adding))} {_quoted(adding)} must not "
            f"include {_quoted(sorted(bad))} in securityContext.capabilities.add"
        )
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUME_TYPES = (
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
)  # fmt: skip


def _restricted_volumes(spec: JsonObject) -> Result:
    """check_restrictedVolumes.go: only these volume sources."""
    names: list[str] = []
    kinds: set[str] = set()
    for volume in spec.get("volumes") or ():
        sources = [key for key in volume if key != "name"]
        bad = [key for key in sources if key not in _ALLOWED_VOLUME_TYPES]
        if bad:
            names.append(volume.get("name", ""))
            kinds.update(bad)
    if not names:
        return None
    return (
        "restricted volume types",
        f"{_plural('volume', 'volumes', len(names))} {_quoted(names)} "
        f"{_plural('uses', 'use', len(names))} {_plural('restricted volume type', 'restricted volume types', len(kinds))} "
        + _quoted(sorted(kinds)),
    )


def _user_namespaced(spec: JsonObject) -> bool:
    """relaxPolicyForUserNamespacePod: hostUsers: false relaxes the user checks."""
    return spec.get("hostUsers") is False


def _run_as_non_root(spec: JsonObject) -> Result:
    """check_runAsNonRoot.go"""
    if _user_namespaced(spec):
        return None
    setters = []
    pod_value = _pod_security(spec).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    explicit: list[str] = []
    implicit: list[str] = []
    for container in _containers(spec):
        value = _security(container).get("runAsNonRoot")
        if value is False:
            explicit.append(container.get("name", ""))
        elif value is None and pod_value is not True:
            implicit.append(container.get("name", ""))
    if explicit:
        setters.append(f"{_plural('container', 'containers', len(explicit))} {_quoted(explicit)}")
    if setters:
        return (
            "runAsNonRoot != true",
            f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return (
            "runAsNonRoot != true",
            f"pod or {_plural('container', 'containers', len(implicit))} {_quoted(implicit)} "
            "must set securityContext.runAsNonRoot=true",
        )
    return None


def _run_as_user(spec: JsonObject) -> Result:
    """check_runAsUser.go: no explicit runAsUser=0."""
    if _user_namespaced(spec):
        return None
    setters = ["pod"] if _pod_security(spec).get("runAsUser") == 0 else []
    names = [c.get("name", "") for c in _containers(spec) if _security(c).get("runAsUser") == 0]
    if names:
        setters.append(f"{_plural('container', 'containers', len(names))} {_quoted(names)}")
    if not setters:
        return None
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")


def _seccomp_restricted(spec: JsonObject) -> Result:
    """check_seccompProfile_restricted.go: RuntimeDefault or Localhost, on the pod or each
    container."""
    valid = ("RuntimeDefault", "Localhost")
    setters: list[str] = []
    bad_values: set[str] = set()
    pod_type = _seccomp_type(_pod_security(spec))
    pod_set = False
    if pod_type is not None:
        if pod_type in valid:
            pod_set = True
        else:
            setters.append("pod")
            bad_values.add(pod_type)
    explicit: list[str] = []
    implicit: list[str] = []
    for container in _containers(spec):
        value = _seccomp_type(_security(container))
        if value is not None:
            if value not in valid:
                explicit.append(container.get("name", ""))
                bad_values.add(value)
        elif not pod_set:
            implicit.append(container.get("name", ""))
    if explicit:
        setters.append(f"{_plural('container', 'containers', len(explicit))} {_quoted(explicit)}")
    if setters:
        return (
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
            + _quoted(sorted(bad_values)),
        )
    if implicit:
        return (
            "seccompProfile",
            f"pod or {_plural('container', 'containers', len(implicit))} {_quoted(implicit)} "
            'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
        )
    return None


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    minimum_minor: int
    run: Callable[[JsonObject], Result]
    overrides: tuple[str, ...] = ()


CHECKS = (
    Check("capabilities_baseline", "baseline", 0, _capabilities_baseline),
    Check("hostNamespaces", "baseline", 0, _host_namespaces),
    Check("hostPathVolumes", "baseline", 0, _host_path_volumes),
    Check("hostPorts", "baseline", 0, _host_ports),
    Check("privileged", "baseline", 0, _privileged),
    Check("seccompProfile_baseline", "baseline", 19, _seccomp_baseline),
    Check("allowPrivilegeEscalation", "restricted", 8, _allow_privilege_escalation),
    Check(
        "capabilities_restricted",
        "restricted",
        22,
        _capabilities_restricted,
        ("capabilities_baseline",),
    ),
    Check("restrictedVolumes", "restricted", 0, _restricted_volumes, ("hostPathVolumes",)),
    Check("runAsNonRoot", "restricted", 0, _run_as_non_root),
    Check("runAsUser", "restricted", 23, _run_as_user),
    Check(
        "seccompProfile_restricted",
        "restricted",
        19,
        _seccomp_restricted,
        ("seccompProfile_baseline",),
    ),
)  # in registry order: baseline sorted by ID, then restricted sorted by ID


def evaluate(policy: LevelVersion, spec: JsonObject) -> str | None:
    """The ForbiddenDetail of every failed check, or None when the pod spec is allowed."""
    if policy.level == "privileged":
        return None
    active = [
        c
        for c in CHECKS
        if (c.level == "baseline" or policy.level == "restricted")
        and c.minimum_minor <= policy.minor
    ]
    overridden = {o for c in active if policy.level == "restricted" for o in c.overrides}
    parts = []
    for check in active:
        if check.id in overridden:
            continue
        result = check.run(spec)
        if result is not None:
            reason, detail = result
            parts.append(f"{reason} ({detail})" if detail else reason)
    return ", ".join(parts) if parts else None


@dataclass(frozen=True)
class Verdict:
    refusal: str | None  # `violates PodSecurity "...": ...` (enforce), to wrap in a Forbidden
    warnings: list[str]


def admit(labels: dict[str, str], spec: JsonObject, *, enforce: bool) -> Verdict:
    """EvaluatePod: enforce (pods only), then warn when the request is allowed."""
    policy = namespace_policy(labels)
    refusal = None
    if enforce:
        detail = evaluate(policy["enforce"], spec)
        if detail is not None:
            refusal = f'violates PodSecurity "{policy["enforce"]}": {detail}'
    warnings = []
    if refusal is None:
        detail = evaluate(policy["warn"], spec)
        if detail is not None:
            warnings.append(f'would violate PodSecurity "{policy["warn"]}": {detail}')
    return Verdict(refusal, warnings)
