"""The RunPod adapter: the GpuCloud port on RunPod's REST API v2, over our own thin HTTP client
(http.py; why not the `runpod` SDK: docs/runpod-api-client.md). GraphQL is used only for what v2
cannot do (graphql_legacy.py). Stdlib only: no SDK, no extra to install.
"""

from .gpu_cloud import RUNPOD_PROVIDER, RunPodGpuCloud
from .graphql_gone import GraphQLGone
from .query_values import UnsafeQueryValue

__all__ = [
    "RUNPOD_PROVIDER",
    "GraphQLGone",
    "RunPodGpuCloud",
    "UnsafeQueryValue",
]
