"""A `runpod-deploy run` harness on the fakes: a config on disk, FakeGpuCloud + FakeHost on one
FakeClock, and the container's RunDeps on them (helpers/runpod_container.py). Used by the use-case and fault-matrix tests."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pegboard.adapters.fakes import FakeClock, FakeFileSync, FakeGpuCloud, FakeHost, FakeShell
from pegboard.app.runpod_deploy.run_job import run_job
from pegboard.app.runpod_deploy.run_types import Backend, RunDeps, RunRequest, RunResult
from pegboard.domain.gpujob.records import MANIFEST_NAME, DeployMetadata

from .runpod_container import run_deps_with

BASE_CONFIG = textwrap.dedent(
    """\
    schema_version: 2
    name: fakejob
    state_file: "{config_dir}/state.json"
    pod:
      image: img:1
      datacenters: [DC-1, DC-2]
      gpu_order: [GPU-A, GPU-B]
    storage:
      mode: ephemeral
      volume_gb: 20
    budget:
      cost_cap_usd: 10
      assumed_hourly_rate_usd: 1.0
      max_runtime_minutes: 60
      ssh_ready_timeout_sec: 300
    setup:
      - command: mkdir -p /workspace/proj
    staging:
      - label: proj
        source: proj/
        destination: /workspace/proj
    run:
      script_path: /workspace/run.sh
      log_path: /workspace/run.log
      success_marker: ALL_DONE
      body: |
        python train.py
        echo ALL_DONE
    artifacts:
      - label: out
        remote_path: /workspace/out/
        local_path: "{run_dir}/out"
    lifecycle:
      on_success: delete
      on_failure: stop
    telemetry:
      enabled: false
    """
)


class RunHarness:
    def __init__(self, root: Path, *, config: dict[str, Any] | None = None) -> None:
        self.root = root
        self.clock = FakeClock()
        self.host = FakeHost(clock=self.clock)
        self.cloud = FakeGpuCloud(self.clock, host=self.host, cost_per_hour_usd=0.5)
        self.shell = FakeShell(self.host)
        self.sync = FakeFileSync(self.host)
        self.output: list[bytes] = []
        self.tool_output: list[bytes] = []
        self.lines: list[str] = []
        self.environ: dict[str, str] = {}
        self.shells_opened = 0
        (root / "proj").mkdir(parents=True, exist_ok=True)
        (root / "proj" / "train.py").write_text("print('training')\n")
        (root / "home").mkdir(exist_ok=True)
        data = yaml.safe_load(BASE_CONFIG)
        for key, value in (config or {}).items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        self.config_path = root / "job.yaml"
        self.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
        # A successful job by default: output, artifact, marker.
        self.host.on_command(r"^true$", exit_code=0)

    def open_shell(self, status: Any) -> FakeShell:
        self.shells_opened += 1
        self.shell = FakeShell(self.host)  # one connection per run, like SSH
        return self.shell

    def deps(self, **overrides: Any) -> RunDeps:
        """The container's RunDeps on this harness's fakes (`overrides` by provider name)."""
        values: dict[str, Any] = dict(
            backend_for=lambda provider: Backend(
                cloud=self.cloud, open_shell=self.open_shell, open_sync=lambda s: self.sync
            ),
            clock=self.clock,
            environ=self.environ,
            random_hex=lambda: "abc123",
            job_output=self.output.append,
            result_line=self.lines.append,
            home=str(self.root / "home"),
            tool_version="test",
            deploy_metadata=lambda root: DeployMetadata(local_git_sha="deadbeef"),
            read_local_file=lambda p: Path(p).read_bytes(),
            tool_output=self.tool_output.append,
        )
        values.update(overrides)
        return run_deps_with(**values)

    def run(self, **request: Any) -> RunResult:
        deps_overrides = request.pop("deps", {})
        return run_job(
            RunRequest(config_path=self.config_path, **request), self.deps(**deps_overrides)
        )

    # --- inspection ----------------------------------------------------------------------------
    def manifest(self, result: RunResult) -> dict[str, Any]:
        assert result.run_dir is not None
        return json.loads((Path(result.run_dir) / MANIFEST_NAME).read_text())

    def events(self, result: RunResult) -> list[dict[str, Any]]:
        assert result.run_dir is not None
        path = Path(result.run_dir) / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    def pointer(self) -> dict[str, Any] | None:
        if not self.state_file.exists():
            return None
        return json.loads(self.state_file.read_text())

    def assert_nothing_unaccounted(self, manifest: dict[str, Any]) -> None:
        """Every pod still alive is named by the state file and by the manifest's left_behind."""
        alive = [p for p in self.cloud.live_pods() if p.status in {"RUNNING", "EXITED", "STARTING"}]
        for pod in alive:
            pointer = self.pointer()
            assert pointer is not None and pointer["pod_id"] == pod.pod_id, (pod, pointer)
            assert manifest["left_behind"] and pod.pod_id in manifest["left_behind"]
            assert "--mode delete" in manifest["left_behind"]


def lag_the_listing(
    h: RunHarness, lag_sec: float, *, until: Callable[[], bool] = lambda: False
) -> None:
    """A new pod shows in the lookup by name only `lag_sec` after its create (h's fake clock),
    or at once from when `until()` is true."""
    real_create, real_find = h.cloud.create_pod, h.cloud.find_pods
    made_at: dict[str, float] = {}

    def create_pod(request: Any) -> Any:
        try:
            return real_create(request)
        finally:
            for pod_id in h.cloud.pods:
                made_at.setdefault(pod_id, h.clock.monotonic())

    def find_pods(*, name: str) -> list[Any]:
        now = h.clock.monotonic()
        return [p for p in real_find(name=name) if until() or now >= made_at[p.pod_id] + lag_sec]

    h.cloud.create_pod = create_pod  # type: ignore[method-assign]
    h.cloud.find_pods = find_pods  # type: ignore[method-assign]
