"""What the RunPod API sandbox sells: GPU types with prices, datacenters with stock, volumes.

The defaults cover every GPU and datacenter the configs in examples/runpod/ name, so they run
unchanged; prices are RunPod's public list prices rounded (USD per GPU-hour). Everything is a
plain, mutable attribute: tests and `serve()` may replace or edit it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GpuType:
    id: str
    display_name: str
    memory_gb: int
    secure_price: float | None
    community_price: float | None
    secure_spot_price: float | None = None
    community_spot_price: float | None = None
    max_gpu_count: int = 8


@dataclass
class NetworkVolume:
    id: str
    name: str
    size_gb: int
    datacenter_id: str


STOCK_LEVELS = ("High", "Medium", "Low")  # RunPod's spelling; absent or None means no stock


def _spot(price: float | None) -> float | None:
    """Spot (interruptible) capacity at half the on-demand price."""
    return None if price is None else round(price * 0.5, 2)


def _gpu(gid: str, name: str, mem: int, secure: float | None, community: float | None) -> GpuType:
    return GpuType(gid, name, mem, secure, community, _spot(secure), _spot(community))


def default_gpu_types() -> list[GpuType]:
    return [
        _gpu("NVIDIA RTX A4000", "RTX A4000", 16, 0.25, 0.17),
        _gpu("NVIDIA RTX A4500", "RTX A4500", 20, 0.27, 0.19),
        _gpu("NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada", 20, 0.26, 0.20),
        _gpu("NVIDIA RTX 2000 Ada Generation", "RTX 2000 Ada", 16, 0.24, None),
        _gpu("NVIDIA RTX A5000", "RTX A5000", 24, 0.29, 0.22),
        _gpu("NVIDIA RTX A6000", "RTX A6000", 48, 0.49, 0.33),
        _gpu("NVIDIA GeForce RTX 4090", "RTX 4090", 24, 0.69, 0.34),
        _gpu("NVIDIA A100 80GB PCIe", "A100 PCIe", 80, 1.64, 1.19),
        _gpu("NVIDIA A100-SXM4-80GB", "A100 SXM", 80, 1.74, 1.39),
        _gpu("NVIDIA H100 80GB HBM3", "H100 SXM", 80, 2.99, 2.69),
        _gpu("NVIDIA H100 NVL", "H100 NVL", 94, 2.79, 2.59),
    ]


DEFAULT_DATACENTERS = ("EU-RO-1", "EU-SE-1", "US-CA-2", "US-GA-2", "US-TX-3", "CA-MTL-1")


def default_stock() -> dict[tuple[str, str], str]:
    """Every GPU is High in every datacenter; tests lower what they need."""
    return {(g.id, dc): "High" for g in default_gpu_types() for dc in DEFAULT_DATACENTERS}


def default_network_volumes() -> list[NetworkVolume]:
    return [NetworkVolume("nv-pidws100", "pid-workspace-100gb", 100, "EU-RO-1")]


@dataclass
class Catalog:
    gpu_types: list[GpuType] = field(default_factory=default_gpu_types)
    datacenters: list[str] = field(default_factory=lambda: list(DEFAULT_DATACENTERS))
    stock: dict[tuple[str, str], str] = field(default_factory=default_stock)
    network_volumes: list[NetworkVolume] = field(default_factory=default_network_volumes)

    def gpu(self, gpu_id: str) -> GpuType | None:
        return next((g for g in self.gpu_types if g.id == gpu_id), None)

    def stock_of(self, gpu_id: str, datacenter_id: str) -> str | None:
        level = self.stock.get((gpu_id, datacenter_id))
        return level if level in STOCK_LEVELS else None

    def set_stock(self, gpu_id: str, datacenter_id: str, level: str | None) -> None:
        """Level High/Medium/Low (any case), or None/"none" for a stock-out."""
        normal = (level or "").capitalize()
        if normal in STOCK_LEVELS:
            self.stock[(gpu_id, datacenter_id)] = normal
        else:
            self.stock.pop((gpu_id, datacenter_id), None)

    def volume(self, volume_id: str) -> NetworkVolume | None:
        return next((v for v in self.network_volumes if v.id == volume_id), None)

    def price(self, gpu: GpuType, *, secure: bool, spot: bool) -> float | None:
        if spot:
            return gpu.secure_spot_price if secure else gpu.community_spot_price
        return gpu.secure_price if secure else gpu.community_price
