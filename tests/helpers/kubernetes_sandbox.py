"""Helpers for tests that drive the Kubernetes API sandbox with the official client."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from typing import Any

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox


def pod_manifest(
    name: str,
    command: list[str] | None = None,
    *,
    image: str = "alpine",
    labels: dict[str, str] | None = None,
    **container: Any,
) -> dict[str, Any]:
    main: dict[str, Any] = {"name": "main", "image": image, **container}
    if command is not None:
        main["command"] = command
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"restartPolicy": "Never", "containers": [main]},
    }


def job_manifest(
    name: str, command: list[str], *, backoff_limit: int = 0, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"labels": {"from-template": "yes"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "alpine", "command": command}],
                },
            },
            **spec,
        },
    }


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll an in-process condition (cheap: no HTTP) until it is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.005)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_phase(
    sandbox: KubernetesSandbox, name: str, *phases: str, namespace: str = "default"
) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        pod = sandbox.pod(name, namespace)
        return pod if pod and pod["status"].get("phase") in phases else None

    found: dict[str, Any] = wait_until(reached, what=f"pod {name} in {phases}")
    return found


def sandbox_connection(
    sandbox: KubernetesSandbox, timeout: float = 10
) -> http.client.HTTPConnection:
    """A fresh connection to the sandbox: HTTPS trusting its CA, or plain HTTP."""
    if sandbox.url.startswith("https:"):
        return http.client.HTTPSConnection(
            "127.0.0.1", sandbox.port, timeout=timeout, context=sandbox.client_ssl_context()
        )
    return http.client.HTTPConnection("127.0.0.1", sandbox.port, timeout=timeout)


def headers_only_request(
    sandbox: KubernetesSandbox,
    method: str,
    path: str,
    *,
    content_length: int,
    token: str | None = None,
) -> tuple[int, bytes]:
    """Announce a body of `content_length` bytes, send none, and read the answer (5 s at most):
    a server that waits for the body before answering fails this with a timeout."""
    conn = sandbox_connection(sandbox, timeout=5)
    try:
        conn.putrequest(method, path)
        conn.putheader("Authorization", f"Bearer {sandbox.token if token is None else token}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(content_length))
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def raw_request(
    sandbox: KubernetesSandbox,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
) -> tuple[int, bytes]:
    """One request over a fresh connection, bypassing the client (for sinceTime, 401, ...)."""
    conn = sandbox_connection(sandbox)
    headers = {"Authorization": f"Bearer {sandbox.token if token is None else token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def pods_created_by(sandbox: KubernetesSandbox, user: str) -> list[str]:
    """Names of the sandbox's pods that squarepeg created for `user` (its created-by label)."""
    return [
        p["metadata"]["name"]
        for p in sandbox.pods()
        if p["metadata"].get("labels", {}).get("squarepeg.io/created-by") == user
    ]
