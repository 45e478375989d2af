"""LoopbackSshd: a real OpenSSH sshd on 127.0.0.1 with a random port, for tests and sandboxes.

Everything lives in a fresh temp directory: the config, a host key generated at start (kept
across `restart()`, so clients that pinned it still trust the server), the authorized_keys you
give it, and the `-e` log. With `record_commands=True` a ForceCommand wrapper appends every
command a client asks for (SSH_ORIGINAL_COMMAND) to `commands_log_path` before running it, so a
test can prove what crossed the wire (no secrets on command lines, how many exec requests).

What OpenSSH insists on (each one was hit here; sshd(8), sshd_config(5) of OpenSSH 9):
/usr/sbin/sshd by its absolute path ("sshd re-exec requires execution with an absolute path");
/run/sshd must exist when it runs as root (its privilege separation directory); `StrictModes no`,
since the world-writable /tmp above authorized_keys otherwise fails sshd's ownership check; and
host keys generated at start, never committed (a 0644 private key is ignored as "UNPROTECTED").
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from .serving import Sandbox

SSHD_PATH = "/usr/sbin/sshd"
SFTP_SERVER_PATH = "/usr/lib/openssh/sftp-server"


class SshdError(RuntimeError):
    """sshd could not be started (missing binary, early exit); the message carries its log."""


def generate_key(path: str | Path, *, comment: str = "pegboard") -> str:
    """Write a new passphrase-less ed25519 key pair at `path` (+ .pub); return the public line."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in (target, target.with_name(target.name + ".pub")):
        stale.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(target)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return target.with_name(target.name + ".pub").read_text().strip()


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the usual small race, never hit in practice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


# Runs as the login shell's `-c` argument: log the requested command, then run it. sftp arrives
# as the subsystem's path, which `sh -c` runs like any other command.
_WRAPPER = """#!/bin/sh
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> {log}
if [ -z "$SSH_ORIGINAL_COMMAND" ]; then exec /bin/sh -l; fi
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


class LoopbackSshd(Sandbox):
    """A throwaway sshd. Use as a context manager, or `start()` / `stop()`.

    authorized_keys: public key lines that may log in (as the user sshd runs as; root in CI).
    record_commands: install the ForceCommand wrapper that logs SSH_ORIGINAL_COMMAND.
    sftp_subsystem: False configures no sftp subsystem, like an image without sftp-server
      (every SFTP session then fails to start: "EOF during negotiation").
    lean_sessions: sessions skip the login user's ~/.bashrc, like a lean account would. bash
      sources it for every command sshd runs, which for root on our machines (`pyenv init`)
      costs 80-250 ms a command; `SetEnv SHLVL=1` makes bash see itself as a nested shell.
    """

    def __init__(
        self,
        authorized_keys: Iterable[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        record_commands: bool = False,
        sftp_subsystem: bool = True,
        lean_sessions: bool = True,
        sshd_path: str = SSHD_PATH,
        ready_timeout: float = 10.0,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.record_commands = record_commands
        self.sftp_subsystem = sftp_subsystem
        self.lean_sessions = lean_sessions
        self._sshd_path = sshd_path
        self._ready_timeout = ready_timeout
        self.workdir = Path(tempfile.mkdtemp(prefix="pegboard-sshd-"))
        self.host_key_path = self.workdir / "host_ed25519"
        self.authorized_keys_path = self.workdir / "authorized_keys"
        self.config_path = self.workdir / "sshd_config"
        self.log_path = self.workdir / "sshd.log"
        self.commands_log_path = self.workdir / "commands.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self.set_authorized_keys(authorized_keys)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> LoopbackSshd:
        if not os.access(self._sshd_path, os.X_OK):
            raise SshdError(f"{self._sshd_path} is not installed (apt-get install openssh-server)")
        if os.geteuid() == 0:
            # Privilege separation directory; /run may be a fresh tmpfs.
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        if not self.host_key_path.exists():
            generate_key(self.host_key_path, comment="pegboard-sshd-host")
        self._write_config()
        log = self.log_path.open("ab")
        try:
            # Absolute path: sshd refuses to re-exec otherwise.
            self._proc = subprocess.Popen(
                [self._sshd_path, "-D", "-e", "-f", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        finally:
            log.close()
        self._wait_ready()
        return self

    def stop(self) -> None:
        """Stop the listener and every session it accepted; keep the workdir (see `cleanup`)."""
        self.kill_sessions()
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            self._proc = None

    def restart(self) -> None:
        """Stop everything and start again on the same port with the same host key."""
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def close(self) -> None:
        """Leaving `with`: stop, and remove the work directory too."""
        self.cleanup()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # --- faults ----------------------------------------------------------------------------

    def kill_sessions(self) -> int:
        """SIGKILL every per-connection sshd process (connections drop as if sshd died).

        The commands those sessions started (a detached job, for instance) are not sshd
        processes and are left alone, like on a real host whose sshd crashed.
        """
        if self._proc is None:
            return 0
        killed = 0
        for pid in _descendants(self._proc.pid):
            if _comm(pid) == "sshd":
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
        return killed

    def kill(self) -> None:
        """SIGKILL the listener and its sessions at once (the "sshd crashed" fault)."""
        self.kill_sessions()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    # --- what clients need -----------------------------------------------------------------

    def set_authorized_keys(self, keys: Iterable[str]) -> None:
        self.authorized_keys_path.write_text("".join(k.strip() + "\n" for k in keys))
        self.authorized_keys_path.chmod(0o600)

    @property
    def host_public_key(self) -> str:
        """The host key's public line, "ssh-ed25519 AAAA... comment" (after `start`)."""
        return self.host_key_path.with_name(self.host_key_path.name + ".pub").read_text().strip()

    @property
    def known_hosts_line(self) -> str:
        """A known_hosts entry for this server ("[127.0.0.1]:port ssh-ed25519 AAAA...")."""
        key_type, key_data = self.host_public_key.split()[:2]
        return f"[{self.host}]:{self.port} {key_type} {key_data}"

    # --- what tests read back --------------------------------------------------------------

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def accepted_logins(self) -> int:
        """Authenticated connections so far, from sshd's own log ("Accepted publickey ...")."""
        return sum(1 for line in self.log_text().splitlines() if "Accepted publickey" in line)

    def recorded_commands(self) -> list[str]:
        """Every command clients asked for, in order (needs record_commands=True)."""
        if not self.commands_log_path.exists():
            return []
        return self.commands_log_path.read_text(errors="replace").splitlines()

    # --- internals -------------------------------------------------------------------------

    def _write_config(self) -> None:
        lines = [
            f"ListenAddress {self.host}:{self.port}",
            f"HostKey {self.host_key_path}",
            f"AuthorizedKeysFile {self.authorized_keys_path}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            # Every parent of the keys file is checked, and /tmp is world-writable.
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "PidFile none",
            "LogLevel VERBOSE",
        ]
        if self.lean_sessions:
            lines.append("SetEnv SHLVL=1")
        if self.record_commands:
            wrapper = self.workdir / "record-command"
            wrapper.write_text(_WRAPPER.format(log=self.commands_log_path))
            wrapper.chmod(0o755)
            self.commands_log_path.touch()
            # The wrapper must see sftp as a plain command it can run.
            sftp = SFTP_SERVER_PATH if os.access(SFTP_SERVER_PATH, os.X_OK) else "internal-sftp"
            lines += [f"Subsystem sftp {sftp}"] if self.sftp_subsystem else []
            lines.append(f"ForceCommand {wrapper}")
        elif self.sftp_subsystem:
            lines.append("Subsystem sftp internal-sftp")
        self.config_path.write_text("\n".join(lines) + "\n")

    def _wait_ready(self) -> None:
        """Wait until the port answers with an SSH banner; fail with sshd's log on early exit."""
        assert self._proc is not None
        deadline = time.monotonic() + self._ready_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise SshdError(f"sshd exited with {code} at start: {self.log_text().strip()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1) as conn:
                    if conn.recv(4).startswith(b"SSH-"):
                        return
            except OSError:
                pass
            time.sleep(0.005)
        self.stop()
        raise SshdError(f"sshd did not answer on {self.host}:{self.port} within the timeout")


def _descendants(root: int) -> list[int]:
    """Every descendant pid of `root`, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The comm field may hold spaces and parentheses: the ppid follows the last ")".
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
