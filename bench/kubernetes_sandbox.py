"""Kubernetes API sandbox speed: GET latency on a keep-alive connection and log throughput.

Ratios against baselines measured in the same run:
- GET: a bare stdlib HTTP/1.1 server answering the same pod JSON (the floor of http.server);
- logs: reading the same container output straight from a pipe (the floor of the process).

    .venv/bin/python bench/kubernetes_sandbox.py [--requests N] [--log-mib M]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import urllib3

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.kubernetes.server import keep_freed_memory

LINE = "x" * 99


def get_latency_ms(port: int, path: str, headers: dict[str, str], requests: int) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        conn.request("GET", path, headers=headers)
        conn.getresponse().read()
        samples.append(time.perf_counter() - started)
    conn.close()
    return statistics.median(samples[requests // 10 :]) * 1000


def bare_server(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def pipe_mb_s(script: str, size: int) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE)
    assert process.stdout is not None
    total = 0
    while chunk := process.stdout.read1(1 << 20):
        total += len(chunk)
    process.wait()
    assert total == size
    return total / (time.perf_counter() - started) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--log-mib", type=int, default=256)
    args = parser.parse_args()
    keep_freed_memory()  # the sandbox runs in this process, as `squarepeg sandbox` does
    size = args.log_mib << 20
    script = f"yes {LINE} | head -c {size}"
    # Plain HTTP: this measures the server itself against a bare http.server, not TLS.
    with KubernetesSandbox(tls=False) as sandbox:
        headers = {"Authorization": f"Bearer {sandbox.token}"}
        pod = {
            "metadata": {"name": "bench"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "alpine", "command": ["sleep", "60"]}],
            },
        }
        conn = http.client.HTTPConnection("127.0.0.1", sandbox.port)
        conn.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod), headers)
        body = conn.getresponse().read()
        path = "/api/v1/namespaces/default/pods/bench"
        ours = get_latency_ms(sandbox.port, path, headers, args.requests)
        floor_server = bare_server(body)
        floor = get_latency_ms(floor_server.server_address[1], path, headers, args.requests)
        floor_server.shutdown()
        print(
            f"GET pod: {ours:.3f} ms median; bare http.server {floor:.3f} ms; ratio {ours / floor:.2f}"
        )

        pod["metadata"]["name"] = "bench-log"
        pod["spec"]["containers"][0]["command"] = ["sh", "-c", script]
        conn.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod), headers)
        conn.getresponse().read()
        while (sandbox.pod("bench-log") or {}).get("status", {}).get("phase") not in (
            "Running",
            "Succeeded",
        ):
            time.sleep(0.005)
        pool = urllib3.PoolManager()
        for stamps in ("false", "true"):
            started = time.perf_counter()
            response = pool.request(
                "GET",
                f"{sandbox.url}/api/v1/namespaces/default/pods/bench-log/log?follow=true&timestamps={stamps}",
                headers=headers,
                preload_content=False,
            )
            total = sum(len(chunk) for chunk in response.stream(1 << 20))
            rate = total / (time.perf_counter() - started) / 1e6
            label = "follow (live)" if stamps == "false" else "replay, timestamps"
            print(f"log {label}: {total >> 20} MiB at {rate:.0f} MB/s")
    base = pipe_mb_s(script, size)
    print(f"same output read from a pipe: {base:.0f} MB/s (the process's own ceiling)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
