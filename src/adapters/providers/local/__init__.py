"""`pod.provider: local`: pods are directories on this machine (docs/runpod-deploy/providers.md).

Its locator is the pods root (a pointer's wins over this process's PEGBOARD_LOCAL_PODS_ROOT);
nothing is rented, no GPU catalog, this machine is the pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pegboard.domain.gpujob.provider_plugin import BuildContext, LocatorContext, ProviderPlugin
from pegboard.domain.ports.backend import Backend

from .locator import LocalLocator

if TYPE_CHECKING:
    from pegboard.domain.gpujob.spec import JobSpec


def _build(context: BuildContext, locator: LocalLocator | None) -> Backend:
    from .backend import local_backend

    return local_backend(context, locator or LocalLocator())


def _from_config(spec: JobSpec, context: LocatorContext) -> LocalLocator:
    return LocalLocator()


def _legacy(pointer: Mapping[str, Any]) -> Mapping[str, Any]:
    """Pointers of older releases kept the pods root at their top level."""
    root = pointer.get("pods_root")
    return {"pods_root": root} if isinstance(root, str) and root else {}


PLUGIN = ProviderPlugin(
    name="local",
    summary="pods are directories on this machine (no GPU rented, nothing billed)",
    locator_type=LocalLocator,
    build=_build,
    locator_from_config=_from_config,
    legacy_locator=_legacy,
    billed=False,
    gpu_catalog=False,
    live_stock=False,
    no_stock_note="this machine is the pod",
)
