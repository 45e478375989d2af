"""The GPU names a kubernetes provider's config and locator default to, and the node label value
that names a GPU type: in a module of their own, so every run's config section and pointer
locator load without pod_objects (the pod and claim manifests, domain.kubernetes)."""

from __future__ import annotations

import re

__all__ = ["DEFAULT_GPU_LABEL", "DEFAULT_GPU_RESOURCE", "gpu_label_value"]

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
# The NVIDIA GPU feature discovery's label (gpu-feature-discovery, `nvidia.com/gpu.product`),
# e.g. `NVIDIA-A100-SXM4-80GB`; GKE's is `cloud.google.com/gke-accelerator`.
DEFAULT_GPU_LABEL = "nvidia.com/gpu.product"

_SPACES = re.compile(r"\s+")


def gpu_label_value(gpu_id: str) -> str:
    """The node label value that names a GPU type: the gpu_order entry with each run of spaces as
    one '-', as NVIDIA's GPU feature discovery writes the product name (`NVIDIA A100-SXM4-80GB`
    -> `NVIDIA-A100-SXM4-80GB`), so RunPod's GPU ids name the same types on a cluster."""
    return _SPACES.sub("-", gpu_id.strip())
