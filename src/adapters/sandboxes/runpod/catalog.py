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
    manufacturer: str = "NVIDIA"  # v2 GpuManufacturer
    cuda_versions: tuple[str, ...] = ("12.4", "12.6", "12.8")  # none for AMD


@dataclass
class CpuType:
    """A CPU flavor (v2 /v2/catalog/cpus): vCPU range, RAM per vCPU, price per vCPU-hour."""

    id: str
    name: str
    group: str
    vcpu_min: int
    vcpu_max: int
    ram_gb_per_vcpu: float
    secure_per_vcpu: float
    serverless_per_vcpu: float


@dataclass
class DataCenter:
    """What v2 /v2/catalog/datacenters says about a location besides its id."""

    name: str
    region: str  # v2 DataCenterRegion
    country: str  # ISO 3166-1 alpha-2 (the countryCodes filter)
    global_network: bool = False
    volume_types: tuple[str, ...] = ("STANDARD",)
    compliance: tuple[str, ...] = ()


@dataclass
class NetworkVolume:
    id: str
    name: str
    size_gb: int
    datacenter_id: str
    type: str = "STANDARD"  # v2 VolumeType


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
        # The GPU types users name most besides the above, with the SDK CLI's default first:
        # `runpod pod create` asks for "NVIDIA GeForce RTX 3090" (runpod-python cli/groups/pod).
        _gpu("NVIDIA GeForce RTX 3090", "RTX 3090", 24, 0.43, 0.22),
        _gpu("NVIDIA GeForce RTX 5090", "RTX 5090", 32, 0.89, 0.69),
        _gpu("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", 48, 0.77, 0.74),
        _gpu("NVIDIA L4", "L4", 24, 0.43, None),
        _gpu("NVIDIA L40S", "L40S", 48, 0.86, 0.79),
        _gpu("NVIDIA L40", "L40", 48, 0.99, None),
        _gpu("NVIDIA A40", "A40", 48, 0.40, 0.35),
        _gpu("NVIDIA H100 PCIe", "H100 PCIe", 80, 2.39, 1.99),
        _gpu("NVIDIA H200", "H200 SXM", 141, 3.99, None),
        _gpu("NVIDIA B200", "B200", 180, 5.99, None),
        GpuType(
            "AMD Instinct MI300X OAM",
            "MI300X",
            192,
            2.49,
            None,
            1.25,
            None,
            manufacturer="AMD",
            cuda_versions=(),
        ),
    ]


DEFAULT_DATACENTERS = (
    "EU-RO-1", "EU-SE-1", "US-CA-2", "US-GA-2", "US-TX-3", "CA-MTL-1", "US-KS-2", "EU-CZ-1",
)  # fmt: skip

_EU = ("GDPR", "ISO_IEC_27001", "SOC_2_TYPE_2")
_US = ("ISO_IEC_27001", "SOC_2_TYPE_2")


def default_datacenter_info() -> dict[str, DataCenter]:
    both = ("STANDARD", "HIGH_PERFORMANCE")
    return {
        "EU-RO-1": DataCenter("Bucharest", "EUROPE", "RO", True, both, _EU),
        "EU-SE-1": DataCenter("Stockholm", "EUROPE", "SE", False, ("STANDARD",), _EU),
        "EU-CZ-1": DataCenter("Prague", "EUROPE", "CZ", True, ("STANDARD",), _EU),
        "US-CA-2": DataCenter("California", "NORTH_AMERICA", "US", True, both, _US),
        "US-GA-2": DataCenter("Georgia", "NORTH_AMERICA", "US", False, ("STANDARD",), _US),
        "US-TX-3": DataCenter("Texas", "NORTH_AMERICA", "US", True, both, _US),
        "US-KS-2": DataCenter("Kansas", "NORTH_AMERICA", "US", True, ("STANDARD",), _US),
        "CA-MTL-1": DataCenter("Montreal", "NORTH_AMERICA", "CA", False, ("STANDARD",), ()),
    }


def default_cpu_types() -> list[CpuType]:
    """RunPod's CPU flavors: 3rd/5th generation, compute (c), general (g), memory (m)."""
    return [
        CpuType("cpu3c", "Compute-Optimized", "3rd Gen", 2, 32, 2.0, 0.03, 0.04),
        CpuType("cpu3g", "General Purpose", "3rd Gen", 2, 32, 4.0, 0.04, 0.05),
        CpuType("cpu3m", "Memory-Optimized", "3rd Gen", 2, 32, 8.0, 0.05, 0.06),
        CpuType("cpu5c", "Compute-Optimized", "5th Gen", 2, 64, 2.0, 0.04, 0.05),
        CpuType("cpu5g", "General Purpose", "5th Gen", 2, 64, 4.0, 0.05, 0.06),
    ]


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
    cpu_types: list[CpuType] = field(default_factory=default_cpu_types)
    datacenter_info: dict[str, DataCenter] = field(default_factory=default_datacenter_info)

    def datacenter(self, datacenter_id: str) -> DataCenter:
        """Known metadata, or a plain entry for a datacenter a test added by id only."""
        found = self.datacenter_info.get(datacenter_id)
        if found is not None:
            return found
        country = datacenter_id.split("-")[0]
        region = (
            "EUROPE"
            if country == "EU"
            else "NORTH_AMERICA"
            if country in ("US", "CA")
            else "UNKNOWN"
        )
        return DataCenter(datacenter_id, region, country if len(country) == 2 else "US")

    def cpu(self, cpu_id: str) -> CpuType | None:
        return next((c for c in self.cpu_types if c.id == cpu_id), None)

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
