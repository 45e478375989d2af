"""The sandbox's pods: records, lifecycle (create, stop, resume, terminate) and their SSH hosts.

A pod's volume is a directory under the sandbox's workdir (a network volume's directory when
one is attached); its SSH endpoint comes from a PodHosting: real sshd per pod (pod_ssh.py) or
a banner-only listener for tests that never log in.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

RUNNING, EXITED, TERMINATED = "RUNNING", "EXITED", "TERMINATED"


def status_change_stamp(reason: str, when: float) -> str:
    """RunPod's lastStatusChange text: 'Exited by user: Tue Dec 01 2026 03:49:07 GMT+0000 (...)'."""
    stamp = time.strftime("%a %b %d %Y %H:%M:%S", time.gmtime(when))
    return f"{reason}: {stamp} GMT+0000 (Coordinated Universal Time)"


@dataclass
class SandboxPod:
    id: str
    name: str
    image: str
    gpu_id: str
    gpu_count: int
    datacenter_id: str
    cloud_type: str
    spot: bool
    cost_per_hr: float
    volume_gb: int
    container_disk_gb: int
    volume_mount: str
    ports: str
    env: dict[str, str]
    network_volume_id: str | None
    volume_dir: Path
    status: str = RUNNING
    last_status_change: str = ""
    started_at: float = 0.0  # time.monotonic() of the last create/resume
    ssh_port: int | None = None
    never_ready: bool = False  # fault knob, or dockerArgs that skip the image's sshd
    ready_delay: float = 0.0  # seconds after started_at until 22/tcp is published
    machine_id: str = field(default_factory=lambda: secrets.token_hex(6))
    docker_args: str = ""
    cpu_id: str | None = None  # a CPU pod's flavor (gpu_id is "" then)
    vcpu_count: int = 0
    cuda_version: str | None = None  # the host's, kept while stopped (v2 Pod.cudaVersion)
    trust_account_keys: bool = True  # the account's keys reach the pod (v2: startSsh)
    locked: bool = False  # v2 PATCH locked: stop and restart are refused
    created_wall: float = field(default_factory=time.time)
    started_wall: float | None = None  # time.time() of the last create/start (v2 startedAt)
    # Billing: closed (start, end) running intervals in wall time, and the open one's start.
    billed_intervals: list[tuple[float, float]] = field(default_factory=list)
    running_since: float | None = None
    terminated_wall: float | None = None
    # What GET /v2/pods/{id}/logs serves: (time, source, line), source "system" or "container".
    log_lines: list[tuple[float, str, str]] = field(default_factory=list)

    @property
    def public_key(self) -> str | None:
        return self.env.get("PUBLIC_KEY")

    def begin_billing(self, now: float) -> None:
        self.started_wall = now
        self.running_since = now

    def end_billing(self, now: float) -> None:
        if self.running_since is not None:
            self.billed_intervals.append((self.running_since, now))
            self.running_since = None

    def running_intervals(self, now: float) -> list[tuple[float, float]]:
        open_one = [(self.running_since, now)] if self.running_since is not None else []
        return [*self.billed_intervals, *open_one]

    def log(self, source: str, line: str, when: float) -> None:
        self.log_lines.append((when, source, line))


class PodHosting(Protocol):
    """Gives a running pod an SSH endpoint on 127.0.0.1 and takes it away again."""

    def start(self, pod: SandboxPod) -> int:
        """Start serving the pod; return the TCP port its 22/tcp maps to."""
        ...

    def stop(self, pod: SandboxPod) -> None:
        """Stop serving the pod and kill every process its sessions left running."""
        ...

    def close(self) -> None: ...


class BannerHosting:
    """One loopback listener that answers an SSH banner and hangs up: a pod nobody logs into."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="runpod-banner")
        self._thread.start()

    def start(self, pod: SandboxPod) -> int:
        return self.port

    def stop(self, pod: SandboxPod) -> None:
        return None

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=1)
        self._sock.close()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.sendall(b"SSH-2.0-pegboard-sandbox-no-shell\r\n")
                except OSError:
                    pass


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
