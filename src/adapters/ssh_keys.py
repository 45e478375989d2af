"""The private keys an SSH connection offers: `ssh.key_path` (it must exist, be readable and
parse) and, with `ssh.use_agent`, the agent's keys.

`load_keys` is what a connection uses (paramiko; Unauthorized, one line, when the key file
cannot be used); `key_problem` checks the same before anything exists remotely (`validate`,
and `run` before create), without paramiko: the one-line reason no connection could ever log
in, or None.
"""

from __future__ import annotations

import base64
import os
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard.adapters.ssh_errors import map_connect_error
from pegboard.domain.errors import Unauthorized, UsageError

if TYPE_CHECKING:
    from paramiko.pkey import PKey


def load_keys(key_path: str | None, *, use_agent: bool, target: str = "") -> list[PKey]:
    """The keys to offer, in order; raises Unauthorized when `key_path` cannot be used."""
    from paramiko.pkey import PKey
    from paramiko.ssh_exception import PasswordRequiredException

    keys: list[PKey] = []
    if key_path:
        path = Path(key_path).expanduser()
        if not path.is_file():
            raise Unauthorized(f"ssh key not found: {path} (ssh.key_path)")
        try:
            keys.append(PKey.from_path(path))
        except PasswordRequiredException as exc:
            raise map_connect_error(exc, target=target or str(path), timeout=0) from None
        except Exception as exc:  # one line for any unreadable key
            raise Unauthorized(f"cannot use ssh key {path}: {_reason(exc)}") from None
    if use_agent:
        keys.extend(agent_keys())
    return keys


def agent_keys() -> list[PKey]:
    """The keys the ssh agent ($SSH_AUTH_SOCK) holds; none without an agent."""
    from paramiko.agent import Agent

    return list(Agent().get_keys())


_FIX = (
    "create one (ssh-keygen -t ed25519 -f PATH), point ssh.key_path at your key, or set "
    "ssh.use_agent: true with a key in the agent"
)
_PEM = re.compile(rb"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----\s+(.*?)-----END ", re.S)
_OPENSSH_MAGIC = b"openssh-key-v1\0"


def key_problem(key_path: str | None, *, use_agent: bool) -> str | None:
    """Why no connection with these settings could log in (one line), or None.

    Stdlib only (`validate` stays light): the key file exists, is readable, holds a private
    key in a format OpenSSH writes, and is not passphrase-protected (paramiko cannot ask for
    a passphrase); failing that, or without a key file, the agent must hold a key when
    `use_agent` is on. A key that passes here and still cannot be used fails the run's
    first login at once (Unauthorized is never retried).
    """
    problem = _key_file_problem(key_path) if key_path else "no ssh.key_path"
    if problem is None:
        return None
    if use_agent:
        held = agent_key_count()
        if held:
            return None
        if not key_path:
            return "ssh.use_agent is on but the agent holds no key (add one: ssh-add)"
        return f"{problem}, and the agent holds no key; {_FIX}"
    return f"{problem}; {_FIX}"


def _key_file_problem(key_path: str) -> str | None:
    path = Path(key_path).expanduser()
    try:
        data = path.read_bytes()[:65536]
    except FileNotFoundError:
        return f"ssh key not found: {path}"
    except IsADirectoryError:
        return f"ssh key {path} is a directory"
    except OSError as exc:
        return f"cannot read ssh key {path}: {exc.strerror or exc}"
    match = _PEM.search(data)
    if match is None:
        return f"{path} is not a private key (no BEGIN ... PRIVATE KEY block)"
    kind, body = match.group(1).strip(), match.group(2)
    if kind == b"ENCRYPTED" or b"Proc-Type: 4,ENCRYPTED" in body:
        return f"ssh key {path} is passphrase-protected (load it into the agent: ssh-add)"
    if kind != b"OPENSSH":
        return None  # PEM RSA/EC/DSA, PKCS#8: paramiko reads them
    try:
        blob = base64.b64decode(b"".join(body.split()), validate=True)
    except ValueError:
        return f"{path} is not a valid OpenSSH private key (bad base64)"
    if not blob.startswith(_OPENSSH_MAGIC):
        return f"{path} is not a valid OpenSSH private key"
    cipher = _ssh_string(blob, len(_OPENSSH_MAGIC))
    if cipher is None:
        return f"{path} is not a valid OpenSSH private key (truncated)"
    if cipher != b"none":
        return f"ssh key {path} is passphrase-protected (load it into the agent: ssh-add)"
    return None


def _ssh_string(blob: bytes, offset: int) -> bytes | None:
    """RFC 4251 `string` at `offset` (uint32 length, then the bytes), None when truncated."""
    if len(blob) < offset + 4:
        return None
    size = int.from_bytes(blob[offset : offset + 4], "big")
    value = blob[offset + 4 : offset + 4 + size]
    return value if len(value) == size else None


def agent_key_count(timeout_sec: float = 2.0) -> int:
    """How many keys the agent at $SSH_AUTH_SOCK holds (0 without one or on any error):
    SSH2_AGENTC_REQUEST_IDENTITIES (11), answered by SSH2_AGENT_IDENTITIES_ANSWER (12) and
    a uint32 count (draft-miller-ssh-agent, section 4.4)."""
    where = os.environ.get("SSH_AUTH_SOCK")
    if not where:
        return 0
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_sec)
            sock.connect(where)
            sock.sendall((1).to_bytes(4, "big") + bytes([11]))
            head = _receive(sock, 9)
    except OSError:
        return 0
    if head is None or head[4] != 12:
        return 0
    return int.from_bytes(head[5:9], "big")


def _receive(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text and text[0] else type(exc).__name__


def check_ssh_key(key_path: str | None, *, use_agent: bool) -> None:
    """A key no connection could log in with is a usage error before any pod exists (a pod
    created without one bills for its whole ready timeout): the ssh and RunPod providers'
    Backend.check_usable."""
    problem = key_problem(key_path, use_agent=use_agent)
    if problem is not None:
        raise UsageError(f"ssh.key_path: {problem}")
