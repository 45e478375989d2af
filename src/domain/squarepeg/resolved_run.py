"""ResolvedRun: everything a `squarepeg run` needs after parsing, config merging and manifest building.

It is the hand-off between the client side (argv + config layers -> manifest) and the lifecycle
use case that drives the Cluster port (create, wait, stream, exit code, cleanup, sweep).
"""

from __future__ import annotations

from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes.kinds import ResourceKind

__all__ = [
    "OutputSettings",
    "ResolvedRun",
    "SweepSettings",
]


@attrs.frozen
class OutputSettings:
    """How squarepeg talks on stderr."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    quiet: bool = False
    color: bool | None = (
        None  # None: decide from NO_COLOR / FORCE_COLOR / isatty (--no-color -> False)
    )


@attrs.frozen
class SweepSettings:
    """The orphan sweep that rides along with every run (and `squarepeg clean`)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    enabled: bool = True
    min_age_seconds: int = 300
    interval_seconds: int = 60  # 0: sweep after every run, no Lease


@attrs.frozen
class ResolvedRun:
    """A fully resolved run: the manifest exactly as it would be sent, plus how to run it."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    manifest: dict[str, Any]
    kind: ResourceKind
    name: str
    namespace: str | None  # explicit -n / config namespace; None -> the context's, else "default"
    context: str | None  # explicit --context; None -> kubeconfig's current context
    container_name: str
    run_id: str  # the squarepeg.io/run-id label value (a UUID)
    created_by: str  # the squarepeg.io/created-by label value
    keep: bool  # --keep or cleanup: false (the manifest then carries squarepeg.io/keep)
    startup_timeout_seconds: int
    lenient_tls: bool = False  # config `lenient_tls`: relax only VERIFY_X509_STRICT (MicroK8s)
    output: OutputSettings = OutputSettings()
    sweep: SweepSettings = SweepSettings()
