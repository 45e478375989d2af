"""Building ResolvedRuns and running the lifecycle on FakeCluster + FakeClock in tests."""

from __future__ import annotations

import io
from typing import Any

import attrs

from pegboard.adapters.fakes import FakeClock, FakeCluster
from pegboard.app.squarepeg.lifecycle import RunLifecycle
from pegboard.app.squarepeg.status import StatusUI
from pegboard.domain.errors import PegboardError
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.retry import Backoff
from pegboard.domain.squarepeg.resolved_run import OutputSettings, ResolvedRun, SweepSettings

RUN_ID = "0b6f1c2a-1111-4222-8333-444455556666"
USER = "jane"
NO_WAIT = Backoff(first_delay=0.0, factor=1.0, max_delay=0.0, attempts_per_outage=6)


def own_labels(run_id: str = RUN_ID, *, keep: bool = False, user: str = USER) -> dict[str, str]:
    return dict(labels.own_labels(run_id=run_id, created_by=user, keep=keep))


def resolved_run(
    name: str = "squarepeg-alpine-a1b2c3",
    *,
    kind: ResourceKind = ResourceKind.POD,
    command: tuple[str, ...] = ("echo", "hi"),
    keep: bool = False,
    timeout: int = 300,
    quiet: bool = False,
    sweep: bool = True,
    min_age: int = 300,
    namespace: str | None = None,
    container: str = "main",
    run_id: str = RUN_ID,
) -> ResolvedRun:
    pod_labels = own_labels(run_id, keep=keep)
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": container, "image": "alpine", "args": list(command)}],
    }
    if kind is ResourceKind.POD:
        manifest: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": pod_labels},
            "spec": pod_spec,
        }
    else:
        manifest = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": pod_labels},
            "spec": {
                "backoffLimit": 0,
                "completions": 1,
                "parallelism": 1,
                "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": {"labels": dict(pod_labels)}, "spec": pod_spec},
            },
        }
    return ResolvedRun(
        manifest=manifest,
        kind=kind,
        name=name,
        namespace=namespace,
        context=None,
        container_name=container,
        run_id=run_id,
        created_by=USER,
        keep=keep,
        startup_timeout_seconds=timeout,
        output=OutputSettings(quiet=quiet, color=False),
        sweep=SweepSettings(enabled=sweep, min_age_seconds=min_age),
    )


@attrs.define
class RunResult:
    code: int | None
    error: PegboardError | None
    stdout: bytes
    stderr: str


def run_on_fake(
    resolved: ResolvedRun,
    cluster: FakeCluster,
    **options: Any,
) -> RunResult:
    """Run the lifecycle to the end; the exit code or the error it raised, and both streams."""
    out = io.BytesIO()
    err = io.StringIO()
    ui = StatusUI(tag="0b6f1c2a", stream=err, quiet=resolved.output.quiet, color=False, environ={})
    options.setdefault("reconnect_policy", NO_WAIT)
    options.setdefault("log_end_grace", 0.5)
    clock = cluster.clock
    assert isinstance(clock, FakeClock)
    lifecycle = RunLifecycle(resolved, cluster=cluster, clock=clock, ui=ui, stdout=out, **options)
    try:
        code: int | None = lifecycle.execute()
        error = None
    except PegboardError as exc:
        code, error = None, exc
    return RunResult(code, error, out.getvalue(), err.getvalue())
