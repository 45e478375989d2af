"""A harness for the pod-side commands (cleanup, ls-stale, logs, GPU commands) on the fakes:
one FakeClock, FakeGpuCloud per provider, one FakeHost, state files in a temp HOME, and
PodCommandDeps that collect stdout lines/bytes and answer the y/N prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dependency_injector import providers

from pegboard.adapters.fakes import FakeClock, FakeFileSync, FakeGpuCloud, FakeHost, FakeShell
from pegboard.app.runpod_deploy.pod_access import PodCommandDeps
from pegboard.app.runpod_deploy.run_types import Backend
from pegboard.app.runpod_deploy.state_paths import state_paths
from pegboard.domain.errors import UsageError
from pegboard.domain.ports.gpu_cloud import PodRequest

from .runpod_container import pod_command_deps_with

STAMP = "20260517T120000.123456Z-beef01"


class PodToolsHarness:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.clock = FakeClock()
        self.host = FakeHost(clock=self.clock)
        self.clouds: dict[str, FakeGpuCloud] = {
            "local": FakeGpuCloud(self.clock, provider="local", host=self.host),
            "fake": FakeGpuCloud(self.clock, provider="fake", host=self.host),
        }
        self.lines: list[str] = []
        self.chunks: list[bytes] = []
        self.prompts: list[str] = []
        self.answer: str | None = "n\n"
        self.backends_asked: list[str] = []

    @property
    def cloud(self) -> FakeGpuCloud:
        return self.clouds["local"]

    def backend_for(self, provider: str) -> Backend:
        self.backends_asked.append(provider)
        if provider not in self.clouds:
            raise UsageError(f"pod.provider {provider} is not available in this release yet")
        return Backend(
            cloud=self.clouds[provider],
            open_shell=lambda status: FakeShell(self.host),
            open_sync=lambda status: FakeFileSync(self.host),
        )

    def ask(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        return self.answer

    def deps(self, **overrides: Any) -> PodCommandDeps:
        """The container's PodCommandDeps on this harness's fakes (`overrides` by name)."""
        values: dict[str, Any] = dict(
            backend_for=self.backend_for,
            clock=self.clock,
            home=str(self.home),
            environ={},
            random_hex=lambda: "abc123",
            out=self.lines.append,
            out_bytes=self.chunks.append,
            ask=self.ask,
        )
        return pod_command_deps_with(**{**values, **overrides})

    # --- scenery -------------------------------------------------------------------------------

    def pod(self, name: str, *, stopped: bool = True, gb: int = 20, cloud: str = "local") -> str:
        fake = self.clouds[cloud]
        handle = fake.create_pod(
            PodRequest(name=name, image="img:1", gpu_id="G", datacenter_id="D", volume_gb=gb)
        )
        if stopped:
            fake.stop_pod(handle.pod_id)
        return handle.pod_id

    def pointer(
        self,
        name: str,
        pod_id: str,
        *,
        provider: str | None = "local",
        prefix: str = "job",
        lifecycle: str | None = "stop",
        key: str = "pod_id",
    ) -> Path:
        """A state file as `run` writes it (with its run's manifest), or 0.8.4's (provider None)."""
        path = state_paths(str(self.home), {}).directory / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {key: pod_id, "gpu_id": "G", "image": "img:1"}
        if provider is not None:
            run_dir = self.root / "runs" / name / STAMP
            run_dir.mkdir(parents=True, exist_ok=True)
            data.update(provider=provider, run_id=f"{prefix}-{STAMP}", run_dir=str(run_dir))
            if lifecycle is not None:
                manifest = {"pod_id": pod_id, "lifecycle_action": lifecycle}
                (run_dir / "runpod_deploy_pull_manifest.json").write_text(json.dumps(manifest))
        path.write_text(json.dumps(data))
        return path

    def live_ids(self, cloud: str = "local") -> set[str]:
        return {pod.pod_id for pod in self.clouds[cloud].live_pods()}


@contextmanager
def container_overrides(harness: PodToolsHarness) -> Iterator[None]:
    """The real CLI (`main([...])`) on the harness's fakes."""
    from pegboard.app.runpod_deploy.container import current_container

    container = current_container()
    container.backend_for.override(providers.Object(harness.backend_for))
    container.clock.override(providers.Object(harness.clock))
    container.home.override(providers.Object(str(harness.home)))
    try:
        yield
    finally:
        container.backend_for.reset_override()
        container.clock.reset_override()
        container.home.reset_override()
