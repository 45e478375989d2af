"""Once the success marker is in, the monitor asks for the script's exit at once: waiting out
the probe interval would also wait for the follow's next heartbeat (issue 9, ~0.1 s a run)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helpers.gpujob_run import RunHarness
from pegboard.adapters.fakes import FakeClock
from pegboard.adapters.providers import discover_registry
from pegboard.adapters.yaml_documents import read_yaml_document
from pegboard.app.runpod_deploy.job_loading import load_job
from pegboard.app.runpod_deploy.phases import job_paths, monitor
from pegboard.app.runpod_deploy.run_types import Timing
from pegboard.domain.gpujob.plan import RunBudget
from pegboard.domain.ports.remote_shell import DetachedStatus


class _Shell:
    """A log that says `starting`, then (10 ms later) the success marker; the script exits with
    the marker. Records what the monitor did, in order."""

    def __init__(self, clock: FakeClock, marker: str) -> None:
        self.clock = clock
        self.calls: list[str] = []
        self.chunks = [b"starting\n", f"{marker}\n".encode()]
        self.exited = False

    def follow(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        shell = self

        class _Stream:
            def __next__(self) -> bytes:
                shell.calls.append("next")
                if shell.chunks:
                    chunk = shell.chunks.pop(0)
                    shell.clock.sleep(0.01)
                    if not shell.chunks:
                        shell.exited = True
                    return chunk
                shell.clock.sleep(0.1)  # the follow's heartbeat
                return b""

            def close(self) -> None:
                pass

        return _Stream()  # type: ignore[return-value]

    def detached_status(self, **kwargs: Any) -> DetachedStatus:
        self.calls.append("status")
        if self.exited:
            return DetachedStatus(running=False, exit_code=0)
        return DetachedStatus(running=True)

    def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        return b""


def test_the_exit_is_asked_for_as_soon_as_the_marker_is_seen(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    job = load_job(
        config_path=h.config_path,
        read_document=read_yaml_document,
        providers=discover_registry(),
        cli_vars={},
        home=str(tmp_path / "home"),
        now=datetime(2026, 1, 1, tzinfo=UTC),
        unique_suffix="abcd",
    ).job
    clock = FakeClock()
    shell = _Shell(clock, job.run.success_marker)
    result = monitor(
        shell,  # type: ignore[arg-type]
        job.run,
        job_paths(job.run),
        budget=RunBudget(
            started_at=0.0,
            cost_cap_usd=100.0,
            price_per_hour_usd=1.0,
            price_source="assumed_rate",
            max_runtime_sec=None,
        ),
        clock=clock,
        timing=Timing(),
        job_output=lambda _b: None,
        emit=lambda *a, **k: None,
    )
    assert result.verdict.exit_code == 0
    # next (starting), status (RUNNING), next (the marker), status (exit 0): no heartbeat wait.
    assert shell.calls == ["next", "status", "next", "status"]
