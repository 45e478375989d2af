"""The same property as test_runpod_query_values.py, one layer up: strings a user writes in a
config (`pod.image`, `pod.gpu_order`, `pod.datacenters`, `run_id_prefix`, `storage.volume_name`,
`storage.volume_mount`, `pod.ports`) or on the command line (`--gpu-id`, `--datacenter-id`),
fed quotes, braces, backslashes and newlines, through the `run` use case on the RunPod adapter
(REST v2) against the RunPod API sandbox. Every v2 request the sandbox receives is one RunPod's
document allows, and no GraphQL is sent; a value that cannot be
sent is refused in one line (a config error, or the run's failure reason) and never reaches it;
a pod that was made carries exactly the value, and no pod is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.runpod_container import run_deps_with
from helpers.runpod_openapi import validate_received_requests
from pegboard.adapters.fakes import FakeClock
from pegboard.adapters.runpod import RunPodGpuCloud
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.app.runpod_deploy.run_job import run_job
from pegboard.app.runpod_deploy.run_types import Backend, RunRequest
from pegboard.domain.errors import ConfigError, PegboardError
from pegboard.domain.gpujob.records import DeployMetadata
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

HOSTILE = list("\"{}\\\n\r\t $#:,()[]!@'") + list("aZ09-_./")
hostile_text = st.text(
    st.one_of(st.sampled_from(HOSTILE), st.characters(exclude_categories=["Cs"])),
    min_size=1,
    max_size=16,
)


def around(valid: str) -> st.SearchStrategy[str]:
    return st.one_of(
        hostile_text, st.builds(lambda a, b: a + valid + b, hostile_text, hostile_text)
    )


BASE: dict[str, Any] = {
    "schema_version": 2,
    "name": "prop",
    "pod": {
        "image": "img:1",
        "datacenters": ["EU-RO-1"],
        "gpu_order": ["NVIDIA RTX A4000"],
    },
    "storage": {"mode": "ephemeral", "volume_gb": 10},
    "budget": {"ssh_ready_timeout_sec": 5},
    "run": {
        "script_path": "/workspace/x.sh",
        "log_path": "/workspace/x.log",
        "success_marker": "DONE",
        "body": "echo DONE\n",
    },
    "telemetry": {"enabled": False},
    "lifecycle": {"on_success": "delete", "on_failure": "stop"},
}


def _never_opens(status: PodStatus) -> RemoteShell:
    raise AssertionError("the sandbox's pods here publish no SSH")


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunPodSandbox, Path]]:
    with RunPodSandbox() as sandbox:
        sandbox.faults.ssh_never_ready = True  # each made pod is then deleted by the run
        sandbox.faults.rate_limit_per_minute = sandbox.faults.rate_limit_per_hour = 10**7
        yield sandbox, tmp_path_factory.mktemp("prop")


def _run(sandbox: RunPodSandbox, root: Path, config: dict[str, Any], **flags: Any) -> str | None:
    """Run the config; the failure reason (None: succeeded) or the config error's text."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    path = root / "job.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    cloud = RunPodGpuCloud(environ=sandbox.environ(), home=home, sleep=lambda s: None, attempts=1)
    deps = run_deps_with(
        backend_for=lambda provider: Backend(
            cloud=cloud, open_shell=_never_opens, open_sync=_never_opens
        ),
        clock=FakeClock(),
        environ={},
        random_hex=lambda: "abc123",
        job_output=lambda chunk: None,
        result_line=lambda line: None,
        home=str(home),
        tool_version="test",
        deploy_metadata=lambda root: DeployMetadata(),
        read_local_file=lambda p: b"",
    )
    try:
        result = run_job(RunRequest(config_path=path, **flags), deps)
    except (ConfigError, PegboardError) as exc:
        return str(exc)
    return result.failure_reason


def _mark(sandbox: RunPodSandbox) -> int:
    assert sandbox.received == [], "no GraphQL, ever, without spot"
    return len(sandbox.received_v2)


def _check(sandbox: RunPodSandbox, before: int, reason: str | None) -> None:
    assert sandbox.received == [], "no GraphQL, ever, without spot"
    validate_received_requests(sandbox.received_v2[before:])
    live = [p for p in sandbox.pods() if p.status != "TERMINATED"]
    assert live == [], "every pod a run made is deleted (never ready)"
    if reason is not None:
        assert reason.strip(), "a refusal says why"


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    config = yaml.safe_load(yaml.safe_dump(BASE))
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


def test_the_base_config_reaches_create(wire: tuple[RunPodSandbox, Path]) -> None:
    """Sanity: unchanged, the run creates a pod (then deletes it: it never gets SSH)."""
    sandbox, root = wire
    before = _mark(sandbox)
    reason = _run(sandbox, root, BASE)
    _check(sandbox, before, reason)
    assert reason is not None and "not ready" in reason
    assert any(r.operation_id == "createPod" for r in sandbox.received_v2[before:])


CONFIG_STRINGS: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "pod.image": (("pod", "image"), lambda v: v, "img:1"),
    "pod.gpu_order": (("pod", "gpu_order"), lambda v: [v], "NVIDIA RTX A4000"),
    "pod.datacenters": (("pod", "datacenters"), lambda v: [v], "EU-RO-1"),
    "run_id_prefix": (("run_id_prefix",), lambda v: v, "prop"),
    "storage.volume_mount": (("storage", "volume_mount"), lambda v: "/" + v, "workspace"),
    "pod.ports": (("pod", "ports"), lambda v: ["22/tcp", v], "8888/http"),
}


@pytest.mark.parametrize("key", sorted(CONFIG_STRINGS))
@settings(max_examples=min(15, settings.default.max_examples))
@given(data=st.data())
def test_config_strings_reach_runpod_as_documented_or_not_at_all(
    wire: tuple[RunPodSandbox, Path], key: str, data: st.DataObject
) -> None:
    sandbox, root = wire
    path, shape, valid = CONFIG_STRINGS[key]
    value = data.draw(around(valid), label=key)
    before = _mark(sandbox)
    reason = _run(sandbox, root, _with(path, shape(value)))
    _check(sandbox, before, reason)


def test_a_volume_name_is_matched_here_never_sent(wire: tuple[RunPodSandbox, Path]) -> None:
    sandbox, root = wire
    config = _with(("storage",), {"mode": "network_volume", "volume_name": 'x" } { "\\\n'})
    before = _mark(sandbox)
    reason = _run(sandbox, root, config)
    _check(sandbox, before, reason)
    assert reason is not None and "network volume" in reason
    assert all(b'x"' not in r.body and 'x"' not in r.target for r in sandbox.received_v2[before:])


@settings(max_examples=min(20, settings.default.max_examples))
@given(gpu_id=around("NVIDIA RTX A4000"), datacenter_id=around("EU-RO-1"))
def test_gpu_and_datacenter_flags(
    wire: tuple[RunPodSandbox, Path], gpu_id: str, datacenter_id: str
) -> None:
    """--gpu-id with --datacenter-id skip the stock check: straight into the create."""
    sandbox, root = wire
    before = _mark(sandbox)
    reason = _run(sandbox, root, BASE, gpu_id=gpu_id, datacenter_id=datacenter_id)
    _check(sandbox, before, reason)
