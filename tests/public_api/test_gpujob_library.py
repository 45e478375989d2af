"""runpod-deploy's config library from a user's code: load, validate and plan without I/O."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.domain.errors import ConfigError
from pegboard.gpujob import load_config, plan, read_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "local" / "hello.yaml"

CONFIG = """\
schema_version: 2
name: train-{size}
variables: {size: small}
pod: {image: "img:1", datacenters: [EU-RO-1, US-TX-3], gpu_order: [A4000, A5000]}
storage: {mode: ephemeral, volume_gb: 20}
budget: {cost_cap_usd: 5, assumed_hourly_rate_usd: 0.5, max_runtime_minutes: 60}
setup: [{command: "pip install -r {volume_mount}/req.txt"}]
run: {script_path: /workspace/run.sh, log_path: /workspace/run.log, success_marker: DONE, body: "python train.py --size {size}"}
artifacts: [{label: out, remote_path: /workspace/out/, local_path: "{run_dir}/out"}]
"""


def test_a_string_renders_with_variables_and_plans_offline() -> None:
    config = load_config(CONFIG, config_path="/projects/ml/job.yaml", variables={"size": "big"})
    assert config.job.job_name == "train-big"
    assert config.job.run_dir.startswith("/projects/ml/artifacts/runpod/")
    steps = plan(config)
    assert (steps.pod.gpu_id, steps.pod.datacenter_id) == ("A4000", "EU-RO-1")
    assert steps.setup == ("pip install -r /workspace/req.txt",)
    assert steps.artifacts[0].local_path == config.job.run_dir + "/out"
    assert steps.budget.timeout_sec == 3600
    assert plan(config, gpu_id="A5000", datacenter_id="US-TX-3").pod.gpu_id == "A5000"


def test_a_mapping_loads_like_its_yaml() -> None:
    import yaml

    data = yaml.safe_load(CONFIG)
    assert load_config(data).job.job_name == load_config(CONFIG).job.job_name


def test_every_problem_is_named_with_its_key_and_line() -> None:
    broken = CONFIG.replace("volume_gb: 20", "volume_gb: -1").replace("5, assumed", "-5, assumed")
    with pytest.raises(ConfigError) as caught:
        load_config(broken, config_path="job.yaml")
    paths = {problem.path for problem in caught.value.problems}
    assert {"storage.volume_gb", "budget.cost_cap_usd"} <= paths
    assert all(problem.line == 5 or problem.line == 6 for problem in caught.value.problems)


def test_an_unknown_template_variable_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nosuch"):
        load_config(CONFIG.replace("--size {size}", "--size {nosuch}"))


def test_read_config_reads_a_file() -> None:
    config = read_config(EXAMPLE, home="/home/me", variables={"greeting": "hi"})
    assert config.job.config_path == str(EXAMPLE)
    assert config.job.state_file.startswith("/home/me/.local/state/runpod-deploy/")
    with pytest.raises(ConfigError, match="no such file"):
        read_config(EXAMPLE.with_name("missing.yaml"))
