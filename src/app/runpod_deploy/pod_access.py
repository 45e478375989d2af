"""How the pod-side commands (`cleanup`, `ls-stale`, `logs`, the GPU commands) reach pods:
their dependencies, the GpuCloud a `--provider` flag names, the backend a pod pointer names,
and the config rendered exactly as `run` renders it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.provider_registry import ProviderRegistry
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.gpu_cloud import GpuCloud

from .pod_pointers import user_pointers
from .provider_locators import recorded_locator
from .recorded_places import RecordedPlaces, place_name, recorded_locators
from .run_types import Backend, BackendAt, BackendFor, LocatorNeeded, ReadDocument
from .state_paths import state_paths

if TYPE_CHECKING:  # the config's loader (YAML, cattrs): only the commands given --config
    from .job_loading import LoadedJob

logger = logging.getLogger(__name__)


@attrs.frozen
class PodCommandDeps:
    """What the pod-side commands need from the outside world (the container builds it)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    providers: ProviderRegistry  # the registered providers (names, sections, capabilities)
    backend_for: BackendFor
    backend_at: BackendAt  # provider + a pointer's locator -> the Backend that reaches it
    clock: Clock
    home: str
    read_document: ReadDocument
    random_hex: Callable[[], str]
    out: Callable[[str], None]  # one result line on stdout
    out_bytes: Callable[[bytes], None]  # raw bytes on stdout (logs)
    ask: Callable[[str], str | None]  # a y/N question on stderr, the answer from stdin
    environ: Mapping[str, str] = attrs.field(factory=dict)  # XDG_STATE_HOME (state_paths.py)


def cloud_for_flag(deps: PodCommandDeps, provider: str, *, listing: bool = False) -> GpuCloud:
    """The GpuCloud a `--provider` flag names; an unavailable one is a usage error naming it.

    A provider that must be told where its pods are (`ssh`: no host without a config) is
    reached at every place this user's state files recorded for it (recorded_places.py).
    With none recorded, a listing (`listing`) finds no pod; anything else is a usage error.
    """
    try:
        return deps.backend_for(provider).cloud
    except LocatorNeeded as exc:
        problem: UsageError = exc
    except UsageError as exc:
        raise UsageError(f"--provider {provider}: {exc}") from None
    pointers = user_pointers(state_paths(deps.home, deps.environ))
    locators = recorded_locators(pointers, provider, deps.providers)
    if not (locators or listing):
        raise UsageError(f"--provider {provider}: {problem}") from None
    if not locators:
        logger.info("no %s place recorded by your runs: %s", provider, problem)
    backend_at = deps.backend_at
    plugin = deps.providers.plugin(provider, what="--provider")
    places = [
        (place_name(plugin, locator), _opener(backend_at, provider, locator))
        for locator in locators
    ]
    return RecordedPlaces(provider, places)


def _opener(
    backend_at: BackendAt, provider: str, locator: Mapping[str, Any]
) -> Callable[[], GpuCloud]:
    return lambda: backend_at(provider, locator).cloud


def backend_for_pointer(deps: PodCommandDeps, provider: str, pointer: Mapping[str, Any]) -> Backend:
    """The backend that reaches the pod a pointer names (its recorded locator wins)."""
    return deps.backend_at(provider, recorded_locator(pointer, deps.providers))


def load_config(
    deps: PodCommandDeps, config_path: Path, var_args: Sequence[str], vars_file: Path | None
) -> LoadedJob:
    """The config rendered exactly as `run` renders it (state file, log path, budget)."""
    from .job_loading import load_job, merge_cli_vars

    cli_vars = merge_cli_vars(var_args, vars_file)
    return load_job(
        config_path=config_path,
        read_document=deps.read_document,
        providers=deps.providers,
        cli_vars=cli_vars,
        home=deps.home,
        environ=deps.environ,
        now=datetime.fromtimestamp(deps.clock.now(), UTC),
        unique_suffix=deps.random_hex(),
    )
