"""In-memory fakes of every port, shipped for users' own tests (stdlib only, deterministic).

Public and stable: import them from here, e.g. `from pegboard.adapters.fakes import FakeCluster`.
"""

from .clock import FakeClock
from .cluster import FakeCluster, FakeLogStream, FakeRequest
from .cluster.script import PodScript
from .failures import FakeCall
from .file_sync import FakeFileSync
from .gpu_cloud import FakeGpuCloud
from .shell import FakeHost, FakeJob, FakeShell

__all__ = [
    "FakeCall",
    "FakeClock",
    "FakeCluster",
    "FakeFileSync",
    "FakeGpuCloud",
    "FakeHost",
    "FakeJob",
    "FakeLogStream",
    "FakeRequest",
    "FakeShell",
    "PodScript",
]
