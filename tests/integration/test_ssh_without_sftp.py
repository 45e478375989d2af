"""A host whose SFTP subsystem does not work (no sftp-server, or a ForceCommand wrapper that
does not run it; issue 17 item 4), against a real sshd: small reads and writes go over the
shell instead, with the same results (bytes, offsets, modes, NotFound), said once; the rsync
fallback's SFTP transfer fails in one line naming cause and fix."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from helpers.ssh_adapters import connect_shell
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sftp_file_sync import SftpFileSync
from pegboard.domain.errors import NotFound, PortError


@pytest.mark.parametrize(
    "wrapper", [False, True], ids=["no-subsystem", "wrapper-without-subsystem"]
)
def test_small_files_go_over_the_shell_when_sftp_does_not_work(
    start_sshd: StartSshd,
    ssh_client_key: SshClientKey,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    wrapper: bool,
) -> None:
    server = start_sshd(sftp_subsystem=False, record_commands=wrapper)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts")
    target = tmp_path / "remote" / "deep" / "status.json"
    data = bytes(range(256)) * 40 + b"\n'$(touch /tmp/pwned)'\n"
    with caplog.at_level(logging.WARNING):
        shell.write_file(str(target), data, mode=0o640)
        assert target.read_bytes() == data and (target.stat().st_mode & 0o777) == 0o640
        assert shell.read_file(str(target)) == data
        assert shell.read_file(str(target), offset=1000) == data[1000:]
        assert shell.read_file(str(target), offset=1000, limit=7) == data[1000:1007]
        shell.write_file(str(target), b"again", mode=0o600)  # replaces it
        assert shell.read_file(str(target)) == b"again"
        with pytest.raises(NotFound):
            shell.read_file(str(tmp_path / "remote" / "missing"))
    notes = [r.getMessage() for r in caplog.records if "SFTP does not work" in r.getMessage()]
    assert len(notes) == 1 and "over the shell" in notes[0]  # said once, not per read
    assert not list(target.parent.glob(".status.json.pegboard-*"))  # no staging leftovers
    shell.close()


def test_an_sftp_transfer_on_such_a_host_fails_in_one_line_with_the_fix(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(sftp_subsystem=False)
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a")
    sync = SftpFileSync(shell._conn)  # the shell's one connection
    with pytest.raises(PortError) as caught:
        sync.push(str(tmp_path / "src") + "/", str(tmp_path / "dst"))
    message = str(caught.value)
    assert "\n" not in message and "SFTP does not work on this host" in message
    assert "sftp-server" in message and "ForceCommand" in message
    shell.close()
