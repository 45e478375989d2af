"""The sandbox as a process on a shared machine: its kubeconfig, its leftovers after SIGKILL,
and `squarepeg sandbox` (--token, a busy port, TLS that the official client verifies)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from helpers.kubernetes_sandbox import pod_manifest
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox, write_kubeconfig
from pegboard.adapters.sandboxes.kubernetes.reaper import (
    LOCK_NAME,
    SCRATCH_PREFIX,
    Reaper,
    sweep_abandoned_scratch,
)
from pegboard.domain.errors import UsageError

SQUAREPEG = str(Path(sys.executable).with_name("squarepeg"))


# -- the kubeconfig holds the token: never written through someone else's path -----------------------


def test_kubeconfig_is_not_written_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("precious\n")
    link = tmp_path / "kubeconfig"
    link.symlink_to(target)
    with pytest.raises(UsageError, match="symlink"):
        write_kubeconfig(link, "https://127.0.0.1:1", "secret-token")
    assert target.read_text() == "precious\n"
    assert link.is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file of another user needs root")
def test_kubeconfig_refuses_another_users_file(tmp_path: Path) -> None:
    planted = tmp_path / "kubeconfig"
    planted.write_text("")
    planted.chmod(0o666)
    os.chown(planted, 65534, 65534)
    with pytest.raises(UsageError, match="belongs to uid 65534"):
        write_kubeconfig(planted, "https://127.0.0.1:1", "secret-token")
    assert planted.read_text() == ""


def test_a_reader_of_the_old_file_never_sees_the_token(tmp_path: Path) -> None:
    """Replacing our own file is fine, but by rename: a descriptor opened on the old one (by a
    process that got in while it was readable) reads the old bytes, not the token."""
    path = tmp_path / "kubeconfig"
    path.write_text("old\n")
    path.chmod(0o644)
    with open(path) as spy:
        write_kubeconfig(path, "https://127.0.0.1:1", "secret-token")
        assert "secret-token" not in spy.read()
    assert "secret-token" in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["kubeconfig"]  # no temporary left


def test_a_refused_kubeconfig_path_is_one_line_from_the_cli(tmp_path: Path) -> None:
    link = tmp_path / "kubeconfig"
    link.symlink_to(tmp_path / "elsewhere")
    done = subprocess.run(
        [SQUAREPEG, "sandbox", "--kubeconfig", str(link)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "symlink" in done.stderr
    assert not (tmp_path / "elsewhere").exists()


# -- SIGKILL leaves nothing behind ------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead: it only waits for its parent (here, init) to reap it.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(condition: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_of_the_sandbox_kills_its_containers_and_removes_its_scratch(
    tmp_path: Path,
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    report = tmp_path / "report"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pegboard.adapters.sandboxes.kubernetes",
            "--kubeconfig",
            kubeconfig,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        assert "listening on https://" in server.stderr.readline()
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        # The container's main process and a child in the background: both must go.
        # ($$$$ is the shell's $$ once Kubernetes has expanded $$ to $.)
        script = f"sleep 300 & echo $$$$ $! $PWD > {report}.tmp; mv {report}.tmp {report}; wait"
        core.create_namespaced_pod("default", pod_manifest("long", ["sh", "-c", script]))
        _wait_for(report.exists, "the container to start")
        main_pid, child_pid, scratch = report.read_text().split()
        assert _alive(int(main_pid)) and _alive(int(child_pid))
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        _wait_for(lambda: not _alive(int(main_pid)), "the container's main process to die")
        _wait_for(lambda: not _alive(int(child_pid)), "the container's child to die")
        root = Path(scratch)
        while root.name and not root.name.startswith(SCRATCH_PREFIX):
            root = root.parent
        assert root.name.startswith(SCRATCH_PREFIX)
        _wait_for(lambda: not root.exists(), "the scratch directory to be removed")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


def test_next_start_removes_scratch_directories_whose_sandbox_is_gone(tmp_path: Path) -> None:
    abandoned = tmp_path / f"{SCRATCH_PREFIX}dead"
    (abandoned / "pods").mkdir(parents=True)
    (abandoned / LOCK_NAME).touch()
    live = tmp_path / f"{SCRATCH_PREFIX}live"
    live.mkdir()
    (live / LOCK_NAME).touch()
    holder = os.open(live / LOCK_NAME, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    unrelated = tmp_path / "someone-elses-dir"
    unrelated.mkdir()
    older = tmp_path / f"{SCRATCH_PREFIX}older-pegboard"  # no lock file: maybe still running
    older.mkdir()
    try:
        assert sweep_abandoned_scratch(tmp_path) == [abandoned]
    finally:
        os.close(holder)
    assert live.exists() and unrelated.exists() and older.exists() and not abandoned.exists()


# -- squarepeg sandbox: --token, busy port, TLS -------------------------------------------------------


def _start_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [SQUAREPEG, "sandbox", *args], stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def test_squarepeg_sandbox_token_and_tls_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sandbox.kubeconfig"
    process = _start_cli("--token", "fixed-token-123", "--kubeconfig", str(kubeconfig))
    try:
        assert process.stderr is not None
        assert "listening on https://127.0.0.1:" in process.stderr.readline()
        document = yaml.safe_load(kubeconfig.read_text())
        assert document["users"][0]["user"]["token"] == "fixed-token-123"
        cluster = document["clusters"][0]["cluster"]
        assert cluster["server"].startswith("https://127.0.0.1:")
        assert (
            "BEGIN CERTIFICATE"
            in __import__("base64").b64decode(cluster["certificate-authority-data"]).decode()
        )
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        assert core.list_namespaced_pod("default").items == []
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) in (0, 130)
        if process.stderr is not None:
            process.stderr.close()


def test_squarepeg_sandbox_on_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [SQUAREPEG, "sandbox", "--port", str(port), "--kubeconfig", str(tmp_path / "k")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr == (
        f"squarepeg: port {port} on 127.0.0.1 is already in use "
        "(choose another with --port, or 0 for any free port)\n"
    )
    assert not (tmp_path / "k").exists()


def test_plain_http_mode_still_serves_the_official_client() -> None:
    with KubernetesSandbox(tls=False) as sandbox:
        assert sandbox.url.startswith("http://")
        core = client.CoreV1Api(config.new_client_from_config(str(sandbox.kubeconfig_path)))
        core.create_namespaced_pod("default", pod_manifest("plain", ["true"]))
        assert sandbox.pod("plain") is not None
        assert sandbox.ca_pem is None


def test_squarepeg_sandbox_kubelet_flags_reach_the_kubelet(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sandbox.kubeconfig"
    process = _start_cli(
        "--kubeconfig", str(kubeconfig), "--log-rendering", "pre-1.26",
        "--container-log-max-size", "64Ki", "--container-log-max-files", "3",
        "--container-log-monitor-interval", "0.5",
    )  # fmt: skip
    try:
        assert process.stderr is not None
        assert "listening on https://127.0.0.1:" in process.stderr.readline()
        document = yaml.safe_load(kubeconfig.read_text())
        cluster = document["clusters"][0]["cluster"]
        trust = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
        token = document["users"][0]["user"]["token"]
        request = urllib.request.Request(
            cluster["server"] + "/sandbox/faults", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, context=trust, timeout=30) as answer:
            faults = json.load(answer)
        assert faults["log_rendering"] == "pre-1.26"
        assert faults["container_log_max_size"] == 64 * 1024
        assert faults["container_log_max_files"] == 3
        assert faults["container_log_monitor_interval"] == 0.5
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) in (0, 130)
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--container-log-max-size", "ten"], "--container-log-max-size: 'ten' is not a whole"),
        (["--container-log-max-size", "1.5"], "--container-log-max-size: '1.5' is not a whole"),
        (["--container-log-max-files", "1"], "--container-log-max-files"),
        (["--log-rendering", "1.25"], "--log-rendering"),
    ],
)
def test_squarepeg_sandbox_refuses_bad_kubelet_flags(flags: list[str], message: str) -> None:
    done = subprocess.run(
        [SQUAREPEG, "sandbox", *flags], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_the_watchdog_also_kills_a_container_it_was_not_told_of_yet(tmp_path: Path) -> None:
    """The sandbox dies between a container's start and its +PGID line (seen in CI under load):
    the container still works in the sandbox's scratch directory, so it goes too; a process
    working elsewhere is left alone."""
    scratch = tmp_path / "scratch"
    (scratch / "pods" / "p").mkdir(parents=True)
    reaper = Reaper(scratch)
    untold = subprocess.Popen(["sleep", "300"], cwd=scratch / "pods" / "p", start_new_session=True)
    outside = subprocess.Popen(["sleep", "300"], cwd=tmp_path, start_new_session=True)
    try:
        reaper.close(timeout=10)
        assert untold.wait(timeout=10) == -signal.SIGKILL
        assert outside.poll() is None
        assert not scratch.exists()
    finally:
        for process in (untold, outside):
            process.kill()
            process.wait()
