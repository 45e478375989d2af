"""pods/exec against the sandbox with real clients only: kubectl (client-go's WebSocket executor,
v5.channel.k8s.io, falling back to SPDY when the upgrade fails), `kubectl cp` (tar over exec),
and the official Python client's `kubernetes.stream` (v5, or v4 when it asks for v4)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.stream import stream
from kubernetes.stream.ws_client import WSClient

from helpers.components import require_executable
from helpers.kubectl import Kubectl
from helpers.kubernetes_sandbox import pod_manifest, wait_phase, wait_until
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        running.add_user("exec-ok", "get:pods;get,create:pods/exec")
        running.add_user("exec-get-only", "get:pods;get:pods/exec")
        yield running


@pytest.fixture(scope="module")
def kubectl(sandbox: KubernetesSandbox, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    path = require_executable("kubectl", path="/usr/bin/kubectl", install_hint="kubectl >= 1.31")
    return Kubectl(path, sandbox, tmp_path_factory.mktemp("kubectl-home"))


@pytest.fixture(scope="module")
def core(sandbox: KubernetesSandbox) -> kubernetes.client.CoreV1Api:
    api = kubernetes.config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))
    return kubernetes.client.CoreV1Api(api)


def _running_pod(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api, name: str, **container: Any
) -> None:
    core.create_namespaced_pod("default", pod_manifest(name, ["sleep", "600"], **container))
    wait_phase(sandbox, name, "Running")


@pytest.fixture(scope="module")
def pod(sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api) -> str:
    _running_pod(sandbox, core, "exec-target", env=[{"name": "GREETING", "value": "from the spec"}])
    return "exec-target"


def _run_bytes(
    kubectl: Kubectl, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [kubectl.path, *args], input=stdin, capture_output=True, env=kubectl.env, timeout=60
    )


def test_kubectl_exec_passes_stdout_stderr_and_the_exit_code(kubectl: Kubectl, pod: str) -> None:
    done = kubectl("exec", pod, "--", "sh", "-c", "echo out; echo err >&2; exit 3", ok=False)
    assert done.returncode == 3
    assert done.stdout == "out\n"
    assert done.stderr == "err\ncommand terminated with exit code 3\n"
    assert kubectl("exec", pod, "--", "true").stdout == ""
    assert kubectl("exec", pod, "--", "sh", "-c", "kill -9 $$", ok=False).returncode == 137


def test_kubectl_exec_stdin_reaches_the_command_and_its_eof_too(kubectl: Kubectl, pod: str) -> None:
    # cat ends only when stdin closes: v5's close signal on channel 255 carries that EOF.
    done = kubectl(
        "exec", "-i", pod, "--", "sh", "-c", "cat; echo done", stdin="line one\nline two\n"
    )
    assert done.stdout == "line one\nline two\ndone\n"
    big = os.urandom(3 << 20)
    counted = _run_bytes(kubectl, "exec", "-i", pod, "--", "sha256sum", stdin=big)
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.split()[0].decode() == hashlib.sha256(big).hexdigest()


def test_kubectl_exec_streams_large_output_whole(kubectl: Kubectl, pod: str) -> None:
    done = _run_bytes(
        kubectl, "exec", pod, "--", "sh", "-c", "head -c 6000000 /dev/urandom | od -An -tx1 -v"
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) == 6000000 // 16 * 49  # od: 16 bytes a line, 49 characters
    assert len(set(done.stdout.splitlines()[-1])) > 3


def test_exec_runs_in_the_containers_environment(
    kubectl: Kubectl, pod: str, sandbox: KubernetesSandbox
) -> None:
    script = 'echo "$GREETING"; echo "$HOSTNAME"; pwd; echo "$HOME"'
    greeting, hostname, cwd, home = kubectl(
        "exec", pod, "--", "sh", "-c", script
    ).stdout.splitlines()
    assert (greeting, hostname) == ("from the spec", pod)
    assert cwd == home  # the container's own working directory (the pod's scratch: no workingDir)


def test_exec_refusals_are_worded_as_a_cluster_words_them(
    kubectl: Kubectl, pod: str, sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    missing = kubectl("exec", "no-such-pod", "--", "true", ok=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): pods "no-such-pod" not found'
    wrong = kubectl("exec", pod, "-c", "sidecar", "--", "true", ok=False)
    assert (
        wrong.stderr.strip()
        == "Error from server (BadRequest): container sidecar is not valid for pod exec-target"
    )
    absent = kubectl("exec", pod, "--", "no-such-command", ok=False)
    assert absent.returncode == 1
    assert absent.stderr.startswith(
        "error: Internal error occurred: Internal error occurred: error executing command in container:"
    )
    assert 'exec: "no-such-command": executable file not found in $PATH' in absent.stderr
    core.create_namespaced_pod("default", pod_manifest("exec-finished", ["true"]))
    wait_phase(sandbox, "exec-finished", "Succeeded")
    finished = kubectl("exec", "exec-finished", "--", "true", ok=False)
    assert (
        "cannot exec into a container in a completed pod; current phase is Succeeded"
        in finished.stderr
    )


def test_exec_needs_create_on_pods_exec_even_over_a_websocket_get(
    kubectl: Kubectl, pod: str, sandbox: KubernetesSandbox
) -> None:
    allowed = kubectl("--context", sandbox.user_context("exec-ok"), "exec", pod, "--", "echo", "hi")
    assert allowed.stdout == "hi\n"
    refused = kubectl(
        "--context", sandbox.user_context("exec-get-only"), "exec", pod, "--", "true", ok=False
    )
    assert refused.returncode == 1
    assert (
        'pods "exec-target" is forbidden: User "exec-get-only" cannot create resource "pods/exec" '
        'in API group "" in the namespace "default"'
    ) in refused.stderr


def test_kubectl_cp_copies_files_and_directories_both_ways(
    kubectl: Kubectl, pod: str, tmp_path: Path
) -> None:
    require_executable("tar", install_hint="kubectl cp runs tar in the container")
    source = tmp_path / "up"
    (source / "nested").mkdir(parents=True)
    payload = os.urandom(1 << 20)
    (source / "nested" / "data.bin").write_bytes(payload)
    (source / "note.txt").write_text("hello\n")
    remote = kubectl("exec", pod, "--", "mktemp", "-d").stdout.strip()
    kubectl("cp", str(source), f"{pod}:{remote}/up")
    listing = kubectl(
        "exec", pod, "--", "sh", "-c", f"cd {remote}/up && find . -type f | sort"
    ).stdout
    assert listing.split() == ["./nested/data.bin", "./note.txt"]
    down = tmp_path / "down"
    kubectl("cp", f"{pod}:{remote}/up", str(down))
    assert (down / "nested" / "data.bin").read_bytes() == payload
    assert (down / "note.txt").read_text() == "hello\n"
    single = tmp_path / "single.txt"
    kubectl("cp", f"{pod}:{remote}/up/note.txt", str(single))
    assert single.read_text() == "hello\n"
    kubectl("exec", pod, "--", "rm", "-rf", remote)


def test_python_client_stream_over_v5_get_and_post(
    core: kubernetes.client.CoreV1Api, pod: str
) -> None:
    out = stream(
        core.connect_get_namespaced_pod_exec, pod, "default",
        command=["sh", "-c", 'echo "$GREETING"'], stderr=True, stdin=False, stdout=True, tty=False,
    )  # fmt: skip
    assert out == "from the spec\n"
    for method in (core.connect_get_namespaced_pod_exec, core.connect_post_namespaced_pod_exec):
        client = stream(
            method, pod, "default", command=["sh", "-c", "cat; echo e >&2; exit 5"],
            stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False,
        )  # fmt: skip
        assert client.subprotocol == "v5.channel.k8s.io"
        client.write_stdin("abc\n")
        client.close_channel(0)
        client.run_forever(timeout=20)
        assert (client.read_stdout(), client.read_stderr(), client.returncode) == (
            "abc\n",
            "e\n",
            5,
        )


def _v4_client(
    core: kubernetes.client.CoreV1Api, pod: str, command: list[str], **flags: bool
) -> WSClient:
    configuration = core.api_client.configuration
    query = "&".join(
        [*(f"command={kubernetes.client.api_client.quote(part)}" for part in command),
         *(f"{key}={value}" for key, value in flags.items())]
    )  # fmt: skip
    url = f"{configuration.host}/api/v1/namespaces/default/pods/{pod}/exec?{query}"
    headers = {
        "authorization": configuration.api_key["BearerToken"],
        "sec-websocket-protocol": "v4.channel.k8s.io",
    }
    return WSClient(configuration, url.replace("https://", "wss://"), headers, capture_all=True)


def test_python_client_v4_gets_the_kubelets_status(
    core: kubernetes.client.CoreV1Api, pod: str
) -> None:
    client = _v4_client(core, pod, ["sh", "-c", "echo v4; exit 4"], stdout=True, stderr=True)
    assert client.subprotocol == "v4.channel.k8s.io"
    client.run_forever(timeout=20)
    assert client.read_stdout() == "v4\n"
    assert client.returncode == 4
    ok = _v4_client(core, pod, ["true"], stdout=True)
    ok.run_forever(timeout=20)
    assert ok.returncode == 0


def test_python_client_tty_sees_its_terminal_size(
    core: kubernetes.client.CoreV1Api, pod: str
) -> None:
    client = stream(
        core.connect_get_namespaced_pod_exec, pod, "default",
        command=["sh", "-c", "sleep 0.5; stty size; test -t 0 && echo tty"],
        stderr=True, stdin=True, stdout=True, tty=True, _preload_content=False,
    )  # fmt: skip
    client.write_channel(4, json.dumps({"Width": 101, "Height": 33}))
    client.run_forever(timeout=20)
    output = client.read_stdout().replace("\r", "")
    assert output.splitlines() == ["33 101", "tty"]
    assert client.returncode == 0


def test_deleting_the_pod_ends_its_exec_sessions(
    kubectl: Kubectl, sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    _running_pod(sandbox, core, "exec-doomed")
    session = subprocess.Popen(
        [kubectl.path, "exec", "exec-doomed", "--", "sh", "-c", "echo started; exec sleep 600"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=kubectl.env,
    )
    try:
        assert session.stdout is not None
        assert session.stdout.readline() == b"started\n"
        core.delete_namespaced_pod("exec-doomed", "default", grace_period_seconds=0)
        assert session.wait(timeout=30) in (137, 143)  # the sleep was killed with the pod
    finally:
        session.kill()
        session.wait()
    wait_until(lambda: sandbox.pod("exec-doomed") is None, what="the pod gone")
