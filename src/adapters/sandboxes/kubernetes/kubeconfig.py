"""Writing a kubeconfig that points the official client, kubectl or squarepeg at the sandbox.

It carries the bearer token, so it is written the way a secret must be on a shared machine: to
a private temporary file (created with O_EXCL, mode 0600 from the first byte) in the target's
directory, then renamed over the target. A rename never follows a symlink and never writes into
an inode another process may hold open. A pre-existing path that is a symlink, not a regular
file, or owned by someone else is refused with one line, before anything is written.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pegboard.domain.errors import UsageError


def kubeconfig_text(
    server_url: str,
    token: str,
    context: str = "pegboard-sandbox",
    namespace: str = "default",
    *,
    ca_pem: bytes | None = None,
    extra_users: Sequence[tuple[str, str]] = (),
) -> str:
    """A one-context kubeconfig; strings JSON-quoted, which YAML reads as double-quoted scalars.

    `extra_users` (name, token) each get a user and a context `NAME@CONTEXT` on the same
    cluster (kubectl --context / squarepeg --context); the current context stays the admin's."""
    q = json.dumps
    ca = ""
    if ca_pem is not None:
        ca = f"\n    certificate-authority-data: {q(base64.b64encode(ca_pem).decode())}"
    users = "".join(
        f"\n- name: {q(f'{name}@{context}')}\n  user:\n    token: {q(user_token)}"
        for name, user_token in extra_users
    )
    contexts = "".join(
        f"\n- name: {q(f'{name}@{context}')}\n  context:\n    cluster: {q(context)}"
        f"\n    user: {q(f'{name}@{context}')}\n    namespace: {q(namespace)}"
        for name, _ in extra_users
    )
    return f"""apiVersion: v1
kind: Config
clusters:
- name: {q(context)}
  cluster:
    server: {q(server_url)}{ca}
users:
- name: {q(context)}
  user:
    token: {q(token)}{users}
contexts:
- name: {q(context)}
  context:
    cluster: {q(context)}
    user: {q(context)}
    namespace: {q(namespace)}{contexts}
current-context: {q(context)}
preferences: {{}}
"""


def check_kubeconfig_path(target: Path) -> None:
    """Refuse a path we must not replace: a symlink, a non-file, or another user's file."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{target}: refusing to write the kubeconfig through a symlink")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{target}: refusing to write the kubeconfig: not a regular file")
    if info.st_uid != os.geteuid():
        raise UsageError(
            f"{target}: refusing to write the kubeconfig: the file belongs to uid {info.st_uid}"
        )


def write_kubeconfig(
    path: str | os.PathLike[str],
    server_url: str,
    token: str,
    context: str = "pegboard-sandbox",
    namespace: str = "default",
    *,
    ca_pem: bytes | None = None,
    extra_users: Sequence[tuple[str, str]] = (),
) -> Path:
    """Write a one-context kubeconfig (mode 0600 from creation: it holds the token); its path.

    `ca_pem` (the sandbox's CA) goes in as `certificate-authority-data`, so TLS clients verify it.
    UsageError (one line) when the path exists and is not a regular file of ours, or cannot be
    written.
    """
    target = Path(path)
    text = kubeconfig_text(
        server_url, token, context, namespace, ca_pem=ca_pem, extra_users=extra_users
    )
    check_kubeconfig_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise UsageError(f"{target}: cannot write the kubeconfig: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        check_kubeconfig_path(target)  # narrow the window between the check and the rename
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise UsageError(f"{target}: cannot write the kubeconfig: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target
