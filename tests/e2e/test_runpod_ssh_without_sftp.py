"""`runpod-deploy run` on the `ssh` provider against a real sshd whose SFTP subsystem does not
work (issue 17 item 4): the status reads and small writes go over the shell, so the run
succeeds instead of waiting out its ready timeout on "EOF during negotiation", and says once
why; `logs` and `cleanup` work on that host too."""

from __future__ import annotations

from pathlib import Path

from helpers.ssh_deploy import SshDeploy, release_command
from helpers.sshd import SshClientKey, StartSshd


def test_a_run_on_a_host_without_sftp_succeeds_over_the_shell(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    sshd = start_sshd(sftp_subsystem=False)
    deploy = SshDeploy(tmp_path, sshd, ssh_client_key)
    try:
        config = deploy.config(
            "echo hello from the host\necho JOB_DONE\n",
            lifecycle={"on_success": "stop", "on_failure": "stop"},
            secrets=[{"name": "token", "destination": "{volume_mount}/token.env", "env": ["TOK"]}],
        )
        run = deploy.start(config, env={"TOK": "s3cr3t-value"})
        code = run.finish()
        err = run.stderr.decode()
        assert code == 0, err[-3000:]
        assert b"hello from the host\n" in run.stdout
        assert err.count("SFTP does not work on this host") == 1, err[-3000:]
        (token,) = deploy.workspace_files("token.env")  # a secret written over the shell
        assert token.read_text() == "TOK=s3cr3t-value\n" and (token.stat().st_mode & 0o777) == 0o600
        # The stopped pod's record is read over the shell by the commands after the run too.
        released = deploy.cli(*release_command(run.manifest()))
        assert released.returncode == 0, released.stderr.decode()[-2000:]
    finally:
        deploy.close()
