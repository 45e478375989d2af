"""The runpod-deploy job spec (schema_version 2): one frozen attrs class per YAML section.

Field names follow the YAML keys of runpod-deploy 0.8.4 so configs read the same in both. The
classes hold *raw* values: templated strings are rendered later by `templates.render_job`.
Types and ranges are enforced when a document is structured (`spec_validation.parse_job_spec`),
which reports every problem at once; constructing these classes directly in code trusts the
caller, like any value object.

Additions over 0.8.4 (all optional, defaults keep 0.8.4 behaviour unless noted):
- `pod.provider`: any registered provider (provider_registry.py: `runpod` by default, `local`,
  `ssh`, ...), so one config runs anywhere; the sections a provider reads (`ssh:`, ...) are
  declared by its plugin and held in `JobSpec.sections`.
- `setup_after_secrets`: stage secrets before the setup commands (0.8.4 order is setup first).
- `state_file` is templated, and its default is per config and job name instead of the shared
  `~/.runpod-deploy-current` (see `templates.default_state_file`).
- secrets accept the lifecycle and troubleshooting docs' form as well: `source_env: VAR` (one
  variable, a string), `var_name: KEY` (the key written into the file) and `source_file: path`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, NewType

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

__all__ = [
    "DEFAULT_FAILURE_MARKERS",
    "DEFAULT_PROVIDER",
    "DEFAULT_STAGING_EXCLUDES",
    "SCHEMA_VERSION",
    "AbsoluteOrTemplatePath",
    "ArtifactSpec",
    "BudgetSpec",
    "CloudType",
    "CommandSpec",
    "Identifier",
    "JobSpec",
    "LifecycleAction",
    "LifecycleSpec",
    "LocalSpec",
    "NonBlankStr",
    "NonEmptyStr",
    "OctalMode",
    "PodSpec",
    "PortSpec",
    "PositiveFloat",
    "PositiveInt",
    "PythonVersion",
    "RemoteEnvSpec",
    "RunSpec",
    "SampleInterval",
    "SecretSpec",
    "StagingSpec",
    "StorageMode",
    "StorageSpec",
    "TelemetrySpec",
    "secret_env_keys",
]

SCHEMA_VERSION = 2

# `pod.provider` when the config names none, and `--provider`'s default: runpod-deploy 0.8.4's.
DEFAULT_PROVIDER = "runpod"

# Constrained scalars: plain ints/strs to mypy, checked by hooks in spec_validation.
PositiveInt = NewType("PositiveInt", int)
PositiveFloat = NewType("PositiveFloat", float)
NonEmptyStr = NewType("NonEmptyStr", str)
NonBlankStr = NewType("NonBlankStr", str)
AbsoluteOrTemplatePath = NewType("AbsoluteOrTemplatePath", str)
OctalMode = NewType("OctalMode", str)
PythonVersion = NewType("PythonVersion", str)
PortSpec = NewType("PortSpec", str)
Identifier = NewType("Identifier", str)
SampleInterval = NewType("SampleInterval", int)

DEFAULT_FAILURE_MARKERS: tuple[str, ...] = (
    "Traceback",
    "OutOfMemoryError",
    "CUDA out of memory",
    "No space left on device",
    "Killed",
)

# The hygiene preset added in front of a staging entry's excludes when `excludes_default: true`.
DEFAULT_STAGING_EXCLUDES: tuple[str, ...] = (
    ".git/",
    ".venv/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".mypy_cache/",
    "**/__pycache__/",
    "**/*.pyc",
)


class CloudType(enum.StrEnum):
    """RunPod cloud types (0.8.4 passed any string through to runpodctl)."""

    SECURE = "SECURE"
    COMMUNITY = "COMMUNITY"
    ALL = "ALL"


class StorageMode(enum.StrEnum):
    NETWORK_VOLUME = "network_volume"
    EPHEMERAL = "ephemeral"


class LifecycleAction(enum.StrEnum):
    """What happens to the pod after the run; `recycle` is allowed for `on_success` only."""

    PRESERVE = "preserve"
    STOP = "stop"
    DELETE = "delete"
    RECYCLE = "recycle"


@attrs.frozen
class LocalSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    project_root: str = "."
    required_paths: tuple[str, ...] = ()


@attrs.frozen
class PodSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    image: NonEmptyStr
    datacenters: tuple[NonEmptyStr, ...]
    gpu_order: tuple[NonEmptyStr, ...]
    # A registered provider's name (checked against the registry when a document is parsed).
    provider: NonEmptyStr = NonEmptyStr(DEFAULT_PROVIDER)
    cloud_type: CloudType = CloudType.SECURE
    ports: tuple[PortSpec, ...] = (PortSpec("22/tcp"),)
    container_disk_gb: PositiveInt = PositiveInt(20)
    gpu_count: PositiveInt = PositiveInt(1)
    spot: bool = False
    min_vcpu_count: PositiveInt | None = None
    min_memory_gb: PositiveInt | None = None
    python_version: PythonVersion | None = None


@attrs.frozen
class StorageSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    mode: StorageMode
    volume_mount: str = "/workspace"
    volume_name: str | None = None
    volume_gb: PositiveInt | None = None


@attrs.frozen
class BudgetSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    cost_cap_usd: PositiveFloat = PositiveFloat(10.0)
    assumed_hourly_rate_usd: PositiveFloat = PositiveFloat(1.65)
    max_runtime_minutes: PositiveInt | None = None
    poll_interval_sec: PositiveInt = PositiveInt(60)
    ssh_ready_timeout_sec: PositiveInt = PositiveInt(900)

    @property
    def timeout_sec(self) -> int:
        """Run deadline: max_runtime_minutes, else what the cap buys at the assumed rate."""
        if self.max_runtime_minutes is not None:
            return self.max_runtime_minutes * 60
        return int(self.cost_cap_usd / self.assumed_hourly_rate_usd * 3600)


@attrs.frozen
class RemoteEnvSpec:
    """Sourced files and exports prefixed to commands that set `with_env: true`."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    source_files: tuple[str, ...] = ()
    exports: Mapping[Identifier, str] = attrs.field(factory=dict)


@attrs.frozen
class CommandSpec:
    """One `setup[]` or `preflight[]` entry."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    command: NonBlankStr
    timeout_sec: PositiveInt = PositiveInt(600)
    with_env: bool = False


@attrs.frozen
class StagingSpec:
    """One rsync push from the workstation to the pod."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    label: NonEmptyStr
    source: NonEmptyStr
    destination: NonEmptyStr
    excludes: tuple[str, ...] = ()
    delete: bool = True
    excludes_default: bool = False
    excludes_extra: tuple[str, ...] = ()

    @property
    def effective_excludes(self) -> tuple[str, ...]:
        """Preset (when opted in), then `excludes`, then `excludes_extra`, in that order."""
        preset = DEFAULT_STAGING_EXCLUDES if self.excludes_default else ()
        return preset + self.excludes + self.excludes_extra


@attrs.frozen
class SecretSpec:
    """One secret file on the pod: `env` names (KEY=value lines) or a local `file`.

    YAML accepts `env: [VAR, ...]`/`file` (0.8.4) or the docs' form, `source_env: VAR` (a
    string or a list) with an optional `var_name: KEY`, and `source_file`; both land here.
    Exactly one source is set, and `var_name` only renames a single `env` variable (both
    checked at parse time).
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    name: NonEmptyStr
    destination: AbsoluteOrTemplatePath
    env: tuple[Identifier, ...] = ()
    file: str | None = None
    mode: OctalMode = OctalMode("0600")
    # The key written into the file for the one `env` variable (None: the variable's own name).
    var_name: Identifier | None = None

    @property
    def env_keys(self) -> tuple[tuple[str, str], ...]:
        return secret_env_keys(self.env, self.var_name)


def secret_env_keys(env: Sequence[str], var_name: str | None) -> tuple[tuple[str, str], ...]:
    """(key written into the file, local environment variable read) per env line of a secret:
    `var_name` renames the one variable, else each is written under its own name."""
    if var_name is not None and len(env) == 1:
        return ((var_name, env[0]),)
    return tuple((variable, variable) for variable in env)


@attrs.frozen
class RunSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    script_path: AbsoluteOrTemplatePath
    log_path: AbsoluteOrTemplatePath
    success_marker: NonEmptyStr
    body: NonBlankStr
    failure_markers: tuple[str, ...] = DEFAULT_FAILURE_MARKERS


@attrs.frozen
class ArtifactSpec:
    """One rsync pull from the pod; a relative `local_path` is under the project root."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    label: NonEmptyStr
    remote_path: NonEmptyStr
    local_path: NonEmptyStr
    required: bool = True
    excludes: tuple[str, ...] = ()
    # 0.8.4 defaulted to True and wiped local files on pull; we delete only when asked.
    delete: bool = False


@attrs.frozen
class LifecycleSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    on_success: LifecycleAction = LifecycleAction.DELETE
    on_failure: LifecycleAction = LifecycleAction.STOP


@attrs.frozen
class TelemetrySpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    enabled: bool = True
    sample_interval_sec: SampleInterval = SampleInterval(30)
    capture_nvidia_smi: bool = True
    capture_dmesg: bool = True
    capture_pod_describe: bool = True
    capture_remote_env: bool = True
    capture_local_git: bool = True
    capture_payload_lockfile: bool = True


@attrs.frozen
class JobSpec:
    """A whole runpod-deploy config, as written (templates not yet rendered)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    name: NonEmptyStr
    pod: PodSpec
    storage: StorageSpec
    run: RunSpec
    schema_version: int = SCHEMA_VERSION
    # None means "the raw name", as in 0.8.4.
    run_id_prefix: str | None = None
    # None means the per-config default (templates.default_state_file).
    state_file: str | None = None
    local: LocalSpec = LocalSpec()
    budget: BudgetSpec = BudgetSpec()
    remote_env: RemoteEnvSpec = RemoteEnvSpec()
    setup: tuple[CommandSpec, ...] = ()
    # False: setup, then secrets (0.8.4 order). True: secrets first, so setup can use them.
    setup_after_secrets: bool = False
    staging: tuple[StagingSpec, ...] = ()
    secrets: tuple[SecretSpec, ...] = ()
    preflight: tuple[CommandSpec, ...] = ()
    artifacts: tuple[ArtifactSpec, ...] = ()
    lifecycle: LifecycleSpec = LifecycleSpec()
    telemetry: TelemetrySpec = TelemetrySpec()
    variables: Mapping[Identifier, str] = attrs.field(factory=dict)
    # The top-level sections the registered providers declare (`ssh:`, ...), by key, each
    # structured as its plugin's type (an absent one: that type's defaults). Not a YAML key.
    sections: Mapping[str, Any] = attrs.field(factory=dict)

    def section(self, key: str) -> Any:
        """The provider section `key` (KeyError: no registered provider declares it)."""
        return self.sections[key]

    def with_budget_overrides(
        self,
        *,
        cost_cap_usd: float | None = None,
        max_runtime_minutes: int | None = None,
    ) -> JobSpec:
        """The spec with `--cost-cap-usd` / `--max-runtime-minutes` applied (None = keep)."""
        budget = self.budget
        if cost_cap_usd is not None:
            budget = attrs.evolve(budget, cost_cap_usd=PositiveFloat(cost_cap_usd))
        if max_runtime_minutes is not None:
            budget = attrs.evolve(budget, max_runtime_minutes=PositiveInt(max_runtime_minutes))
        return attrs.evolve(self, budget=budget)
