"""Stock and prices for a machine that is not rented (the `local` and `ssh` providers).

Such a machine stands in for whatever GPU and datacenter a config asks for, always in stock,
and has no price (nothing is billed; the budget falls back to its assumed rate).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import ClassVar

from pegboard.domain.ports.gpu_cloud import GpuStock


class OwnedMachineStock:
    """The GpuCloud stock and price queries of a provider whose machine is already there."""

    HOST_GPU_ID: ClassVar[str]  # what `datacenter_stock` lists

    def gpu_availability(
        self, *, gpu_ids: Sequence[str], datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        return [GpuStock(gpu, dc, "high") for dc in datacenter_ids for gpu in gpu_ids]

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        return {}

    def datacenter_stock(
        self, *, datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        return [GpuStock(self.HOST_GPU_ID, dc, "high") for dc in datacenter_ids]
