"""The RunPod adapter: the GpuCloud port on the `runpod` SDK (the `pegboard[runpod]` extra).

Importing this package does not import the SDK; the first call that talks to RunPod does.
"""

from .gpu_cloud import RUNPOD_PROVIDER, RunPodGpuCloud
from .query_values import UnsafeQueryValue
from .sdk import RUNPOD_EXTRA_HINT, RunPodSdkMissing

__all__ = [
    "RUNPOD_EXTRA_HINT",
    "RUNPOD_PROVIDER",
    "RunPodGpuCloud",
    "RunPodSdkMissing",
    "UnsafeQueryValue",
]
