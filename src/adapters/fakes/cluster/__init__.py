"""FakeCluster and its parts: an in-memory Kubernetes in virtual time (public API).

fake_cluster.py  FakeCluster, the Cluster port's fake (what users import)
script.py        PodScript and its steps: what the scripted kubelet does to a pod, and when
kubelet.py       the scripted kubelet (pod phases, container states, exit codes)
jobs.py          the Jobs controller (a Job's pod, Complete/Failed conditions)
logs.py          container logs as the kubelet keeps them; log streams; LogFaults
store.py         objects, resourceVersions, events
watch.py         watch events from the store's changes
virtual_time.py  the virtual-time schedule every part runs on
"""

from .fake_cluster import FakeCluster, FakeRequest
from .logs import FakeLogStream, LogFaults
from .script import PodScript

__all__ = ["FakeCluster", "FakeLogStream", "FakeRequest", "LogFaults", "PodScript"]
