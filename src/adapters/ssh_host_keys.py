"""PinnedHostKeys: a pod's SSH host key, learned on first contact and required ever after.

The pin lives in a known_hosts-format file beside the run's state (the caller picks the path),
one file per pod, so OpenSSH reads the same pin for rsync (`UserKnownHostsFile=<file>`,
`StrictHostKeyChecking=yes`). The user's ~/.ssh/known_hosts is never read or written: RunPod
reuses ip:port pairs across pods, and a global file would either refuse a new pod or trust an
old pin for the wrong machine. A different key for the same pod is refused, naming the pod and
both fingerprints (HostKeyRejected), never silently replaced.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard.domain.errors import PortError
from pegboard.domain.ports.remote_shell import HostKeyRejected

if TYPE_CHECKING:  # paramiko is imported lazily: only a real connection needs it
    from paramiko.pkey import PKey


def fingerprint(key: PKey) -> str:
    """OpenSSH's fingerprint format: SHA256:<unpadded base64 of the key blob's digest>."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def host_entry(host: str, port: int) -> str:
    """The known_hosts name of host:port ("host" on port 22, "[host]:port" otherwise)."""
    return host if port == 22 else f"[{host}]:{port}"


class PinnedHostKeys:
    """The pinned host key file of one pod (`pod` names it in messages)."""

    def __init__(self, path: str | Path, *, pod: str) -> None:
        self.path = Path(path)
        self.pod = pod

    def pinned(self, host: str, port: int) -> PKey | None:
        """The key pinned for host:port, or None before first contact."""
        from paramiko.hostkeys import HostKeys

        if not self.path.exists():
            return None
        try:
            keys = HostKeys(str(self.path))
        except (OSError, ValueError) as exc:
            raise PortError(f"unreadable pinned host key file {self.path}: {exc}") from None
        found = keys.lookup(host_entry(host, port))
        if not found:
            return None
        return next(iter(found.values()))

    def check_or_learn(self, host: str, port: int, offered: PKey) -> None:
        """Pin `offered` on first contact; afterwards accept only the very same key."""
        if self.check(host, port, offered):
            self.learn(host, port, offered)

    def check(self, host: str, port: int, offered: PKey) -> bool:
        """Whether `offered` is still to be pinned (first contact: True); the pinned key
        itself: False; any other key: HostKeyRejected. Writes nothing."""
        pinned = self.pinned(host, port)
        if pinned is None:
            return True
        if pinned.get_name() == offered.get_name() and pinned.asbytes() == offered.asbytes():
            return False
        raise HostKeyRejected(
            f"host key of pod {self.pod} ({host}:{port}) changed: pinned "
            f"{pinned.get_name()} {fingerprint(pinned)}, offered {offered.get_name()} "
            f"{fingerprint(offered)}; refusing to connect (if the machine was really "
            f"reinstalled, delete {self.path})"
        )

    def key_types(self, host: str, port: int) -> list[str] | None:
        """Host key algorithms to ask for: the pinned key's, so the server offers that one."""
        pinned = self.pinned(host, port)
        if pinned is None:
            return None
        name = pinned.get_name()
        return ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] if name == "ssh-rsa" else [name]

    def learn(self, host: str, port: int, key: PKey) -> None:
        """Write the pin atomically (temp file + rename), 0600, parents created."""
        line = f"{host_entry(host, port)} {key.get_name()} {key.get_base64()}\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existing = self.path.read_text() if self.path.exists() else ""
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
            try:
                with os.fdopen(fd, "w") as handle:
                    handle.write(existing + line)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise PortError(f"cannot write pinned host key file {self.path}: {exc}") from None
