"""JobSpec parsing: every key of schema_version 2 with its default, and the additions."""

from __future__ import annotations

import textwrap

import pytest

from helpers.runpod_configs import MINIMAL_YAML, spec_from, with_sections
from pegboard.domain.errors import ConfigError
from pegboard.domain.gpujob.spec import (
    DEFAULT_FAILURE_MARKERS,
    DEFAULT_STAGING_EXCLUDES,
    CloudType,
    LifecycleAction,
    StorageMode,
)

FULL_YAML = textwrap.dedent(
    """\
    schema_version: 2
    name: demo-{seed}
    run_id_prefix: demo
    state_file: ~/.state-{seed}.json
    setup_after_secrets: true
    local:
      project_root: ..
      required_paths: [pyproject.toml]
    variables:
      seed: "0"
      out: /workspace/out-{seed}
    pod:
      provider: local
      image: img:1
      datacenters: [EU-RO-1]
      gpu_order: [A4000, A5000]
      cloud_type: COMMUNITY
      ports: ["22/tcp", "8888/http"]
      container_disk_gb: 40
      gpu_count: 2
      spot: true
      min_vcpu_count: 8
      min_memory_gb: 32
      python_version: "3.13.5"
    storage:
      mode: network_volume
      volume_name: vol
      volume_mount: /vol
    ssh:
      key_path: ~/.ssh/other
    budget:
      cost_cap_usd: 5
      assumed_hourly_rate_usd: 2.5
      max_runtime_minutes: 60
      poll_interval_sec: 10
      ssh_ready_timeout_sec: 300
    remote_env:
      source_files: [/vol/.env]
      exports: {HF_HOME: /vol/hf}
    setup:
      - {command: "apt-get update", timeout_sec: 100, with_env: true}
    staging:
      - label: src
        source: "{project_root}/"
        destination: /vol/src/
        excludes: [data/]
        delete: false
        excludes_default: true
        excludes_extra: [tmp/]
    secrets:
      - {name: hf, destination: /vol/.hf, env: [HF_TOKEN], mode: "0400"}
      - {name: key, destination: "{volume_mount}/key", file: ~/key.json}
    preflight:
      - {command: "uv sync"}
    run:
      script_path: /vol/run.sh
      log_path: /vol/run.log
      success_marker: DONE
      body: echo DONE
      failure_markers: [Traceback]
    artifacts:
      - {label: out, remote_path: /vol/out/, local_path: out/, required: false, excludes: ["*.tmp"], delete: false}
    lifecycle:
      on_success: recycle
      on_failure: delete
    telemetry:
      enabled: false
      sample_interval_sec: 5
      capture_nvidia_smi: false
      capture_dmesg: false
      capture_pod_describe: false
      capture_remote_env: false
      capture_local_git: false
      capture_payload_lockfile: false
    """
)


def test_minimal_config_gets_the_0_8_4_defaults() -> None:
    spec = spec_from(MINIMAL_YAML)
    assert spec.schema_version == 2
    assert spec.run_id_prefix is None and spec.state_file is None
    assert spec.local.project_root == "." and spec.local.required_paths == ()
    pod = spec.pod
    assert pod.provider == "runpod"
    assert pod.cloud_type is CloudType.SECURE
    assert pod.ports == ("22/tcp",)
    assert (pod.container_disk_gb, pod.gpu_count, pod.spot) == (20, 1, False)
    assert pod.min_vcpu_count is None and pod.min_memory_gb is None and pod.python_version is None
    assert spec.storage.mode is StorageMode.EPHEMERAL and spec.storage.volume_mount == "/workspace"
    assert spec.section("ssh").key_path == "~/.ssh/id_ed25519"
    budget = spec.budget
    assert (budget.cost_cap_usd, budget.assumed_hourly_rate_usd) == (10.0, 1.65)
    assert (budget.max_runtime_minutes, budget.poll_interval_sec) == (None, 60)
    assert budget.ssh_ready_timeout_sec == 900
    assert budget.timeout_sec == int(10.0 / 1.65 * 3600)
    assert spec.remote_env.source_files == () and dict(spec.remote_env.exports) == {}
    assert spec.setup == spec.preflight == spec.staging == spec.secrets == spec.artifacts == ()
    assert spec.setup_after_secrets is False
    assert spec.run.failure_markers == DEFAULT_FAILURE_MARKERS
    assert spec.lifecycle.on_success is LifecycleAction.DELETE
    assert spec.lifecycle.on_failure is LifecycleAction.STOP
    assert spec.telemetry.enabled and spec.telemetry.sample_interval_sec == 30
    assert dict(spec.variables) == {}


def test_every_key_is_read() -> None:
    spec = spec_from(FULL_YAML)
    assert spec.name == "demo-{seed}" and spec.run_id_prefix == "demo"
    assert spec.state_file == "~/.state-{seed}.json" and spec.setup_after_secrets
    assert spec.local.required_paths == ("pyproject.toml",)
    assert dict(spec.variables) == {"seed": "0", "out": "/workspace/out-{seed}"}
    pod = spec.pod
    assert pod.provider == "local" and pod.cloud_type is CloudType.COMMUNITY
    assert pod.gpu_order == ("A4000", "A5000") and pod.ports == ("22/tcp", "8888/http")
    assert (pod.container_disk_gb, pod.gpu_count, pod.spot) == (40, 2, True)
    assert (pod.min_vcpu_count, pod.min_memory_gb, pod.python_version) == (8, 32, "3.13.5")
    assert spec.storage.volume_name == "vol" and spec.storage.volume_mount == "/vol"
    assert spec.section("ssh").key_path == "~/.ssh/other"
    assert spec.budget.cost_cap_usd == 5.0 and isinstance(spec.budget.cost_cap_usd, float)
    assert spec.budget.timeout_sec == 3600 and spec.budget.ssh_ready_timeout_sec == 300
    assert spec.remote_env.exports == {"HF_HOME": "/vol/hf"}
    assert spec.setup[0].with_env and spec.setup[0].timeout_sec == 100
    assert spec.preflight[0].timeout_sec == 600
    staging = spec.staging[0]
    assert staging.effective_excludes == (*DEFAULT_STAGING_EXCLUDES, "data/", "tmp/")
    assert staging.delete is False
    assert spec.secrets[0].env == ("HF_TOKEN",) and spec.secrets[0].mode == "0400"
    assert spec.secrets[1].file == "~/key.json" and spec.secrets[1].mode == "0600"
    assert spec.run.failure_markers == ("Traceback",)
    artifact = spec.artifacts[0]
    assert (artifact.required, artifact.delete, artifact.excludes) == (False, False, ("*.tmp",))
    assert spec.lifecycle.on_success is LifecycleAction.RECYCLE
    assert spec.telemetry.enabled is False and spec.telemetry.sample_interval_sec == 5


def test_seed_secret_spelling_is_accepted() -> None:
    spec = spec_from(
        with_sections(
            secrets=[
                {"name": "a", "destination": "/w/a.env", "source_env": ["HF_TOKEN", "WANDB"]},
                {"name": "b", "destination": "/w/b", "source_file": "secret.json"},
            ]
        )
    )
    assert spec.secrets[0].env == ("HF_TOKEN", "WANDB")
    assert spec.secrets[1].file == "secret.json"


def test_int_is_fine_for_float_but_bool_is_not_int() -> None:
    spec = spec_from(with_sections(budget={"cost_cap_usd": 3}))
    assert spec.budget.cost_cap_usd == 3.0
    with pytest.raises(
        ConfigError, match=r"budget.poll_interval_sec: must be an integer, got bool"
    ):
        spec_from(with_sections(budget={"poll_interval_sec": True}))


@pytest.mark.parametrize("cloud_type", ["SECURE", "COMMUNITY", "ALL"])
def test_every_cloud_type(cloud_type: str) -> None:
    pod = {"image": "i", "datacenters": ["d"], "gpu_order": ["g"], "cloud_type": cloud_type}
    assert spec_from(with_sections(pod=pod)).pod.cloud_type.value == cloud_type


@pytest.mark.parametrize("action", ["preserve", "stop", "delete", "recycle"])
def test_every_success_action(action: str) -> None:
    assert spec_from(with_sections(lifecycle={"on_success": action})).lifecycle.on_success == action


@pytest.mark.parametrize("action", ["preserve", "stop", "delete"])
def test_every_failure_action(action: str) -> None:
    assert spec_from(with_sections(lifecycle={"on_failure": action})).lifecycle.on_failure == action


@pytest.mark.parametrize("port", ["1/tcp", "22/tcp", "8888/http", "65535/http"])
def test_valid_ports(port: str) -> None:
    pod = {"image": "i", "datacenters": ["d"], "gpu_order": ["g"], "ports": [port]}
    assert spec_from(with_sections(pod=pod)).pod.ports == (port,)


@pytest.mark.parametrize("version", ["3.11", "3.13.5"])
def test_python_versions(version: str) -> None:
    pod = {"image": "i", "datacenters": ["d"], "gpu_order": ["g"], "python_version": version}
    assert spec_from(with_sections(pod=pod)).pod.python_version == version


@pytest.mark.parametrize("mode", ["600", "0600", "0755"])
def test_secret_modes(mode: str) -> None:
    secret = {"name": "a", "destination": "/x", "env": ["A"], "mode": mode}
    assert spec_from(with_sections(secrets=[secret])).secrets[0].mode == mode


def test_budget_overrides_keep_everything_else() -> None:
    spec = spec_from(MINIMAL_YAML)
    changed = spec.with_budget_overrides(cost_cap_usd=2.0, max_runtime_minutes=30)
    assert (changed.budget.cost_cap_usd, changed.budget.max_runtime_minutes) == (2.0, 30)
    assert changed.pod == spec.pod and changed.budget.poll_interval_sec == 60
