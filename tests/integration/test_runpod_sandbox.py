"""The RunPod API sandbox itself: HTTP and GraphQL behaviour, the SDK's own functions, pods
with a real sshd and their own /workspace, and the foreground `serve` entry point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.components import require_executable
from helpers.runpod_sandbox import require_runpod_sdk
from helpers.sshd import SshClientKey
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.adapters.sandboxes.runpod.pod_ssh import can_namespace

A4000 = "NVIDIA RTX A4000"


def post(sandbox: RunPodSandbox, body: bytes, key: str | None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"{sandbox.url}/graphql", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def query(sandbox: RunPodSandbox, text: str, key: str | None = "") -> tuple[int, Any]:
    return post(
        sandbox, json.dumps({"query": text}).encode(), sandbox.api_key if key == "" else key
    )


@pytest.fixture
def sandbox() -> Iterator[RunPodSandbox]:
    with RunPodSandbox() as server:
        yield server


def test_the_bearer_key_is_required(sandbox: RunPodSandbox) -> None:
    assert query(sandbox, "query { myself { id } }", key=None)[0] == 401
    assert query(sandbox, "query { myself { id } }", key="wrong")[0] == 401
    assert query(sandbox, "query { myself { id } }") == (
        200,
        {"data": {"myself": {"id": "user-sandbox"}}},
    )
    assert sandbox.received[-1].operation is not None


def test_malformed_queries_are_400_and_recorded_as_such(sandbox: RunPodSandbox) -> None:
    status, body = query(sandbox, 'query { pod(input: {podId: "a"b"}) { id } }')
    assert status == 400 and body["errors"][0]["message"].startswith("Syntax Error")
    assert sandbox.received[-1].syntax_error


def test_answers_carry_exactly_the_selected_fields_and_unknown_ones_are_errors(
    sandbox: RunPodSandbox,
) -> None:
    status, body = query(
        sandbox, 'query { gpuTypes(input: {id: "NVIDIA RTX A4000"}) { id securePrice } }'
    )
    assert body == {"data": {"gpuTypes": [{"id": A4000, "securePrice": 0.25}]}}
    status, body = query(sandbox, "query { gpuTypes { id priceOfTea } }")
    assert status == 200 and 'Cannot query field "priceOfTea"' in body["errors"][0]["message"]
    status, body = query(sandbox, "mutation { podDeleteEverything(input: {all: true}) }")
    assert "podDeleteEverything" in body["errors"][0]["message"]


def test_the_sdk_functions_work_unchanged(
    sandbox: RunPodSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_runpod_sdk()
    import runpod

    monkeypatch.setenv("RUNPOD_API_BASE_URL", sandbox.url)
    monkeypatch.setattr(runpod, "api_key", sandbox.api_key)
    assert {"id": A4000, "displayName": "RTX A4000", "memoryInGb": 16} in runpod.get_gpus()
    assert runpod.get_gpu(A4000)["lowestPrice"]["uninterruptablePrice"] == 0.25
    created = runpod.create_pod(
        "sdk-pod",
        "img:1",
        A4000,
        cloud_type="SECURE",
        data_center_id="EU-RO-1",
        ports="22/tcp",
        volume_in_gb=10,
        env={"A": "1"},
    )
    pod_id = created["id"]
    pod = runpod.get_pod(pod_id)
    assert pod["name"] == "sdk-pod" and pod["env"] == ["A=1"]
    assert pod["runtime"]["ports"][0]["privatePort"] == 22
    assert [p["id"] for p in runpod.get_pods()] == [pod_id]
    assert runpod.stop_pod(pod_id) == {"id": pod_id, "desiredStatus": "EXITED"}
    assert runpod.resume_pod(pod_id, 1)["desiredStatus"] == "RUNNING"
    assert runpod.get_user()["networkVolumes"][0]["name"] == "pid-workspace-100gb"
    assert runpod.terminate_pod(pod_id) is None
    assert runpod.get_pod(pod_id) is None
    with pytest.raises(runpod.error.QueryError, match="Syntax Error"):
        runpod.create_pod('quote"d', "img:1", A4000)  # the SDK interpolates unescaped


# --- pods with a real sshd -----------------------------------------------------------------------


def ssh(port: int, key: SshClientKey, command: str) -> subprocess.CompletedProcess[str]:
    argv = [
        require_executable("ssh", install_hint="apt-get install openssh-client"),
        "-F", "/dev/null", "-p", str(port), "-i", str(key.private_path),
        "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
        "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
        "root@127.0.0.1", command,
    ]  # fmt: skip
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )


def create(sandbox: RunPodSandbox, name: str, **extra: str) -> tuple[str, int]:
    fields = ", ".join(f'{k}: "{v}"' for k, v in extra.items())
    text = (
        f'mutation {{ podFindAndDeployOnDemand(input: {{ name: "{name}", imageName: "img", '
        f'cloudType: SECURE, gpuTypeId: "{A4000}", dataCenterId: "EU-RO-1", '
        f'volumeMountPath: "/workspace", ports: "22/tcp"{", " + fields if fields else ""} }}) {{ id }} }}'
    )
    status, body = query(sandbox, text)
    assert status == 200, body
    pod_id = body["data"]["podFindAndDeployOnDemand"]["id"]
    _, body = query(
        sandbox,
        f'query {{ pod(input: {{podId: "{pod_id}"}}) {{ runtime {{ ports {{ publicPort }} }} }} }}',
    )
    return pod_id, body["data"]["pod"]["runtime"]["ports"][0]["publicPort"]


@pytest.fixture
def ssh_sandbox(ssh_client_key: SshClientKey) -> Iterator[RunPodSandbox]:
    with RunPodSandbox(ssh=True, public_keys=[ssh_client_key.public_line]) as server:
        yield server


def require_root_namespaces() -> None:
    if not can_namespace():
        reason = "per-pod /workspace needs root and unshare (a mount namespace per session)"
        if os.environ.get("CI", "").lower() == "true" and os.geteuid() == 0:
            pytest.fail(f"{reason}: install util-linux", pytrace=False)
        pytest.skip(reason)


def test_each_pod_sees_its_own_workspace_at_the_absolute_path(
    ssh_sandbox: RunPodSandbox, ssh_client_key: SshClientKey
) -> None:
    require_root_namespaces()
    first, first_port = create(ssh_sandbox, "first")
    second, second_port = create(ssh_sandbox, "second")
    for port, word in ((first_port, "one"), (second_port, "two")):
        done = ssh(port, ssh_client_key, f"echo {word} > /workspace/who && cat /workspace/who")
        assert (done.returncode, done.stdout) == (0, f"{word}\n"), done.stderr
    assert (ssh_sandbox.volume_dir(first) / "who").read_text() == "one\n"
    assert (ssh_sandbox.volume_dir(second) / "who").read_text() == "two\n"
    assert not Path("/workspace/who").exists()  # nothing leaks out of the session


def test_a_network_volume_is_shared_by_the_pods_that_attach_it(
    ssh_sandbox: RunPodSandbox, ssh_client_key: SshClientKey
) -> None:
    require_root_namespaces()
    _, writer = create(ssh_sandbox, "writer", networkVolumeId="nv-pidws100")
    _, reader = create(ssh_sandbox, "reader", networkVolumeId="nv-pidws100")
    assert ssh(writer, ssh_client_key, "echo kept > /workspace/cache").returncode == 0
    assert ssh(reader, ssh_client_key, "cat /workspace/cache").stdout == "kept\n"


def test_stop_kills_what_the_pod_left_running_and_resume_serves_again(
    ssh_sandbox: RunPodSandbox, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    pod_id, port = create(ssh_sandbox, "stopper")
    pidfile = tmp_path / "job.pid"
    started = ssh(
        port, ssh_client_key,
        f"setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    pid = int(pidfile.read_text())
    assert _alive(pid)  # the detached job outlived its session
    assert (
        query(ssh_sandbox, f'mutation {{ podStop(input: {{podId: "{pod_id}"}}) {{ id }} }}')[0]
        == 200
    )
    assert _gone_soon(pid)
    assert ssh(port, ssh_client_key, "true").returncode == 255  # no sshd while stopped
    query(
        ssh_sandbox, f'mutation {{ podResume(input: {{podId: "{pod_id}", gpuCount: 1}}) {{ id }} }}'
    )
    _, body = query(
        ssh_sandbox,
        f'query {{ pod(input: {{podId: "{pod_id}"}}) {{ runtime {{ ports {{ publicPort }} }} }} }}',
    )
    new_port = body["data"]["pod"]["runtime"]["ports"][0]["publicPort"]
    assert ssh(new_port, ssh_client_key, "echo back").stdout == "back\n"


def test_a_pod_trusts_the_public_key_its_create_passed(
    tmp_path: Path, ssh_client_key: SshClientKey
) -> None:
    with RunPodSandbox(ssh=True, public_keys=[]) as server:
        _, untrusting = create(server, "nokey")
        assert ssh(untrusting, ssh_client_key, "true").returncode == 255
        key_env = f'env: [{{ key: "PUBLIC_KEY", value: "{ssh_client_key.public_line}" }}]'
        text = (
            f'mutation {{ podFindAndDeployOnDemand(input: {{ name: "withkey", imageName: "img", '
            f'cloudType: SECURE, gpuTypeId: "{A4000}", dataCenterId: "EU-RO-1", {key_env} }}) {{ id }} }}'
        )
        pod_id = query(server, text)[1]["data"]["podFindAndDeployOnDemand"]["id"]
        _, body = query(
            server,
            f'query {{ pod(input: {{podId: "{pod_id}"}}) {{ runtime {{ ports {{ publicPort }} }} }} }}',
        )
        port = body["data"]["pod"]["runtime"]["ports"][0]["publicPort"]
        assert ssh(port, ssh_client_key, "echo in").stdout == "in\n"


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# --- serve ------------------------------------------------------------------------------------


def test_serve_prints_the_exports_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pegboard.adapters.sandboxes.runpod", "--no-ssh", "--api-key", "k1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        second = proc.stdout.readline().strip()
        assert first.startswith("export RUNPOD_API_BASE_URL=http://127.0.0.1:")
        assert second == "export RUNPOD_API_KEY=k1"
        url = first.split("=", 1)[1]
        req = urllib.request.Request(
            f"{url}/graphql",
            data=json.dumps({"query": "query { myself { id } }"}).encode(),
            headers={"Authorization": "Bearer k1", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as answer:
            assert json.loads(answer.read()) == {"data": {"myself": {"id": "user-sandbox"}}}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
