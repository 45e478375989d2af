"""In-memory fakes of every port, shipped for users' own tests (stdlib only, deterministic).

Public and stable: import them from here, e.g. `from pegboard.adapters.fakes import FakeCluster`.
"""

from .clock import FakeClock

__all__ = ["FakeClock"]
