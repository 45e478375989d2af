"""The RemoteShell contract, written once and run against every adapter (not collected itself).

A test module subclasses RemoteShellContract and provides a `driver` fixture with:
  shell                       the RemoteShell under test
  root                        a pod directory for this test (absolute pod path)
  expect(command, result)     fakes: script what `command` returns; real shells: no-op
  script_job(body, job)       write the script `body` (real shells run it) / queue FakeJob `job`
  file_mode(path) -> int      permission bits of a pod file
  settle()                    let time pass a little (real sleep or virtual clock)
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pegboard.adapters.fakes import FakeJob
from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.ports.remote_shell import CommandResult, CommandTimedOut, RemoteShell


def _wait_status(driver: Any, pid_path: str, status_path: str, *, budget: float = 10.0) -> Any:
    deadline = time.monotonic() + budget
    while True:
        status = driver.shell.detached_status(pid_path=pid_path, status_path=status_path)
        if not status.running or time.monotonic() > deadline:
            return status
        driver.settle()


def _follow_until(stream: Any, needle: bytes, *, budget: float = 10.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + budget
    for chunk in stream:
        seen += chunk
        if needle in seen or time.monotonic() > deadline:
            break
    stream.close()
    return seen


class RemoteShellContract:
    def test_is_a_remote_shell(self, driver: Any) -> None:
        assert isinstance(driver.shell, RemoteShell)

    def test_run_separates_stdout_stderr_and_exit_code(self, driver: Any) -> None:
        command = "printf out; printf err >&2; exit 7"
        driver.expect(command, CommandResult(7, b"out", b"err"))
        result = driver.shell.run(command, timeout=10)
        assert result == CommandResult(7, b"out", b"err")

    def test_run_streams_every_byte_to_on_output(self, driver: Any) -> None:
        command = "printf 'a\\n'; sleep 0.05; printf 'b\\n'"
        driver.expect(command, CommandResult(0, b"a\nb\n", b""))
        chunks: list[bytes] = []
        result = driver.shell.run(command, timeout=10, on_output=chunks.append)
        assert b"".join(chunks) == b"a\nb\n" == result.stdout

    def test_run_feeds_stdin(self, driver: Any) -> None:
        driver.expect("cat", CommandResult(0, b"x'y\n", b""))
        assert driver.shell.run("cat", timeout=10, stdin=b"x'y\n").stdout == b"x'y\n"

    def test_run_times_out_and_raises(self, driver: Any) -> None:
        command = "sleep 30"
        driver.expect(command, CommandResult(0, b"", b""), duration=30.0)
        started = time.monotonic()
        with pytest.raises(CommandTimedOut):
            driver.shell.run(command, timeout=0.3)
        assert time.monotonic() - started < 5

    def test_write_file_roundtrips_bytes_and_mode(self, driver: Any) -> None:
        path = f"{driver.root}/sub/secret.env"
        data = b"TOKEN='a b $(rm -rf /)'\nBASH\n\x00\xff"
        driver.shell.write_file(path, data, mode=0o600)
        assert driver.shell.read_file(path) == data
        assert driver.file_mode(path) == 0o600
        driver.shell.write_file(path, b"new", mode=0o600)
        assert driver.shell.read_file(path, offset=1) == b"ew"

    def test_read_file_takes_a_large_file_in_pieces(self, driver: Any) -> None:
        path = f"{driver.root}/job.log"
        data = bytes(range(256)) * 1000
        driver.shell.write_file(path, data, mode=0o644)
        pieces, offset = [], 0
        while piece := driver.shell.read_file(path, offset=offset, limit=65536):
            assert len(piece) <= 65536
            pieces.append(piece)
            offset += len(piece)
        assert b"".join(pieces) == data
        assert [len(p) for p in pieces] == [65536] * 3 + [len(data) - 3 * 65536]
        assert driver.shell.read_file(path, offset=10, limit=0) == b""

    def test_read_missing_file_is_not_found(self, driver: Any) -> None:
        with pytest.raises(NotFound):
            driver.shell.read_file(f"{driver.root}/nope")

    def test_what_fails_on_the_pod_is_a_port_error(self, driver: Any) -> None:
        """The port raises PortErrors only: a path that is a directory, or lies under a file,
        fails (where the adapter notices) as a PortError, never as the OSError of the disk."""
        driver.shell.write_file(f"{driver.root}/d/f", b"x", mode=0o644)
        attempts = [
            lambda: driver.shell.read_file(f"{driver.root}/d"),
            lambda: driver.shell.write_file(f"{driver.root}/d/f/under", b"x", mode=0o644),
            lambda: driver.shell.write_file(f"{driver.root}/d", b"x", mode=0o644),
            lambda: [chunk for _, chunk in zip(range(3), driver.shell.follow(f"{driver.root}/d"))],
        ]
        for attempt in attempts:
            try:
                attempt()
            except PortError:
                pass
            except Exception as exc:  # pragma: no cover - the failure this test looks for
                pytest.fail(f"{type(exc).__name__} escaped the RemoteShell port: {exc}")

    def test_detached_script_records_output_pid_and_exit_status(self, driver: Any) -> None:
        script = f"{driver.root}/job.sh"
        driver.script_job(
            script,
            "echo started\necho DONE\nexit 3\n",
            FakeJob(output=[(0.0, b"started\n"), (0.1, b"DONE\n")], exit_code=3),
        )
        log, status, pid_file = (f"{driver.root}/{n}" for n in ("job.log", "job.rc", "job.pid"))
        pid = driver.shell.start_detached(
            script, log_path=log, status_path=status, pid_path=pid_file
        )
        assert isinstance(pid, int) and pid > 0
        seen = _follow_until(driver.shell.follow(log, heartbeat=0.05), b"DONE\n")
        assert seen == b"started\nDONE\n"
        final = _wait_status(driver, pid_file, status)
        assert (final.running, final.exit_code) == (False, 3)
        assert int(driver.shell.read_file(pid_file).decode().strip()) == pid

    def test_detached_script_that_dies_without_status_is_vanished(self, driver: Any) -> None:
        script = f"{driver.root}/die.sh"
        # Kill the wrapper that would record the status, then ourselves.
        driver.script_job(
            script,
            "echo bye\nkill -KILL $PPID\nkill -KILL $$\n",
            FakeJob(output=[(0.0, b"bye\n")], exit_code=None, duration=0.2),
        )
        paths = (f"{driver.root}/die.log", f"{driver.root}/die.rc", f"{driver.root}/die.pid")
        driver.shell.start_detached(
            script, log_path=paths[0], status_path=paths[1], pid_path=paths[2]
        )
        final = _wait_status(driver, paths[2], paths[1])
        assert final.vanished

    def test_running_script_reports_running(self, driver: Any) -> None:
        script = f"{driver.root}/long.sh"
        driver.script_job(script, "sleep 30\n", FakeJob(exit_code=0, duration=30.0))
        paths = (f"{driver.root}/l.log", f"{driver.root}/l.rc", f"{driver.root}/l.pid")
        driver.shell.start_detached(
            script, log_path=paths[0], status_path=paths[1], pid_path=paths[2]
        )
        status = driver.shell.detached_status(pid_path=paths[2], status_path=paths[1])
        assert status.running and status.exit_code is None
        driver.stop_jobs()

    def test_follow_from_offset_waits_for_the_file_and_heartbeats(self, driver: Any) -> None:
        path = f"{driver.root}/later.log"
        stream = driver.shell.follow(path, from_offset=3, heartbeat=0.05)
        assert next(stream) == b""  # nothing yet: a heartbeat, not an end
        driver.shell.write_file(path, b"abcdef", mode=0o644)
        assert _follow_until(stream, b"def") == b"def"
