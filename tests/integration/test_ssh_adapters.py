"""SshShell, RsyncFileSync and their connection against a real sshd: one connection a run,
pinned host keys, process groups, secrets kept off command lines, rsync edge cases."""

from __future__ import annotations

import os
import pty
import select
import time
from pathlib import Path

import pytest

from helpers.components import require_executable
from helpers.ssh_adapters import connect_shell, target_for
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.rsync_file_sync import RsyncFileSync
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key
from pegboard.adapters.sftp_file_sync import SftpFileSync
from pegboard.adapters.ssh_connection import SshConnection, SshTarget
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.errors import NotFound, PortError, Unauthorized, Unreachable
from pegboard.domain.ports.remote_shell import CommandTimedOut


def wait_for(condition: object, budget: float = 10.0) -> bool:
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


def test_a_whole_run_uses_one_connection(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    try:
        for _ in range(5):
            assert shell.run("echo probe", timeout=10).stdout == b"probe\n"
        shell.write_file(f"{tmp_path}/job.sh", b"echo one\necho DONE\n", mode=0o755)
        shell.start_detached(
            f"{tmp_path}/job.sh",
            log_path=f"{tmp_path}/job.log",
            status_path=f"{tmp_path}/job.rc",
            pid_path=f"{tmp_path}/job.pid",
        )
        stream = shell.follow("job.log", heartbeat=0.05)
        seen = b""
        while b"DONE" not in seen:
            seen += next(stream)
        stream.close()
        assert wait_for(
            lambda: (
                not shell.detached_status(
                    pid_path=f"{tmp_path}/job.pid", status_path=f"{tmp_path}/job.rc"
                ).running
            )
        )
        assert shell.read_file("job.log") == b"one\nDONE\n"
    finally:
        shell.close()
    assert server.accepted_logins() == 1
    assert shell.connection.connections_made == 1


def test_the_connection_sets_nodelay_and_keepalive(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    import socket

    shell = connect_shell(sshd, ssh_client_key, tmp_path / "known_hosts")
    try:
        transport = shell.connection.connect()
        sock = transport.sock
        assert isinstance(sock, socket.socket)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert transport.packetizer._Packetizer__keepalive_interval > 0  # type: ignore[attr-defined]
    finally:
        shell.close()


def test_first_contact_pins_the_key_beside_the_state_and_nowhere_else(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    user_known_hosts = Path("~/.ssh/known_hosts").expanduser()
    before = user_known_hosts.read_bytes() if user_known_hosts.exists() else None
    pins = tmp_path / "run-state" / "known_hosts"
    shell = connect_shell(sshd, ssh_client_key, pins)
    shell.run("true", timeout=10)
    shell.close()
    key_type, key_data = sshd.host_public_key.split()[:2]
    assert pins.read_text() == f"[127.0.0.1]:{sshd.port} {key_type} {key_data}\n"
    assert pins.stat().st_mode & 0o777 == 0o600
    sync = RsyncFileSync(target_for(sshd, ssh_client_key), known_hosts=pins)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a").write_bytes(b"a")
    sync.push(f"{tmp_path}/src/", f"{tmp_path}/dst")
    after = user_known_hosts.read_bytes() if user_known_hosts.exists() else None
    assert after == before


def test_a_timeout_kills_the_remote_process_group(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    shell = connect_shell(sshd, ssh_client_key, tmp_path / "known_hosts")
    child_file = tmp_path / "child.pid"
    try:
        with pytest.raises(CommandTimedOut, match=r"timed out after 0\.5s"):
            shell.run(f"sleep 300 & echo $! > {child_file}; wait", timeout=0.5)
        child = int(child_file.read_text())
        assert wait_for(lambda: not alive(child)), "the background child survived the timeout"
        assert shell.run("echo still usable", timeout=10).stdout == b"still usable\n"
    finally:
        shell.close()


def test_a_detached_job_outlives_the_connection(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    pins = tmp_path / "known_hosts"
    first = connect_shell(sshd, ssh_client_key, pins)
    first.write_file(f"{tmp_path}/job.sh", b"sleep 0.5\necho finished\nexit 4\n", mode=0o755)
    paths = {n: f"{tmp_path}/job.{n}" for n in ("log", "rc", "pid")}
    first.start_detached(
        f"{tmp_path}/job.sh", log_path=paths["log"], status_path=paths["rc"], pid_path=paths["pid"]
    )
    first.close()
    second = connect_shell(sshd, ssh_client_key, pins)
    try:
        assert wait_for(
            lambda: (
                second.detached_status(pid_path=paths["pid"], status_path=paths["rc"]).exit_code
                == 4
            )
        )
        assert second.read_file(paths["log"]) == b"finished\n"
    finally:
        second.close()


def test_secrets_travel_as_data_never_in_a_command(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts")
    secret = b"API_TOKEN=tok-9f8e7d6c5b4a\n"
    try:
        shell.write_file(f"{tmp_path}/secrets/token.env", secret, mode=0o600)
        assert shell.read_file(f"{tmp_path}/secrets/token.env") == secret
        shell.run(f'. {tmp_path}/secrets/token.env && test -n "$API_TOKEN"', timeout=10)
    finally:
        shell.close()
    assert (tmp_path / "secrets" / "token.env").stat().st_mode & 0o777 == 0o600
    commands = "\n".join(server.recorded_commands())
    assert "tok-9f8e7d6c5b4a" not in commands
    assert "sftp" in commands  # the bytes went over the SFTP subsystem
    assert not list((tmp_path / "secrets").glob(".*pegboard*")), "no staging leftovers"


def test_a_refused_key_is_one_line(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    generate_key(stranger)
    connection = SshConnection(
        SshTarget(sshd.host, sshd.port, key_path=str(stranger), pod="pod-x"),
        pins=PinnedHostKeys(tmp_path / "known_hosts", pod="pod-x"),
    )
    with pytest.raises(Unauthorized) as caught:
        SshShell(connection).run("true", timeout=10)
    message = str(caught.value)
    assert "\n" not in message and "authentication refused" in message
    assert f"root@127.0.0.1:{sshd.port}" in message


def test_a_missing_key_file_names_the_setting(sshd: LoopbackSshd, tmp_path: Path) -> None:
    connection = SshConnection(
        SshTarget(sshd.host, sshd.port, key_path=str(tmp_path / "nope")),
        pins=PinnedHostKeys(tmp_path / "known_hosts", pod="p"),
    )
    with pytest.raises(Unauthorized, match=r"ssh key not found: .*nope \(ssh.key_path\)"):
        connection.connect()


def test_unreachable_hosts_fail_with_one_line_within_the_timeout(tmp_path: Path) -> None:
    import socket

    # Nothing listens: refused at once.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    refused = SshConnection(
        SshTarget("127.0.0.1", closed_port, key_path="/dev/null"),
        pins=PinnedHostKeys(tmp_path / "kh", pod="p"),
        connect_timeout=2,
    )
    with pytest.raises(Unreachable, match="connection refused"):
        refused.connect()
    # Something listens but never speaks SSH: bounded by the connect timeout.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        mute = SshConnection(
            SshTarget("127.0.0.1", silent.getsockname()[1], key_path="/dev/null"),
            pins=PinnedHostKeys(tmp_path / "kh", pod="p"),
            connect_timeout=0.5,
        )
        started = time.monotonic()
        with pytest.raises(PortError) as caught:
            mute.connect()
        assert time.monotonic() - started < 5
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "kh").exists()


def test_rsync_reports_a_pod_without_rsync(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    require_executable("rsync")
    pins = tmp_path / "known_hosts"
    connect_shell(sshd, ssh_client_key, pins).run("true", timeout=10)
    sync = RsyncFileSync(
        target_for(sshd, ssh_client_key, pod="pod-bare"),
        known_hosts=pins,
        remote_rsync="rsync-is-not-installed-here",
    )
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(PortError, match="pod pod-bare has no rsync"):
        sync.push(str(tmp_path / "f"), f"{tmp_path}/out/")


def test_a_pod_without_rsync_falls_back_to_sftp_on_the_same_connection(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    require_executable("rsync")
    server = start_sshd(record_commands=True)
    pins = tmp_path / "known_hosts"
    shell = connect_shell(server, ssh_client_key, pins)
    shell.run("true", timeout=10)  # first contact pins the host key
    sync = RsyncFileSync(
        target_for(server, ssh_client_key, pod="pod-bare"),
        known_hosts=pins,
        remote_rsync="rsync-is-not-installed-here",
        fallback=SftpFileSync(shell.connection),
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "token.env").write_bytes(b"T=1\n")
    try:
        pushed = sync.push(f"{tmp_path}/src/", f"{tmp_path}/pod/", chmod="F600")
        pulled = sync.pull(f"{tmp_path}/pod/", f"{tmp_path}/back")
    finally:
        shell.close()
    assert (pushed.files, pushed.bytes_transferred) == (1, 4)
    assert (pulled.files, pulled.bytes_transferred) == (1, 4)
    assert (tmp_path / "pod" / "token.env").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "back" / "token.env").read_bytes() == b"T=1\n"
    # rsync was tried once; then everything went over the shell's connection.
    assert sum("rsync-is-not-installed-here" in c for c in server.recorded_commands()) == 1
    assert server.accepted_logins() == 2  # the shell's, and the one rsync attempt


def test_single_small_pulls_ride_the_runs_connection_and_trees_use_rsync(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    """The job log after every run: rsync's own process and SSH handshake cost more than the
    transfer (issue 9's overhead target), so a single small file (or nothing) goes over SFTP."""
    require_executable("rsync")
    server = start_sshd(record_commands=True)
    pins = tmp_path / "known_hosts"
    shell = connect_shell(server, ssh_client_key, pins)
    shell.run("true", timeout=10)
    sftp = SftpFileSync(shell.connection)
    sync = RsyncFileSync(
        target_for(server, ssh_client_key),
        known_hosts=pins,
        fallback=sftp,
        small_pulls=sftp,
        small_pull_max_bytes=1000,
    )
    pod = tmp_path / "pod"
    (pod / "tree").mkdir(parents=True)
    (pod / "job.log").write_bytes(b"log line\n")
    (pod / "big.bin").write_bytes(os.urandom(5000))
    (pod / "tree" / "a").write_bytes(b"a")
    os.utime(pod / "job.log", (1_700_000_000, 1_700_000_000))
    try:
        log = sync.pull(f"{pod}/job.log", f"{tmp_path}/run/")
        with pytest.raises(NotFound, match="no such file or directory on the pod"):
            sync.pull(f"{pod}/never-written/", f"{tmp_path}/run/optional")
        assert server.accepted_logins() == 1  # neither started rsync
        big = sync.pull(f"{pod}/big.bin", f"{tmp_path}/run/")
        tree = sync.pull(f"{pod}/tree/", f"{tmp_path}/run/tree")
    finally:
        shell.close()
    assert (log.files, log.bytes_transferred) == (1, 9)
    assert (tmp_path / "run" / "job.log").read_bytes() == b"log line\n"
    assert (tmp_path / "run" / "job.log").stat().st_mtime == 1_700_000_000  # as rsync -t
    assert big.files == 1 and tree.files == 1
    assert sum(c.startswith("rsync --server") for c in server.recorded_commands()) == 2


def test_rsync_before_first_contact_says_nothing_is_pinned_yet(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    sync = RsyncFileSync(target_for(sshd, ssh_client_key), known_hosts=tmp_path / "none")
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(PortError, match="no host key pinned for it yet"):
        sync.push(str(tmp_path / "f"), f"{tmp_path}/out/")


def test_rsync_draws_progress_only_on_a_terminal(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    import io

    require_executable("rsync")
    pins = tmp_path / "known_hosts"
    connect_shell(sshd, ssh_client_key, pins).run("true", timeout=10)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data.bin").write_bytes(os.urandom(200_000))
    captured = io.BytesIO()
    plain = RsyncFileSync(target_for(sshd, ssh_client_key), known_hosts=pins, progress=captured)
    assert plain.push(f"{tmp_path}/src/", f"{tmp_path}/a").files == 1
    assert captured.getvalue() == b""  # not a terminal: no bar
    master, slave = pty.openpty()
    with os.fdopen(slave, "wb", buffering=0) as terminal:
        bar = RsyncFileSync(target_for(sshd, ssh_client_key), known_hosts=pins, progress=terminal)
        result = bar.push(f"{tmp_path}/src/", f"{tmp_path}/b")
        drawn = b""
        while select.select([master], [], [], 0.2)[0]:
            drawn += os.read(master, 65536)
    os.close(master)
    assert (result.files, result.bytes_transferred) == (1, 200_000)
    assert b"\r" in drawn and b"100%" in drawn
    assert b"Number of files" not in drawn  # --stats stays ours


def test_a_command_killed_by_a_signal_exits_128_plus_n(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    shell = connect_shell(sshd, ssh_client_key, tmp_path / "known_hosts")
    try:
        assert shell.run("kill -KILL $$", timeout=10).exit_code == 137
        assert shell.run("exit 3", timeout=10).exit_code == 3
    finally:
        shell.close()


def test_ctrl_c_during_a_command_kills_its_remote_group(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    shell = connect_shell(sshd, ssh_client_key, tmp_path / "known_hosts")
    child_file = tmp_path / "child.pid"

    def interrupt(chunk: bytes) -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            shell.run(
                f"sleep 300 & echo $! > {child_file}; echo started; wait",
                timeout=30,
                on_output=interrupt,
            )
        child = int(child_file.read_text())
        assert wait_for(lambda: not alive(child)), "the remote command outlived Ctrl-C"
    finally:
        shell.close()


def _tails_of(log: Path) -> list[int]:
    """Live `tail` processes following `log`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"tail")
            and str(log).encode() in argv
            and alive(int(entry.name))
        ):
            found.append(int(entry.name))
    return found


def test_the_launch_follows_its_log_on_its_own_channel_and_leaves_no_tail(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    procs = tmp_path / "procs"
    connection = connect_shell(server, ssh_client_key, tmp_path / "known_hosts").connection
    shell = SshShell(connection, cwd=str(tmp_path), procs_dir=str(procs))
    log = tmp_path / "job.log"
    body = b"echo one\nsleep 0.3\nprintf 'two\\0three'\necho\necho DONE\n"
    try:
        shell.write_file(f"{tmp_path}/job.sh", body, mode=0o755)
        before = len(server.recorded_commands())
        pid = shell.start_detached(
            f"{tmp_path}/job.sh",
            log_path=str(log),
            status_path=f"{tmp_path}/job.rc",
            pid_path=f"{tmp_path}/job.pid",
        )
        assert (procs / str(pid)).is_file()  # recorded for stop/terminate, by the launch itself
        stream = shell.follow(str(log), heartbeat=0.05)
        seen = b""
        while b"DONE\n" not in seen:
            seen += next(stream)
        assert seen == b"one\ntwo\0three\nDONE\n"
        assert wait_for(lambda: not alive(pid))
        # The tail ended with the job: the follow only reports heartbeats now, never an error.
        assert wait_for(lambda: next(stream) == b"" and not _tails_of(log))
        stream.close()
        commands = server.recorded_commands()[before:]
        assert len([c for c in commands if "setsid" in c]) == 1
        assert not [c for c in commands if "exec tail" in c or "kill -- -" in c]
    finally:
        shell.close()


def test_a_follow_elsewhere_than_the_launchs_log_start_gets_its_own_tail(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    log = tmp_path / "job.log"
    try:
        shell.write_file(f"{tmp_path}/job.sh", b"echo abcdef\nsleep 30\n", mode=0o755)
        pid = shell.start_detached(
            f"{tmp_path}/job.sh",
            log_path=str(log),
            status_path=f"{tmp_path}/job.rc",
            pid_path=f"{tmp_path}/job.pid",
        )
        assert wait_for(lambda: log.read_bytes() == b"abcdef\n")  # a resume offset is in the file
        stream = shell.follow(str(log), from_offset=3, heartbeat=0.05)
        seen = b""
        while b"\n" not in seen:
            seen += next(stream)
        assert seen == b"def\n"
        assert len([c for c in server.recorded_commands() if "exec tail -c +4" in c]) == 1
        stream.close()  # neither tail outlives its reader, though the job runs on
        assert wait_for(lambda: len(_tails_of(log)) == 0)
        assert alive(pid)
    finally:
        shell.run(f"kill {pid}", timeout=10)
        shell.close()


def test_the_launchs_follow_delivers_every_byte_written_just_before_the_job_ends(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    # The launch stops its tail once the job exits, which can be before the tail read the last
    # writes: the follow must read what is left by offset, not only report heartbeats.
    server = start_sshd()
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    try:
        script = "head -c 8000000 /dev/zero | tr '\\0' x\necho DONE\n"
        shell.write_file(f"{tmp_path}/burst.sh", script.encode(), mode=0o755)
        shell.start_detached(
            f"{tmp_path}/burst.sh",
            log_path=f"{tmp_path}/burst.log",
            status_path=f"{tmp_path}/burst.rc",
            pid_path=f"{tmp_path}/burst.pid",
        )
        stream = shell.follow(f"{tmp_path}/burst.log", heartbeat=0.05)
        total, heartbeats_after_quiet = 0, 0
        while heartbeats_after_quiet < 40:
            data = next(stream)
            total += len(data)
            heartbeats_after_quiet = 0 if data else heartbeats_after_quiet + 1
        stream.close()
        assert total == 8_000_005 == (tmp_path / "burst.log").stat().st_size
    finally:
        shell.close()


@pytest.mark.parametrize("exit_code", [0, 4])
def test_the_launchs_job_status_comes_on_its_channel_without_a_command(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path, exit_code: int
) -> None:
    server = start_sshd(record_commands=True)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    paths = {"pid_path": f"{tmp_path}/job.pid", "status_path": f"{tmp_path}/job.rc"}
    try:
        body = f"echo started\nsleep 0.5\necho DONE\nexit {exit_code}\n"
        shell.write_file(f"{tmp_path}/job.sh", body.encode(), mode=0o755)
        shell.start_detached(f"{tmp_path}/job.sh", log_path=f"{tmp_path}/job.log", **paths)
        before = len(server.recorded_commands())
        stream = shell.follow(f"{tmp_path}/job.log", heartbeat=0.05)
        assert shell.detached_status(**paths).running
        seen = b""
        while b"DONE\n" not in seen:
            seen += next(stream)
        assert wait_for(lambda: not shell.detached_status(**paths).running)
        assert shell.detached_status(**paths).exit_code == exit_code
        assert server.recorded_commands()[before:] == []  # no probe crossed the wire
        stream.close()
        assert shell.detached_status(**paths).exit_code == exit_code  # still known after
    finally:
        shell.close()


def test_a_launched_job_killed_without_a_status_is_gone_on_its_channel(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    paths = {"pid_path": f"{tmp_path}/job.pid", "status_path": f"{tmp_path}/job.rc"}
    try:
        shell.write_file(f"{tmp_path}/job.sh", b"sleep 30\n", mode=0o755)
        pid = shell.start_detached(f"{tmp_path}/job.sh", log_path=f"{tmp_path}/job.log", **paths)
        stream = shell.follow(f"{tmp_path}/job.log", heartbeat=0.05)
        before = len(server.recorded_commands())
        os.killpg(pid, 9)  # the job and its wrapper: no exit status is recorded
        assert wait_for(lambda: not shell.detached_status(**paths).running)
        status = shell.detached_status(**paths)
        assert status.exit_code is None and not status.running
        assert server.recorded_commands()[before:] == []
        stream.close()
    finally:
        shell.close()


def test_after_a_drop_the_launchs_job_is_asked_on_the_host(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    paths = {"pid_path": f"{tmp_path}/job.pid", "status_path": f"{tmp_path}/job.rc"}
    try:
        shell.write_file(f"{tmp_path}/job.sh", b"sleep 1\nexit 3\n", mode=0o755)
        shell.start_detached(f"{tmp_path}/job.sh", log_path=f"{tmp_path}/job.log", **paths)
        server.kill_sessions()  # the launch's channel goes with its connection; the job lives
        assert wait_for(lambda: not shell.connection.alive)
        assert wait_for(lambda: shell.detached_status(**paths).exit_code == 3)
        assert any("RUNNING" in c or "GONE" in c for c in server.recorded_commands())
    finally:
        shell.close()


def test_a_status_wait_on_the_launchs_channel_does_not_spin_on_its_stderr(
    start_sshd: StartSshd,
    ssh_client_key: SshClientKey,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pegboard.adapters.ssh_shell as ssh_shell_module

    server = start_sshd()
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts", cwd=str(tmp_path))
    paths = {"pid_path": f"{tmp_path}/job.pid", "status_path": f"{tmp_path}/job.rc"}
    log = tmp_path / "job.log"
    try:
        # Truncating its log makes the launch's tail say so on the channel's stderr.
        body = f"echo start\nsleep 0.3\n: > {log}\nsleep 1.5\n"
        shell.write_file(f"{tmp_path}/job.sh", body.encode(), mode=0o755)
        shell.start_detached(f"{tmp_path}/job.sh", log_path=str(log), **paths)
        stream = shell.follow(str(log), heartbeat=0.05)
        assert wait_for(lambda: next(stream) != b"")  # "start" (and the launch's pid line)
        calls = []
        real_select = ssh_shell_module.select.select

        def counting(*args: object) -> object:
            calls.append(1)
            return real_select(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(ssh_shell_module.select, "select", counting)
        waits = 0
        while shell.detached_status(**paths).running and waits < 40:
            waits += 1
        assert waits < 40, "the job ran on"
        assert len(calls) < 3 * waits + 10  # a wait is one select or a few, never a spin
        stream.close()
    finally:
        shell.close()
