"""Writing a kubeconfig that points the official client, kubectl or squarepeg at the sandbox."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_kubeconfig(
    path: str | os.PathLike[str],
    server_url: str,
    token: str,
    context: str = "pegboard-sandbox",
    namespace: str = "default",
) -> Path:
    """Write a one-context kubeconfig (mode 0600, it holds the token) and return its path.

    Strings are written JSON-quoted, which YAML reads as double-quoted scalars.
    """
    q = json.dumps
    text = f"""apiVersion: v1
kind: Config
clusters:
- name: {q(context)}
  cluster:
    server: {q(server_url)}
users:
- name: {q(context)}
  user:
    token: {q(token)}
contexts:
- name: {q(context)}
  context:
    cluster: {q(context)}
    user: {q(context)}
    namespace: {q(namespace)}
current-context: {q(context)}
preferences: {{}}
"""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(target, 0o600)
    return target
