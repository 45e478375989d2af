"""Test-wide settings: hypothesis profiles chosen by HYPOTHESIS_PROFILE (ci, dev, thorough)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from pegboard.app.shared import call_trace

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Fixtures for a real sshd on 127.0.0.1 (sshd, start_sshd, ssh_client_key) and for the RunPod
# API sandbox with the RunPod adapter (runpod_sandbox, runpod_cloud, sleeps).
pytest_plugins = ["helpers.sshd", "helpers.runpod_sandbox"]


@pytest.fixture(autouse=True)
def _pegboard_logging_restored() -> Iterator[None]:
    """An in-process CLI run (pegboard.testing, CliRunner) sets the `pegboard` logger's level
    from -v/-q and adds its stderr handler, and -v switches call tracing on for the process: put
    them back, so a later test on the same worker sees the defaults (a `-q` run left the logger
    at WARNING, and a caplog.at_level(INFO) test on that xdist worker saw no records)."""
    root = logging.getLogger("pegboard")
    level, handlers = root.level, list(root.handlers)
    observer = call_trace._observer
    yield
    root.setLevel(level)
    root.handlers[:] = handlers
    call_trace._observer = observer
