"""The secret scan of issue 9: a run on the `ssh` provider with an env secret and a file secret,
whose job prints both, leaves none of their values in

- its stdout and stderr (the job's output is masked as it streams),
- the run directory (the pulled log included) and the state files (HOME, the project),
- the command line of any process on this machine while it runs (sampled from /proc by a
  thread for the whole run: ssh, rsync, sftp, our own CLI),
- any command sshd was asked to run (LoopbackSshd's ForceCommand recorder).

The job also proves the values did arrive (it prints a digest of each file), so the scan cannot
pass because nothing was sent.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

from helpers.ssh_deploy import SshDeploy
from helpers.sshd import SshClientKey, StartSshd


class CmdlineSampler:
    """Every distinct /proc/*/cmdline seen while running (a thread; as fast as it can read)."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CmdlineSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        proc = Path("/proc")
        while not self._stop.is_set():
            for entry in proc.iterdir():
                if entry.name.isdigit():
                    try:
                        self.seen.add((entry / "cmdline").read_bytes())
                    except OSError:
                        pass  # gone between listing and reading
            self.rounds += 1


def _files_under(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from (p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_no_secret_value_reaches_output_records_command_lines_or_sshd(
    tmp_path: Path, start_sshd: StartSshd, ssh_client_key: SshClientKey
) -> None:
    sshd = start_sshd(record_commands=True)
    deploy = SshDeploy(tmp_path, sshd, ssh_client_key)
    token = f"tok-{secrets.token_hex(12)}"
    key_lines = [f"key-line-{secrets.token_hex(10)}" for _ in range(3)]
    key_text = "-----BEGIN TEST KEY-----\n" + "\n".join(key_lines) + "\n-----END TEST KEY-----\n"
    outside = tmp_path / "outside"  # the file secret's source: not part of what is scanned
    outside.mkdir()
    (outside / "key.pem").write_text(key_text)
    (deploy.project / "payload").mkdir()
    (deploy.project / "payload" / "data.txt").write_text("staged\n")
    values = [token, *key_lines]

    body = (
        "set -eu\n"
        'cat "{volume_mount}/secrets/env"\n'
        'cat "{volume_mount}/secrets/key.pem"\n'
        'echo "key digest $(sha256sum "{volume_mount}/secrets/key.pem" | cut -c1-64)"\n'
        '. "{volume_mount}/secrets/env"\n'
        'echo "token digest $(printf %s "$E2E_TOKEN" | sha256sum | cut -c1-64)"\n'
        "echo JOB_DONE\n"
    )
    config = deploy.config(
        body,
        setup_after_secrets=True,
        secrets=[
            {"name": "api", "env": ["E2E_TOKEN"], "destination": "{volume_mount}/secrets/env"},
            {
                "name": "key",
                "file": str(outside / "key.pem"),
                "destination": "{volume_mount}/secrets/key.pem",
                "mode": "0400",
            },
        ],
        setup=[{"command": 'cat "{volume_mount}/secrets/env"'}],
        staging=[
            {
                "label": "payload",
                "source": "payload/",
                "destination": "{volume_mount}/payload",
            }
        ],
        preflight=[{"command": 'test -f "{volume_mount}/payload/data.txt"', "with_env": True}],
        remote_env={"source_files": ["{volume_mount}/secrets/env"]},
    )

    with CmdlineSampler() as sampler:
        run = deploy.start(config, env={"E2E_TOKEN": token})
        code = run.finish()
    assert code == 0, run.stderr.decode()

    # The values did travel, and the job printed them: masked, not missing.
    out = run.job_output.decode()
    assert f"key digest {hashlib.sha256(key_text.encode()).hexdigest()}" in out
    assert f"token digest {hashlib.sha256(token.encode()).hexdigest()}" in out
    assert "***" in out
    # The sampler was live during the run and saw its processes.
    assert sampler.rounds > 10
    assert any(b"runpod-deploy" in cmdline for cmdline in sampler.seen)
    commands = sshd.recorded_commands()
    assert commands

    places: dict[str, bytes] = {
        "stdout": run.stdout,
        "stderr": run.stderr,
        "process command lines": b"\n".join(sampler.seen),
        "commands sshd ran": "\n".join(commands).encode(),
    }
    for path in _files_under(deploy.project, deploy.home):
        places[str(path)] = path.read_bytes()
    assert any(where.startswith(f"{run.run_dir}/") for where in places)  # run dir scanned
    leaks = [
        (where, value)
        for value in values
        for where, content in places.items()
        if value.encode() in content
    ]
    assert leaks == []
