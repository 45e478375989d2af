"""RunPod API sandbox: the GraphQL operations of the `runpod` SDK and our adapter on loopback."""

from .catalog import Catalog, GpuType, NetworkVolume
from .faults import Faults, StockOut
from .sandbox import RunPodSandbox, serve

__all__ = ["Catalog", "Faults", "GpuType", "NetworkVolume", "RunPodSandbox", "StockOut", "serve"]
