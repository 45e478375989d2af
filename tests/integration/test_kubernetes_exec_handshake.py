"""KubernetesCluster.exec against an apiserver that accepts the connection and never answers
(black-holed behind a load balancer, a proxy that swallows upgrades): a bounded wait and one
line, never a hang. And the websocket it opens is the one the official client's
create_websocket would open (headers, TLS options, proxy), with a timeout besides."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pegboard.adapters import kubernetes_exec
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.domain.errors import Transient


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener takes connections into its backlog and never says a word."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def _cluster(tmp_path: Path, server: str, *, read_timeout: float) -> KubernetesCluster:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\n"
    )
    return KubernetesCluster(
        env={"KUBECONFIG": str(kubeconfig)}, home=tmp_path, read_timeout=read_timeout
    )


@pytest.mark.parametrize("scheme", ["http", "https"])  # https: the TLS handshake never answered
def test_an_exec_to_an_apiserver_that_never_answers_fails_in_one_line(
    tmp_path: Path, silent_port: int, scheme: str
) -> None:
    server = f"{scheme}://127.0.0.1:{silent_port}"
    cluster = _cluster(tmp_path, server, read_timeout=0.5)
    try:
        with pytest.raises(Transient) as caught:
            cluster.exec("gpu-pod", ["true"], namespace="ml", timeout=600)
    finally:
        cluster.close()
    message = str(caught.value)
    assert message == (
        f"exec into ml/gpu-pod: no answer from the Kubernetes API at {server} within 0.5s "
        "(connect, TLS and websocket upgrade)"
    )


def test_the_exec_timeout_bounds_the_handshake_when_it_is_shorter(
    tmp_path: Path, silent_port: int
) -> None:
    cluster = _cluster(tmp_path, f"http://127.0.0.1:{silent_port}", read_timeout=600)
    try:
        with pytest.raises(Transient, match=r"within 0\.5s"):
            cluster.exec("gpu-pod", ["true"], namespace="ml", timeout=0.5)
    finally:
        cluster.close()


class _Recorder:
    """websocket.WebSocket, recording what it is made and connected with."""

    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.subprotocol = "v5.channel.k8s.io"

    def connect(self, url: str, **options: Any) -> None:
        _Recorder.made.append({"url": url, "made": self.options, "connect": options})


def _configuration(**values: Any) -> Any:
    from kubernetes.client import Configuration

    configuration = Configuration()
    configuration.host = "https://10.0.0.1:6443"
    for key, value in values.items():
        setattr(configuration, key, value)
    return configuration


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"verify_ssl": False},
        {"ssl_ca_cert": "/etc/ca.pem", "assert_hostname": False},
        {"cert_file": "/c.pem", "key_file": "/k.pem", "tls_server_name": "api.internal"},
        {"proxy": "http://proxy:3128", "no_proxy": "10.0.0.0/8,.internal"},
    ],
    ids=["default", "insecure", "ca-no-hostname", "client-cert-sni", "proxy"],
)
@pytest.mark.parametrize("url", ["wss://10.0.0.1:6443/api/v1/x", "ws://127.0.0.1:8080/api/v1/x"])
def test_the_websocket_is_the_official_clients_with_a_timeout(
    monkeypatch: pytest.MonkeyPatch, values: dict[str, Any], url: str
) -> None:
    from kubernetes.stream import ws_client

    headers = {"authorization": "Bearer t", "sec-websocket-protocol": "v5.channel.k8s.io"}
    configuration = _configuration(**values)
    monkeypatch.setattr(ws_client, "WebSocket", _Recorder)
    monkeypatch.setattr("websocket.WebSocket", _Recorder)
    _Recorder.made = []
    ws_client.create_websocket(configuration, url, headers)
    kubernetes_exec._open(configuration, url, headers, 7.5)
    official, ours = _Recorder.made
    assert ours["connect"].pop("timeout") == 7.5
    assert ours == official
    assert official["made"]["sslopt"]["cert_reqs"] in (ssl.CERT_REQUIRED, ssl.CERT_NONE)
