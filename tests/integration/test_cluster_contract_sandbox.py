"""The Cluster contract against KubernetesCluster over real HTTP to the Kubernetes API sandbox,
plus what only the real adapter has: transport errors, faults on the wire, 410 re-lists, one
connection, and a lazy `kubernetes` import."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest

from contract.cluster_contract import (
    ClusterContract,
    phase_is,
    read_all,
    started,
    unique,
    wait_for,
)
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes.sandbox import KubernetesSandbox
from pegboard.domain.errors import Forbidden, Transient, Unauthorized, Unreachable
from pegboard.domain.ports.cluster import JsonObject, LogStreamDropped, ResourceKind

IMAGE = "busybox:1.36"


def shell_script(output: Sequence[bytes], exit_code: int | None, gap: float) -> str:
    """sh that writes each part byte-exactly (octal escapes), `gap` s apart, then exits."""
    steps = []
    for i, part in enumerate(output):
        if i and gap:
            steps.append(f"sleep {gap}")
        steps.append("printf '" + "".join(f"\\{byte:03o}" for byte in part) + "'")
    if gap and not output:
        steps.append(f"sleep {gap}")
    steps.append("exec sleep 3600" if exit_code is None else f"exit {exit_code}")
    return "; ".join(steps)


class SandboxDriver:
    """Pods run real shell commands in the sandbox's kubelet."""

    timeout = 20.0

    def __init__(self, sandbox: KubernetesSandbox, cluster: KubernetesCluster) -> None:
        self.sandbox = sandbox
        self.cluster = cluster
        self.namespace = sandbox.namespace

    def _pod_spec(self, output: Sequence[bytes], exit_code: int | None, gap: float) -> JsonObject:
        command = ["sh", "-c", shell_script(output, exit_code, gap)]
        return {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": IMAGE, "command": command}],
        }

    def pod(
        self,
        name: str,
        *,
        output: Sequence[bytes] = (),
        exit_code: int | None = 0,
        gap: float = 0.0,
        labels: dict[str, str] | None = None,
    ) -> JsonObject:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": self._pod_spec(output, exit_code, gap),
        }

    def job(
        self,
        name: str,
        *,
        output: Sequence[bytes] = (),
        exit_code: int | None = 0,
        labels: dict[str, str] | None = None,
    ) -> JsonObject:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": self._pod_spec(output, exit_code, 0.0)},
            },
        }

    def add_event(self, pod: str, *, reason: str, message: str, type: str = "Warning") -> None:
        self.sandbox.add_event(self.namespace, pod, reason, message, type=type)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox() as running:
        yield running


@pytest.fixture
def cluster(sandbox: KubernetesSandbox, tmp_path: Path) -> Iterator[KubernetesCluster]:
    sandbox.faults.reset()
    adapter = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=tmp_path)
    yield adapter
    adapter.close()


class TestKubernetesClusterContract(ClusterContract):
    __test__ = True

    @pytest.fixture
    def harness(
        self, sandbox: KubernetesSandbox, cluster: KubernetesCluster
    ) -> Iterator[SandboxDriver]:
        yield SandboxDriver(sandbox, cluster)


def test_target_names_the_sandbox_context(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster
) -> None:
    target = cluster.target()
    assert (target.context, target.namespace) == (sandbox.context, sandbox.namespace)


def test_a_closed_port_is_unreachable_not_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
        f"clusters: [{{name: dead, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: dead, context: {cluster: dead, user: u}}]\n"
    )
    adapter = KubernetesCluster(env={"KUBECONFIG": str(kubeconfig)}, home=tmp_path)
    with pytest.raises(Unreachable) as caught:
        adapter.list(ResourceKind.POD, namespace="default")
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "\n" not in message
    assert "object at 0x" not in message
    with pytest.raises(Unreachable):
        list(adapter.watch(ResourceKind.POD, namespace="default", timeout=1))
    with pytest.raises(Unreachable, match=f"127.0.0.1:{port}"):
        adapter.exec("p", ["true"], namespace="default", timeout=5)  # the websocket dial too


def test_a_wrong_token_is_unauthorized(sandbox: KubernetesSandbox, tmp_path: Path) -> None:
    text = Path(sandbox.kubeconfig_path).read_text().replace(sandbox.token, "wrong-token")
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(text)
    adapter = KubernetesCluster(env={"KUBECONFIG": str(kubeconfig)}, home=tmp_path)
    with pytest.raises(Unauthorized):
        adapter.read(ResourceKind.POD, "x", namespace="default")


def test_no_credentials_at_all_is_a_port_error(tmp_path: Path) -> None:
    """The port raises PortErrors only: missing credentials are Unauthorized (squarepeg: 125)."""
    adapter = KubernetesCluster(
        env={"KUBECONFIG": str(tmp_path / "missing")},
        home=tmp_path,
        service_account_dir=tmp_path / "sa",
    )
    with pytest.raises(
        Unauthorized, match=r"no cluster credentials: no kubeconfig at .* not inside a cluster"
    ):
        adapter.target()
    with pytest.raises(Unauthorized, match=r"no cluster credentials"):
        adapter.read(ResourceKind.POD, "x", namespace="default")


def test_rejections_carry_the_status_message(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster
) -> None:
    driver = SandboxDriver(sandbox, cluster)
    sandbox.faults.reject_next("POST", "/pods", 403, message="pods is forbidden: exceeded quota")
    with pytest.raises(Forbidden, match="exceeded quota") as caught:
        cluster.create(driver.pod(unique("deny")), namespace=driver.namespace)
    assert caught.value.status == 403
    sandbox.faults.reject_next("GET", "/pods", 503, message="etcd leader changed")
    with pytest.raises(Transient, match="etcd leader changed"):
        cluster.list(ResourceKind.POD, namespace=driver.namespace)


def test_watch_relists_after_410_gone(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster
) -> None:
    driver = SandboxDriver(sandbox, cluster)
    name = unique("gone")
    cluster.create(driver.pod(name, exit_code=0, gap=0.3), namespace=driver.namespace)
    sandbox.faults.reject_next("GET", "watch=(true|1)", 410, message="too old resource version")
    start = len(sandbox.requests)
    events = wait_for(driver, ResourceKind.POD, name, phase_is("Succeeded", "Failed"))
    assert events[-1].object["status"]["phase"] == "Succeeded"
    mine = [r for r in sandbox.requests[start:] if r.method == "GET" and r.path.endswith("/pods")]
    lists = [r for r in mine if "watch" not in r.params()]
    gone = [r for r in mine if "watch" in r.params() and r.status == 410]
    # A watch by name lists nothing first (its state arrives as ADDED): the one LIST is the relist.
    assert (len(lists), len(gone)) == (1, 1)


@pytest.mark.parametrize(("mode", "dropped"), [("abort", True), ("eof", False)])
def test_a_broken_log_stream_is_dropped_and_a_clean_one_just_ends(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster, mode: str, dropped: bool
) -> None:
    driver = SandboxDriver(sandbox, cluster)
    name = unique("drop")
    cluster.create(
        driver.pod(name, output=[b"a" * 64 + b"\n"], exit_code=None), namespace="default"
    )
    wait_for(driver, ResourceKind.POD, name, started)
    sandbox.faults.drop_log(40, mode=mode, pod=name)
    stream = cluster.stream_logs(name, namespace="default", container="main")
    got: list[bytes] = []
    if dropped:
        with pytest.raises(LogStreamDropped):
            got.extend(stream)
    else:
        got.extend(stream)
    assert len(b"".join(got)) <= 40
    cluster.delete(ResourceKind.POD, name, namespace="default")


def test_bytes_received_before_a_break_are_passed_on(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster
) -> None:
    """A break inside one read (256 KiB) still passes on what that read received: dropped, the
    decoder never saw the log's first records, and after a rotation a reconnect from the start
    looked like a log that began later (seen as silent loss in the long-lines e2e under load)."""
    driver = SandboxDriver(sandbox, cluster)
    name = unique("cut")
    pod = driver.pod(name, exit_code=None)
    line = "b" * 99
    pod["spec"]["containers"][0]["command"] = [
        "sh",
        "-c",
        f"i=0; while [ $i -lt 1000 ]; do echo {line}; i=$((i+1)); done; exec sleep 3600",
    ]
    cluster.create(pod, namespace="default")
    wait_for(driver, ResourceKind.POD, name, started)
    deadline = time.monotonic() + 30
    while len(sandbox.log_bytes(name)) < 100_000 and time.monotonic() < deadline:
        time.sleep(0.01)
    whole = b"".join(cluster.stream_logs(name, namespace="default", container="main", follow=False))
    assert 40_000 < len(whole) < 256 * 1024  # timestamped, and all of it within the first read
    sandbox.faults.drop_log(40_000, mode="abort", pod=name)
    got: list[bytes] = []
    with pytest.raises(LogStreamDropped):
        got.extend(cluster.stream_logs(name, namespace="default", container="main", follow=False))
    assert b"".join(got) == whole[:40_000]
    cluster.delete(ResourceKind.POD, name, namespace="default")


def test_calls_share_one_connection(sandbox: KubernetesSandbox, tmp_path: Path) -> None:
    adapter = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=tmp_path)
    before = sandbox.connection_count()
    for _ in range(5):
        adapter.list(ResourceKind.POD, namespace="default")
        adapter.read(ResourceKind.JOB, "nope", namespace="default")
    assert sandbox.connection_count() - before == 1
    adapter.close()


def test_parallel_deletes_keep_their_connections(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster
) -> None:
    """The orphan sweep's 16 deletes at once fit the pool: a second round opens no connection."""
    cluster.target()
    sandbox.faults.latency_ms = 50  # keeps every delete of a round in flight at once

    def round_of_deletes() -> None:
        start = threading.Barrier(16)

        def delete(i: int) -> None:
            start.wait()
            cluster.delete(ResourceKind.POD, f"absent-{i}", namespace="default")

        threads = [threading.Thread(target=delete, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    before = sandbox.connection_count()
    round_of_deletes()
    first = sandbox.connection_count() - before
    round_of_deletes()
    assert sandbox.connection_count() - before == first
    assert first > 1


def test_close_wakes_a_reader_blocked_on_a_silent_container(
    sandbox: KubernetesSandbox, cluster: KubernetesCluster
) -> None:
    driver = SandboxDriver(sandbox, cluster)
    name = unique("silent")
    cluster.create(driver.pod(name, exit_code=None), namespace="default")
    wait_for(driver, ResourceKind.POD, name, started)
    stream = cluster.stream_logs(name, namespace="default", container="main")
    done = threading.Event()

    def reader() -> None:
        read_all(stream)
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    assert not done.wait(0.2)
    stream.close()
    assert done.wait(5)
    cluster.delete(ResourceKind.POD, name, namespace="default")


def test_importing_the_adapter_does_not_import_kubernetes() -> None:
    code = (
        "import sys, pegboard.adapters.kubernetes_cluster, pegboard.adapters.kubeconfig_file; "
        "print('kubernetes' in sys.modules, 'urllib3' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


class _ScriptedApi(BaseHTTPRequestHandler):
    """Answers a pod list, then a watch that breaks mid-line, then one that ends cleanly."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def do_GET(self) -> None:
        query = parse_qs(urlparse(self.path).query)
        self.seen.append(self.path)
        pod = {"metadata": {"name": "p", "uid": "u1", "resourceVersion": "5"}, "status": {}}
        if "watch" not in query:
            body = json.dumps({"metadata": {"resourceVersion": "5"}, "items": [pod]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        version = query["resourceVersion"][0]
        if version == "5":
            running = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "6"}}
            self._chunk(json.dumps({"type": "MODIFIED", "object": running}).encode() + b"\n")
            self._chunk(b'{"type": "MODIFIED", "obj')  # cut off mid-line, no final chunk
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        gone = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "7"}}
        self._chunk(json.dumps({"type": "DELETED", "object": gone}).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")


def test_watch_resumes_from_the_last_resource_version_after_a_break(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: s\n"
            f"clusters: [{{name: s, cluster: {{server: 'http://127.0.0.1:{server.server_port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: s, context: {cluster: s, user: u}}]\n"
        )
        adapter = KubernetesCluster(env={"KUBECONFIG": str(kubeconfig)}, home=tmp_path)
        events = []
        for event in adapter.watch(ResourceKind.POD, namespace="default", timeout=10):
            events.append((event.type, event.object["metadata"]["resourceVersion"]))
            if event.type == "DELETED":
                break
        assert events == [("ADDED", "5"), ("MODIFIED", "6"), ("DELETED", "7")]
        watches = [p for p in _ScriptedApi.seen if "watch=" in p]
        assert "resourceVersion=5" in watches[0] and "resourceVersion=6" in watches[1]
    finally:
        server.shutdown()
        server.server_close()


def test_lenient_tls_clears_only_strict_x509_verification(
    sandbox: KubernetesSandbox, tmp_path: Path
) -> None:
    env = {"KUBECONFIG": str(sandbox.kubeconfig_path)}
    lenient = KubernetesCluster(env=env, home=tmp_path, lenient_tls=True)
    lenient.target()
    context = lenient._client().rest_client.pool_manager.connection_pool_kw["ssl_context"]
    assert not context.verify_flags & ssl.VERIFY_X509_STRICT
    assert context.verify_mode == ssl.CERT_REQUIRED
    strict = KubernetesCluster(env=env, home=tmp_path)
    assert "ssl_context" not in strict._client().rest_client.pool_manager.connection_pool_kw
    assert lenient.list(ResourceKind.POD, namespace="default") is not None


def _kubeconfig_with_exec_plugin(sandbox: KubernetesSandbox, path: Path, token: str) -> Path:
    """The sandbox's kubeconfig with its user's token handed out by an exec credential plugin."""
    import yaml

    config = yaml.safe_load(Path(sandbox.kubeconfig_path).read_text())
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    for entry in config["users"]:
        entry["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
                "interactiveMode": "Never",
            }
        }
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_exec_plugins_token_authenticates(sandbox: KubernetesSandbox, tmp_path: Path) -> None:
    # The official loader runs the plugin; its token reaches the request via auth_settings().
    kubeconfig = _kubeconfig_with_exec_plugin(sandbox, tmp_path / "config", sandbox.token)
    adapter = KubernetesCluster(env={"KUBECONFIG": str(kubeconfig)}, home=tmp_path)
    assert isinstance(adapter.list(ResourceKind.POD, namespace=sandbox.namespace), list)
    assert sandbox.namespace in adapter.namespace_names(timeout=10)


def test_an_exec_plugins_wrong_token_is_unauthorized(
    sandbox: KubernetesSandbox, tmp_path: Path
) -> None:
    kubeconfig = _kubeconfig_with_exec_plugin(sandbox, tmp_path / "config", "wrong-token")
    adapter = KubernetesCluster(env={"KUBECONFIG": str(kubeconfig)}, home=tmp_path)
    with pytest.raises(Unauthorized):
        adapter.read(ResourceKind.POD, "x", namespace=sandbox.namespace)
