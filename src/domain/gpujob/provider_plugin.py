"""A runpod-deploy provider, declared once: its name, its typed locator, the config sections it
reads, how to build its ports, and the capabilities the core's rules ask about (never its name).

Each provider is one package, `src/adapters/providers/<name>/`, whose `PLUGIN` is one of
these; `pegboard.adapters.providers.discover_registry()` collects them into the one
ProviderRegistry (provider_registry.py). Everything here is pure: the heavy adapters are imported
by `build`, when a process really reaches that provider's pods.

The locator is where a provider's pods are reached: built from the config for `run`
(`locator_from_config`), recorded unstructured in every pod pointer (`unstructure_locator`),
structured again for the commands after it (`structure_locator`), leniently, so that a pointer
written by an older (or newer) release still loads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Generic, TypeVar

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import KeyPath
from pegboard.domain.errors import UsageError
from pegboard.domain.ports.backend import Backend

if TYPE_CHECKING:
    from pegboard.domain.gpujob.spec import JobSpec

__all__ = [
    "NOT_RECORDED",
    "BuildContext",
    "ConfigSection",
    "LocatorContext",
    "ProviderPlugin",
    "structure_locator",
    "unstructure_locator",
]

L = TypeVar("L")

# attrs field metadata of a locator field a pointer does not record (per process: a timeout).
NOT_RECORDED = {"recorded": False}

Problems = list[tuple[KeyPath, str]]


@attrs.frozen
class BuildContext:
    """What the composition root hands a plugin's `build`: the outside world, as values."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    environ: Mapping[str, str]
    home: str
    state_dir: Path  # this user's runpod-deploy state directory (the pod pointers)
    data_dir: Path  # $XDG_DATA_HOME by the one XDG rule (app/shared/xdg.py)
    progress: BinaryIO | None = None  # where transfers report progress (stderr)
    # The local user, as squarepeg names it (the kubernetes provider's created-by label).
    user_name: str = "unknown"


@attrs.frozen
class LocatorContext:
    """What `run` hands a plugin's `locator_from_config`."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    home: str
    run_pointer: Path  # this run's pointer: files beside it belong to the run (pinned host keys)
    ready_timeout_sec: float


@attrs.frozen
class ConfigSection:
    """A top-level config section a provider reads (`ssh:`, `kubernetes:`).

    `type` is an attrs class whose fields all have defaults (an absent section is `type()`),
    structured by the job spec's strict converter (unknown keys, exact scalars; the NewTypes of
    spec.py check ranges). `rules(section, provider)` returns the problems that need more than
    one value or the chosen `pod.provider`, with key paths relative to the section.
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    key: str
    type: type
    rules: Callable[[Any, str], Problems] | None = None


def _no_sections(sections: Mapping[str, Any], home: str) -> Problems:
    return []


def _no_legacy(pointer: Mapping[str, Any]) -> Mapping[str, Any]:
    return {}


@attrs.frozen
class ProviderPlugin(Generic[L]):
    """One provider of pods (`pod.provider: <name>`)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    name: str
    summary: str  # one line: what its pods are (docs, --help)
    locator_type: type[L]
    # The Backend reaching this provider's pods at `locator`; None: where nothing says (a
    # --provider flag alone). A provider that cannot work without one raises LocatorNeeded.
    build: Callable[[BuildContext, L | None], Backend]
    # The locator `run` reaches its pods at, from the config.
    locator_from_config: Callable[[JobSpec, LocatorContext], L]
    sections: tuple[ConfigSection, ...] = ()
    # `pod` keys that are optional with this provider (ssh: image, datacenters, gpu_order).
    pod_defaults: Mapping[str, Any] = attrs.field(factory=dict)
    # `validate`: (the sections that structured, by key; home) -> problems (the ssh key file).
    check_access: Callable[[Mapping[str, Any], str], Problems] = _no_sections
    # A pointer an older release wrote -> the raw locator it implies (local: a top-level
    # pods_root); merged under the pointer's own `locator`.
    legacy_locator: Callable[[Mapping[str, Any]], Mapping[str, Any]] = _no_legacy
    # locator -> (identity, display name) of the place it names (ssh: user@host:port, one per
    # machine whatever the runs' own pin files); None: the provider reaches all of its pods from
    # anywhere, without a recorded place. The pod commands given only `--provider` ask every
    # place this user's pointers recorded.
    place_of: Callable[[L], tuple[str, str] | None] | None = None
    # `run`, before the run has loaded: (the config file's raw data, the
    # --ssh-ready-timeout-sec flag, HOME) -> start reaching the machine the config names, so
    # the connection is under way while the run loads (ssh: the whole dial). It must write
    # nothing: the run's own connection takes it only where it matches exactly.
    early_contact: Callable[[Mapping[str, Any], int | None, str], None] | None = None
    # --- capabilities: what the core's rules ask, instead of the provider's name ---------------
    billed: bool = True  # compute and disk are rented: left-behind costs, ls-stale rates
    gpu_catalog: bool = True  # GPU type ids are checked against its catalog (False: labels)
    live_stock: bool = True  # `validate --check-availability` asks its stock
    # Without live stock: why `validate --check-availability` has nothing to ask, in a few words.
    no_stock_note: str = "it has no GPU stock to ask"

    def load_locator(self, raw: Mapping[str, Any]) -> L:
        """This provider's locator from a pointer's (or a test's) unstructured mapping."""
        return structure_locator(self.locator_type, raw, provider=self.name)


@functools.cache
def _lenient() -> Any:
    """cattrs' default converter (extra keys ignored: a newer release may record more),
    imported on first use: `--help` lists the providers without it."""
    import cattrs

    return cattrs.Converter()


def structure_locator(cls: type[L], raw: Mapping[str, Any], *, provider: str) -> L:
    """`raw` as a `cls` locator: unknown keys ignored, missing ones defaulted; a value of the
    wrong type is a UsageError naming the provider (a state file edited by hand)."""
    known = {field.name for field in attrs.fields(cls)}  # type: ignore[arg-type]  # an attrs class
    try:
        loaded: L = _lenient().structure({k: v for k, v in raw.items() if k in known}, cls)
    except Exception as exc:  # every structuring failure is one line, never a traceback
        problems = "; ".join(str(e) for e in getattr(exc, "exceptions", [exc]))
        raise UsageError(
            f"the recorded {provider} locator {dict(raw)!r} does not load ({problems})"
        ) from None
    return loaded


def unstructure_locator(locator: object) -> dict[str, Any]:
    """The JSON object a pointer records for `locator` (None: {}), without NOT_RECORDED fields."""
    if locator is None:
        return {}
    raw: dict[str, Any] = _lenient().unstructure(locator)
    for field in attrs.fields(type(locator)):  # type: ignore[arg-type]
        if field.metadata.get("recorded") is False:
            raw.pop(field.name, None)
    return raw
