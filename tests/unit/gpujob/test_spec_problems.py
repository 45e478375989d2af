"""Every range, enum and type rule, and all problems reported at once with file:line:path."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from helpers.runpod_configs import spec_from, with_sections
from pegboard.adapters.providers import discover_registry
from pegboard.domain.errors import ConfigError, ConfigProblem


def problems(text: str) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as caught:
        spec_from(text)
    return list(caught.value.problems)


def messages(text: str) -> list[str]:
    return [f"{p.path}: {p.message}" for p in problems(text)]


POD = {"image": "i", "datacenters": ["d"], "gpu_order": ["g"]}


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        ({"schema_version": 1}, "schema_version: must be 2, got 1"),
        ({"schema_version": "2"}, "schema_version: must be an integer, got str"),
        ({"name": ""}, "name: must be non-empty"),
        ({"name": None}, "name: required key missing"),
        ({"run_id_prefix": 5}, "run_id_prefix: must be a string, got int"),
        ({"pod": {**POD, "image": ""}}, "pod.image: must be non-empty"),
        ({"pod": {**POD, "datacenters": "EU-RO-1"}}, "pod.datacenters: must be a list, got str"),
        ({"pod": {**POD, "gpu_order": [""]}}, "pod.gpu_order[0]: must be non-empty"),
        ({"pod": {**POD, "provider": "aws"}}, "pod.provider: must be one of runpod, "),
        (
            {"pod": {**POD, "cloud_type": "secure"}},
            "pod.cloud_type: must be one of SECURE, COMMUNITY, ALL",
        ),
        ({"pod": {**POD, "ports": ["22"]}}, "pod.ports[0]: must be '<1-65535>/<tcp|http>'"),
        ({"pod": {**POD, "ports": ["0/tcp"]}}, "pod.ports[0]: must be '<1-65535>/<tcp|http>'"),
        ({"pod": {**POD, "ports": ["65536/tcp"]}}, "pod.ports[0]: must be '<1-65535>/<tcp|http>'"),
        ({"pod": {**POD, "ports": ["22/udp"]}}, "pod.ports[0]: must be '<1-65535>/<tcp|http>'"),
        ({"pod": {**POD, "container_disk_gb": 0}}, "pod.container_disk_gb: must be > 0"),
        ({"pod": {**POD, "gpu_count": -1}}, "pod.gpu_count: must be > 0"),
        ({"pod": {**POD, "gpu_count": True}}, "pod.gpu_count: must be an integer, got bool"),
        ({"pod": {**POD, "spot": "yes"}}, "pod.spot: must be true or false, got str"),
        ({"pod": {**POD, "min_vcpu_count": 0}}, "pod.min_vcpu_count: must be > 0"),
        ({"pod": {**POD, "min_memory_gb": 0}}, "pod.min_memory_gb: must be > 0"),
        (
            {"pod": {**POD, "python_version": 3.13}},
            "pod.python_version: must be a string, got float",
        ),
        ({"pod": {**POD, "python_version": "3.13rc1"}}, "pod.python_version: must look like"),
        ({"storage": {"mode": "disk"}}, "storage.mode: must be one of network_volume, ephemeral"),
        ({"storage": {"mode": "ephemeral"}}, "storage.volume_gb: required (> 0) for ephemeral"),
        ({"storage": {"mode": "ephemeral", "volume_gb": 0}}, "storage.volume_gb: must be > 0"),
        (
            {"storage": {"mode": "network_volume"}},
            "storage.volume_name: required for network_volume",
        ),
        (
            {"storage": {"mode": "ephemeral", "volume_gb": 5, "volume_mount": "ws"}},
            "storage.volume_mount: must be an absolute path",
        ),
        ({"ssh": {"key_path": ["a"]}}, "ssh.key_path: must be a string, got list"),
        ({"budget": {"cost_cap_usd": 0}}, "budget.cost_cap_usd: must be > 0"),
        ({"budget": {"cost_cap_usd": "5"}}, "budget.cost_cap_usd: must be a number, got str"),
        (
            {"budget": {"assumed_hourly_rate_usd": -1}},
            "budget.assumed_hourly_rate_usd: must be > 0",
        ),
        ({"budget": {"max_runtime_minutes": 0}}, "budget.max_runtime_minutes: must be > 0"),
        (
            {"budget": {"max_runtime_minutes": 1.5}},
            "budget.max_runtime_minutes: must be an integer, got float",
        ),
        ({"budget": {"poll_interval_sec": 0}}, "budget.poll_interval_sec: must be > 0"),
        ({"budget": {"ssh_ready_timeout_sec": 0}}, "budget.ssh_ready_timeout_sec: must be > 0"),
        (
            {"remote_env": {"exports": {"A B": "x"}}},
            "remote_env.exports.A B: must be an identifier",
        ),
        ({"remote_env": {"exports": {"A": 1}}}, "remote_env.exports.A: must be a string, got int"),
        (
            {"remote_env": {"source_files": "/x"}},
            "remote_env.source_files: must be a list, got str",
        ),
        ({"setup": [{"command": " "}]}, "setup[0].command: must not be blank"),
        ({"setup": [{"command": "x", "timeout_sec": 0}]}, "setup[0].timeout_sec: must be > 0"),
        (
            {"preflight": [{"command": "x", "with_env": 1}]},
            "preflight[0].with_env: must be true or false, got int",
        ),
        ({"setup": {"command": "x"}}, "setup: must be a list, got dict"),
        (
            {"staging": [{"label": "", "source": "a", "destination": "b"}]},
            "staging[0].label: must be non-empty",
        ),
        (
            {"staging": [{"label": "a", "source": "a"}]},
            "staging[0].destination: required key missing",
        ),
        (
            {"secrets": [{"name": "a", "destination": "rel", "env": ["A"]}]},
            "secrets[0].destination: must be an absolute path",
        ),
        ({"secrets": [{"name": "a", "destination": "/x"}]}, "secrets[0]: set exactly one of"),
        (
            {"secrets": [{"name": "a", "destination": "/x", "env": ["A"], "file": "f"}]},
            "secrets[0]: set exactly one of",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "env": ["A-B"]}]},
            "secrets[0].env[0]: must be an identifier",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "env": ["A"], "mode": "0800"}]},
            "secrets[0].mode: must be 3 or 4 octal digits",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "env": ["A"], "mode": 600}]},
            "secrets[0].mode: must be a string, got int",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "env": ["A"], "source_env": ["B"]}]},
            "secrets[0]: set either 'env' or 'source_env', not both",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "file": "f", "var_name": "A"}]},
            "secrets[0].var_name: names the key of one environment variable (source_env: VAR); "
            "got a file secret",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "env": ["A", "B"], "var_name": "C"}]},
            "secrets[0].var_name: names the key of one environment variable (source_env: VAR); "
            "got 2 variables",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "source_env": "A", "var_name": "1X"}]},
            "secrets[0].var_name: must be an identifier",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "source_env": "NOT-AN-ID"}]},
            "secrets[0].env[0]: must be an identifier",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "source_env": "A", "env": ["A"]}]},
            "secrets[0]: set either 'env' or 'source_env', not both",
        ),
        (
            {"secrets": [{"name": "a", "destination": "x", "source_env": "A"}]},
            "secrets[0].destination: must be an absolute path",
        ),
        (
            {"secrets": [{"name": "a", "destination": "/x", "source_env": "A", "mode": 600}]},
            "secrets[0].mode: must be a string, got int",
        ),
        ({"pod": {**POD, "gpu_order": []}}, "pod.gpu_order: must list at least one GPU type"),
        ({"pod": {**POD, "datacenters": []}}, "pod.datacenters: must list at least one datacenter"),
        (
            {
                "run": {
                    "script_path": "run.sh",
                    "log_path": "/l",
                    "success_marker": "x",
                    "body": "x",
                }
            },
            "run.script_path: must be an absolute path",
        ),
        (
            {"run": {"script_path": "/s", "log_path": "l", "success_marker": "x", "body": "x"}},
            "run.log_path: must be an absolute path",
        ),
        (
            {"run": {"script_path": "/s", "log_path": "/l", "success_marker": "", "body": "x"}},
            "run.success_marker: must be non-empty",
        ),
        (
            {"run": {"script_path": "/s", "log_path": "/l", "success_marker": "x", "body": "\n"}},
            "run.body: must not be blank",
        ),
        (
            {
                "run": {
                    "script_path": "/s",
                    "log_path": "/l",
                    "success_marker": "x",
                    "body": "x",
                    "failure_markers": "Killed",
                }
            },
            "run.failure_markers: must be a list, got str",
        ),
        ({"run": None}, "run: required key missing"),
        (
            {"artifacts": [{"label": "a", "remote_path": "/r", "local_path": ""}]},
            "artifacts[0].local_path: must be non-empty",
        ),
        (
            {
                "artifacts": [
                    {"label": "a", "remote_path": "/r", "local_path": "l", "required": "yes"}
                ]
            },
            "artifacts[0].required: must be true or false",
        ),
        (
            {"lifecycle": {"on_failure": "recycle"}},
            "lifecycle.on_failure: recycle is only allowed for on_success",
        ),
        (
            {"lifecycle": {"on_success": "terminate"}},
            "lifecycle.on_success: must be one of preserve, stop, delete, recycle",
        ),
        ({"telemetry": {"sample_interval_sec": 4}}, "telemetry.sample_interval_sec: must be >= 5"),
        ({"telemetry": {"enabled": "no"}}, "telemetry.enabled: must be true or false"),
        ({"variables": {"seed": 1}}, "variables.seed: must be a string, got int"),
        ({"variables": {"my-var": "x"}}, "variables.my-var: must be an identifier"),
        ({"variables": {"run_dir": "x"}}, "variables.run_dir: 'run_dir' is a built-in variable"),
        ({"variables": ["a"]}, "variables: must be a mapping, got list"),
        ({"setup_after_secrets": "yes"}, "setup_after_secrets: must be true or false"),
        ({"pod": {**POD, "gpu": "x"}}, "pod.gpu: unknown key 'gpu'; expected one of:"),
        ({"extra": 1}, "extra: unknown key 'extra'"),
        ({"local": "."}, "local: must be a mapping, got str"),
    ],
)
def test_rejected(sections: dict[str, Any], expected: str) -> None:
    found = messages(with_sections(**sections))
    assert any(m.startswith(expected) for m in found), found


def test_network_volume_with_several_datacenters_is_accepted() -> None:
    # 0.8.4 accepted it; the pod goes to the volume's datacenter (looked up when provisioning).
    spec = spec_from(
        with_sections(
            pod={**POD, "datacenters": ["EU-RO-1", "US-CA-2"]},
            storage={"mode": "network_volume", "volume_name": "v"},
        )
    )
    assert spec.pod.datacenters == ("EU-RO-1", "US-CA-2")


def test_empty_gpu_order_and_datacenters_are_both_reported() -> None:
    found = messages(with_sections(pod={**POD, "gpu_order": [], "datacenters": []}))
    assert found == [
        "pod.datacenters: must list at least one datacenter; there is nothing to try",
        "pod.gpu_order: must list at least one GPU type; there is nothing to try",
    ]


def test_legacy_stop_block_says_what_to_use() -> None:
    found = messages(with_sections(stop={"on_success": True, "on_failure": True}))
    assert len(found) == 1
    assert "removed in runpod-deploy 0.8.3" in found[0] and "lifecycle:" in found[0]


# The job's own top-level keys, and each registered provider's section (ssh, kubernetes, ...).
TOP_LEVEL_KEYS = sorted(
    {
        "artifacts",
        "budget",
        "lifecycle",
        "local",
        "name",
        "pod",
        "preflight",
        "remote_env",
        "run",
        "run_id_prefix",
        "schema_version",
        "secrets",
        "setup",
        "setup_after_secrets",
        "staging",
        "state_file",
        "storage",
        "telemetry",
        "variables",
    }
    | set(discover_registry().sections)
)


def test_all_problems_at_once_with_file_line_and_path() -> None:
    text = textwrap.dedent(
        """\
        schema_version: 2
        name: x
        pod:
          image: i
          datacenters: [EU-RO-1]
          gpu_order: [A4000, 7]
          cloud_type: CHEAP
          ports: ["22/tcp", "80/udp"]
        storage:
          mode: ephemeral
          volume_gb: 10
        budget:
          cost_cap_usd: -1
        run:
          script_path: /s.sh
          log_path: /s.log
          success_marker: DONE
          body: echo
        lifecycle:
          on_failure: recycle
        tyop: 1
        """
    )
    found = [str(p) for p in problems(text)]
    assert found == [
        "job.yaml:6: pod.gpu_order[1]: must be a string, got int",
        "job.yaml:7: pod.cloud_type: must be one of SECURE, COMMUNITY, ALL, got 'CHEAP'",
        "job.yaml:8: pod.ports[1]: must be '<1-65535>/<tcp|http>', got '80/udp'",
        "job.yaml:13: budget.cost_cap_usd: must be > 0, got -1",
        "job.yaml:20: lifecycle.on_failure: recycle is only allowed for on_success",
        f"job.yaml:21: tyop: unknown key 'tyop'; expected one of: {', '.join(TOP_LEVEL_KEYS)}",
    ]


def test_missing_required_sections_are_all_listed() -> None:
    found = messages("schema_version: 2\n")
    assert found == [
        "name: required key missing",
        "pod: required key missing",
        "storage: required key missing",
        "run: required key missing",
    ]
