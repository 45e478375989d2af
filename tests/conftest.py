"""Test-wide settings: hypothesis profiles chosen by HYPOTHESIS_PROFILE (ci, dev, thorough)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from helpers.launcher_free_path import put_interpreters_first_on_path
from helpers.rewrite_cache import write_rewrite_cache
from pegboard.testing.capture import process_state_kept

put_interpreters_first_on_path()

# A suite started in the background of a script (`cmd &` where the shell has no job control, so
# under `(make test &)`, nohup wrappers and some runners) inherits SIGINT ignored and hands it on:
# an ignored signal stays ignored across exec, so every CLI the tests start ignores Ctrl-C, and
# the tests that send SIGINT wait on a run that never saw it (both Ctrl-C e2e tests hung so in
# two whole-suite runs). Ctrl-C is put back to Python's default here, once, in the process that
# starts the xdist workers and every test's subprocesses.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and (
    threading.current_thread() is threading.main_thread()
):
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Fixtures for a real sshd on 127.0.0.1 (sshd, start_sshd, ssh_client_key) and for the RunPod
# API sandbox with the RunPod adapter (runpod_sandbox, runpod_cloud, sleeps).
pytest_plugins = ["helpers.sshd", "helpers.runpod_sandbox"]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config) -> None:
    """In the controller, before it starts the workers: the rewrite of every test module done
    once for all of them (helpers/rewrite_cache.py)."""
    write_rewrite_cache(config)


@pytest.fixture(autouse=True)
def _pegboard_logging_restored() -> Iterator[None]:
    """pegboard.testing's in-process runs put the process's logging back themselves; click's
    CliRunner and direct `main()` calls in our tests do not: the same rule around every test."""
    with process_state_kept():
        yield
