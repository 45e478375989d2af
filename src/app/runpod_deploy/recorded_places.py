"""The pods of a provider that must be told where its pods are (`ssh`: a host), for the
commands that take only `--provider` (`ls-stale`, `cleanup --pod-id`, `cleanup --all-stopped`):
every place this user's state files recorded for it, as one GpuCloud.

Listing asks every place (one that does not answer is a warning, unless none answers); a
single pod is looked up place by place, and stopped or deleted where it was found.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pegboard.domain.errors import NotFound, PortError, UsageError
from pegboard.domain.gpujob.provider_plugin import ProviderPlugin
from pegboard.domain.gpujob.provider_registry import ProviderRegistry
from pegboard.domain.gpujob.stale import pointer_provider
from pegboard.domain.ports.gpu_cloud import (
    GpuCloud,
    GpuStock,
    NetworkVolume,
    PodHandle,
    PodRequest,
    PodStatus,
)

from .provider_locators import recorded_locator

logger = logging.getLogger(__name__)


def recorded_locators(
    pointers: Mapping[str, Mapping[str, Any]], provider: str, providers: ProviderRegistry
) -> list[dict[str, Any]]:
    """One locator per distinct place the pointers of `provider` recorded (newest file first
    wins; the plugin's place_of says what makes two places: per-run files do not)."""
    plugin = providers.get(provider)
    if plugin is None or plugin.place_of is None:
        return []
    places: dict[str, dict[str, Any]] = {}
    for data in pointers.values():
        if pointer_provider(data) != provider:
            continue
        locator = recorded_locator(data, providers)
        locator.pop("pod_id", None)
        if not locator:
            continue
        try:
            place = plugin.place_of(plugin.load_locator(locator))
        except UsageError as exc:  # a state file edited by hand: not a place to ask
            logger.warning("%s", exc)
            continue
        if place is not None:
            places.setdefault(place[0], locator)
    return list(places.values())


def place_name(plugin: ProviderPlugin[Any], locator: Mapping[str, Any]) -> str:
    """How messages name the place `locator` (a recorded_locators entry) is."""
    place = plugin.place_of(plugin.load_locator(locator)) if plugin.place_of else None
    return place[1] if place else plugin.name


class RecordedPlaces:
    """A GpuCloud over several places of one provider (each its own GpuCloud)."""

    def __init__(self, provider: str, places: Sequence[tuple[str, Callable[[], GpuCloud]]]) -> None:
        self._provider = provider
        self._places = list(places)  # (a name for messages, how to reach it)
        self._clouds: dict[str, GpuCloud] = {}

    @property
    def provider(self) -> str:
        return self._provider

    def _cloud(self, name: str, open_cloud: Callable[[], GpuCloud]) -> GpuCloud:
        if name not in self._clouds:
            self._clouds[name] = open_cloud()
        return self._clouds[name]

    def _each(self) -> builtins.list[tuple[str, GpuCloud]]:
        return [(name, self._cloud(name, open_cloud)) for name, open_cloud in self._places]

    # --- listing: every place --------------------------------------------------------------

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        return self._gather(lambda cloud: cloud.list_pods(status=status))

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        return self._gather(lambda cloud: cloud.find_pods(name=name))

    def _gather(
        self, ask: Callable[[GpuCloud], builtins.list[PodStatus]]
    ) -> builtins.list[PodStatus]:
        found: builtins.list[PodStatus] = []
        errors: builtins.list[PortError] = []
        for name, cloud in self._each():
            try:
                found.extend(ask(cloud))
            except PortError as exc:
                logger.warning("%s pods at %s not listed: %s", self._provider, name, exc)
                errors.append(exc)
        if errors and len(errors) == len(self._places):
            raise errors[0]  # nothing answered: an error, not "no pods"
        return found

    # --- one pod: where it is ---------------------------------------------------------------

    def _holding(self, pod_id: str) -> tuple[GpuCloud, PodStatus]:
        last: PortError | None = None
        for _name, cloud in self._each():
            try:
                return cloud, cloud.get_pod(pod_id)
            except NotFound:
                continue
            except PortError as exc:
                last = exc
        if last is not None:
            raise last  # not found where asked, and a place did not answer: not "gone"
        raise NotFound(f"no {self._provider} pod {pod_id!r} where your runs were")

    def get_pod(self, pod_id: str) -> PodStatus:
        return self._holding(pod_id)[1]

    def stop_pod(self, pod_id: str) -> None:
        self._holding(pod_id)[0].stop_pod(pod_id)

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        self._holding(pod_id)[0].resume_pod(pod_id, gpu_count=gpu_count)

    def terminate_pod(self, pod_id: str) -> None:
        try:
            cloud = self._holding(pod_id)[0]
        except NotFound:
            return  # already gone everywhere
        cloud.terminate_pod(pod_id)

    # --- everything else: the first place (a machine that is already there answers alike) --

    def _first(self) -> GpuCloud:
        places = self._each()
        if not places:
            raise NotFound(f"no {self._provider} place recorded by your runs")
        return places[0][1]

    def gpu_availability(
        self, *, gpu_ids: Sequence[str], datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        return self._first().gpu_availability(
            gpu_ids=gpu_ids, datacenter_ids=datacenter_ids, cloud_type=cloud_type
        )

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        return self._first().gpu_prices(cloud_type=cloud_type, spot=spot)

    def datacenter_stock(
        self, *, datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        return self._first().datacenter_stock(datacenter_ids=datacenter_ids, cloud_type=cloud_type)

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        return self._first().network_volume(id_or_name)

    def create_pod(self, request: PodRequest) -> PodHandle:
        raise PortError(f"{self._provider}: a pod is created by `run`, on its config's host")
