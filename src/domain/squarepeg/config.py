"""squarepeg's validated configuration: frozen attrs classes built by config_validation.

Field docs and defaults are the user-facing reference in docs/squarepeg/config-reference.md.
Passthrough sections (`kubernetes`, `job`, volume sources) stay opaque plain dicts: the apiserver
validates them, squarepeg only merges them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes.kinds import ResourceKind
from pegboard.domain.squarepeg.merge import copy_tree

__all__ = [
    "DEFAULT_GPU_RESOURCE",
    "DEFAULT_GPU_RUNTIME_CLASS",
    "DEFAULT_ORPHAN_SWEEP_INTERVAL_SECONDS",
    "DEFAULT_ORPHAN_SWEEP_MIN_AGE_SECONDS",
    "DEFAULT_TIMEOUT_SECONDS",
    "NAMESPACE_PATTERN",
    "Defaults",
    "ImagePullPolicy",
    "JobPassthrough",
    "KubernetesPassthrough",
    "ProfileConfig",
    "RunMode",
    "SquarepegConfig",
    "VolumeConfig",
]

NAMESPACE_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_GPU_RUNTIME_CLASS = "nvidia"
DEFAULT_TIMEOUT_SECONDS = 300
DEFAULT_ORPHAN_SWEEP_MIN_AGE_SECONDS = 300
DEFAULT_ORPHAN_SWEEP_INTERVAL_SECONDS = 60  # at most one sweep a minute per user and namespace


class SecurityPreset(enum.Enum):
    """Config `security`: `restricted` gives the main container what Pod Security Admission's
    `restricted` level requires (non-root, no privilege escalation, every capability dropped,
    the runtime's default seccomp profile). Matched case-insensitively."""

    DEFAULT = "default"
    RESTRICTED = "restricted"


class RunMode(enum.Enum):
    """What `squarepeg run` creates. Config values are matched case-insensitively."""

    POD = "pod"
    JOB = "job"

    @property
    def resource_kind(self) -> ResourceKind:
        return ResourceKind.POD if self is RunMode.POD else ResourceKind.JOB


class ImagePullPolicy(enum.Enum):
    """Kubernetes imagePullPolicy values (config accepts them case-insensitively)."""

    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


def _absolute_path(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not value.startswith("/"):
        raise ValueError(f"{attribute.name} must be an absolute path, got {value!r}")


def _namespace(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and (len(value) > 63 or not NAMESPACE_PATTERN.match(value)):
        raise ValueError(
            f"{attribute.name} must be a lowercase RFC 1123 label (a-z, 0-9, '-', at most "
            f"63 characters), got {value!r}"
        )


@attrs.frozen
class VolumeConfig:
    """`volumes.NAME`: a Kubernetes volume source plus where squarepeg mounts it.

    With `mount_path` the volume is mounted on every run; without it, only by `-v NAME:/path`.
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    # The opaque volume source, e.g. {"persistentVolumeClaim": {"claimName": "x"}}; {} = emptyDir.
    source: Mapping[str, Any] = attrs.field(factory=dict)
    mount_path: str | None = attrs.field(default=None, validator=_absolute_path)
    read_only: bool = False

    def volume_source(self) -> dict[str, Any]:
        """The source as it goes into `spec.volumes[]` (a fresh dict; empty means emptyDir)."""
        if not self.source:
            return {"emptyDir": {}}
        source: dict[str, Any] = copy_tree(self.source)
        return source


@attrs.frozen
class Defaults:
    """`defaults.*`: values used when the matching CLI flag is absent (never claimed)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    cpus: str | None = None  # docker --cpus syntax; YAML numbers are kept as their text
    memory: str | None = None  # docker -m syntax; a YAML integer means bytes
    gpus: str | None = None  # docker --gpus syntax: N or count=N
    gpu_resource: str = DEFAULT_GPU_RESOURCE
    gpu_runtime_class: str | None = DEFAULT_GPU_RUNTIME_CLASS  # None: no runtimeClassName
    image_pull_policy: ImagePullPolicy | None = None
    workdir: str | None = attrs.field(default=None, validator=_absolute_path)
    env: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class KubernetesPassthrough:
    """`kubernetes.*`: Pod metadata and spec merged over the generated manifest (claims honoured).

    Always Pod-shaped; in Job mode it is re-homed under `spec.template`.
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    spec: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class JobPassthrough:
    """`job.*`: Job-level metadata and spec, used in Job mode only."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    spec: Mapping[str, Any] = attrs.field(factory=dict)
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ProfileConfig:
    """Every config key except `profiles`: the body of a profile, and the base of a config."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    namespace: str | None = attrs.field(default=None, validator=_namespace)
    mode: RunMode = RunMode.POD
    cleanup: bool = True
    timeout: int = attrs.field(default=DEFAULT_TIMEOUT_SECONDS, validator=attrs.validators.gt(0))
    quiet: bool = False
    allow_host_path_mounts: bool = False
    allow_privileged: bool = False  # gates docker `--privileged` (securityContext.privileged)
    security: SecurityPreset = SecurityPreset.DEFAULT
    lenient_tls: bool = False
    kube_expand: bool = False  # the kubelet expands $(VAR) and $$ in command, args, env values
    split_streams: bool = False  # accepted for 0.4.1 configs; has no effect (see the reference)
    orphan_sweep: bool = True
    orphan_sweep_min_age: int = attrs.field(
        default=DEFAULT_ORPHAN_SWEEP_MIN_AGE_SECONDS, validator=attrs.validators.ge(0)
    )
    orphan_sweep_interval: int = attrs.field(
        default=DEFAULT_ORPHAN_SWEEP_INTERVAL_SECONDS, validator=attrs.validators.ge(0)
    )
    defaults: Defaults = Defaults()
    volumes: Mapping[str, VolumeConfig] = attrs.field(factory=dict)
    kubernetes: KubernetesPassthrough = KubernetesPassthrough()
    job: JobPassthrough = JobPassthrough()


@attrs.frozen
class SquarepegConfig(ProfileConfig):
    """A whole config layer, or the merged result of all layers (then `profiles` is informative)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    profiles: Mapping[str, ProfileConfig] = attrs.field(factory=dict)
