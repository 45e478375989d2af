"""A throwaway unencrypted ed25519 key in a scratch HOME (~/.ssh/id_ed25519 and .pub), the
key the example configs name: `validate` and `run` refuse a config whose ssh.key_path cannot
log in. Generated in-process (cryptography, a paramiko dependency), no ssh-keygen needed."""

from __future__ import annotations

from pathlib import Path

DEFAULT_KEY = Path(".ssh") / "id_ed25519"


def install_ssh_key(home: Path, relative: Path = DEFAULT_KEY) -> Path:
    """Write a fresh key at HOME/relative (and its .pub) unless one is there; its path."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = home / relative
    if path.exists():
        return path
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    Path(str(path) + ".pub").write_bytes(public + b" pegboard-test\n")
    return path
