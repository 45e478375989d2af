"""The SSH key check `validate` and `run` do before any pod exists (adapters/ssh_keys.py): a
key file that is missing, unreadable, not a key or passphrase-protected is one line naming the
fix, unless the agent holds a key; a usable key passes. Stdlib only (no paramiko)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.ssh_keys import install_ssh_key
from pegboard.adapters.ssh_keys import key_problem


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def _encrypted_openssh(path: Path) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return path


def test_a_usable_key_passes(tmp_path: Path) -> None:
    assert key_problem(str(install_ssh_key(tmp_path)), use_agent=False) is None


def test_a_pem_rsa_key_passes(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = tmp_path / "id_rsa"
    path.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=1024).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    assert key_problem(str(path), use_agent=False) is None


@pytest.mark.parametrize(
    ("arrange", "expected"),
    [
        (lambda p: None, "ssh key not found"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_text("ssh-ed25519 AAAA... me@host\n"), "is not a private key"),
        (
            lambda p: p.write_text(
                "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n"
            ),
            "not a valid OpenSSH private key",
        ),
        (_encrypted_openssh, "passphrase-protected"),
        (
            lambda p: p.write_text(
                "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00"
                "\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"
            ),
            "passphrase-protected",
        ),
    ],
    ids=["missing", "directory", "public-key", "garbage", "encrypted-openssh", "encrypted-pem"],
)
def test_an_unusable_key_is_one_line_with_the_fix(
    tmp_path: Path, arrange: object, expected: str
) -> None:
    path = tmp_path / "id_ed25519"
    arrange(path)  # type: ignore[operator]
    problem = key_problem(str(path), use_agent=False)
    assert problem is not None and expected in problem and "\n" not in problem
    assert "ssh.use_agent" in problem or "ssh-add" in problem


def test_the_agent_is_asked_only_when_use_agent_is_on(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    problem = key_problem(missing, use_agent=True)  # no agent running
    assert problem is not None and "agent holds no key" in problem
    assert "agent holds no key" in (key_problem(None, use_agent=True) or "")


def test_a_key_in_the_agent_stands_in_for_a_missing_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from helpers.components import require_executable

    require_executable("ssh-agent")
    require_executable("ssh-add")
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if sock.exists():
                break
            subprocess.run(["sleep", "0.01"], check=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        missing = str(tmp_path / "nope")
        assert key_problem(missing, use_agent=True) is not None  # the agent is empty
        key = install_ssh_key(tmp_path / "k")
        subprocess.run(["ssh-add", "-q", str(key)], check=True, env={"SSH_AUTH_SOCK": str(sock)})
        assert key_problem(missing, use_agent=True) is None
        assert key_problem(missing, use_agent=False) is not None  # only with use_agent
    finally:
        agent.terminate()
        agent.wait(timeout=10)
