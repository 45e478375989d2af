"""A network volume pins the pod to the datacenter that holds it.

0.8.4 accepted a network volume next to several datacenters, then failed at provisioning when
its selection picked a datacenter that was not the volume's. We accept the same config: at
provisioning the volume is looked up (GpuCloud.network_volume) and the pod goes to the
volume's datacenter; the other listed datacenters are skipped with an info line. `validate`
only warns, since it cannot know where the volume is without asking the provider.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import PegboardError
from pegboard.domain.gpujob.spec import JobSpec, StorageMode
from pegboard.domain.ports.gpu_cloud import NetworkVolume


class VolumePlacementError(PegboardError, ValueError):
    """The volume cannot be used with this config; the message is one line for the user."""


@attrs.frozen
class VolumePlacement:
    """Where the pod may go: the datacenters kept (in config order) and the ones skipped."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    volume: NetworkVolume
    datacenters: tuple[str, ...]
    skipped: tuple[str, ...]

    def info_line(self) -> str:
        where = self.volume.datacenter_id or "every datacenter"
        line = f"network volume {self.volume.name!r} ({self.volume.volume_id}) is in {where}"
        if self.skipped:
            line += f"; skipping datacenter(s) {', '.join(self.skipped)}"
        return line


def several_datacenters_warning(spec: JobSpec) -> str | None:
    """What `validate` says about a network volume listed with several datacenters."""
    pod, storage = spec.pod, spec.storage
    if storage.mode is not StorageMode.NETWORK_VOLUME or len(pod.datacenters) < 2:
        return None
    return (
        f"pod.datacenters lists {len(pod.datacenters)} datacenters "
        f"({', '.join(pod.datacenters)}) with network volume {storage.volume_name!r}; "
        "the pod can only go to the volume's datacenter, looked up when provisioning "
        "(the others are skipped)"
    )


def place_on_volume(
    *, volume_name: str, volume: NetworkVolume | None, datacenters: Sequence[str]
) -> VolumePlacement:
    """Keep only the configured datacenter that holds `volume`; refuse when none does."""
    if volume is None:
        raise VolumePlacementError(
            f"storage.volume_name: no network volume {volume_name!r} in this account"
        )
    if volume.datacenter_id is None:
        return VolumePlacement(volume, tuple(datacenters), ())
    if volume.datacenter_id not in datacenters:
        raise VolumePlacementError(
            f"network volume {volume_name!r} is in {volume.datacenter_id}, which "
            f"pod.datacenters ({', '.join(datacenters)}) does not list; add it"
        )
    return VolumePlacement(
        volume,
        (volume.datacenter_id,),
        tuple(dc for dc in datacenters if dc != volume.datacenter_id),
    )


__all__ = [
    "VolumePlacement",
    "VolumePlacementError",
    "place_on_volume",
    "several_datacenters_warning",
]
