"""The `ssh:` config section, declared by the ssh and the RunPod provider plugins alike: how to
log in over SSH (`key_path`, `use_agent`: every provider whose pods are reached over SSH) and,
for `pod.provider: ssh`, the machine (`host`, `port`, `user`) and where its per-run workspaces
are claimed (`workspaces_root`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import KeyPath
from pegboard.domain.gpujob.provider_plugin import ConfigSection
from pegboard.domain.gpujob.spec import NonEmptyStr, PositiveInt

__all__ = [
    "MAX_CONNECT_TIMEOUT_SEC",
    "SSH_SECTION",
    "SshSpec",
    "configured_key_path",
    "key_file_problems",
    "pinned_host_keys_path",
]

SSH_PROVIDER = "ssh"
PINNED_HOST_KEYS_SUFFIX = ".known_hosts"
MAX_CONNECT_TIMEOUT_SEC = 10.0


@attrs.frozen
class SshSpec:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    key_path: str = "~/.ssh/id_ed25519"
    use_agent: bool = False
    # pod.provider: ssh only: the machine, and where its per-run workspaces are claimed.
    host: NonEmptyStr | None = None
    port: PositiveInt = attrs.field(default=PositiveInt(22))
    user: NonEmptyStr = attrs.field(default=NonEmptyStr("root"))
    workspaces_root: NonEmptyStr = attrs.field(default=NonEmptyStr("~/pegboard-workspaces"))


def ssh_rules(ssh: SshSpec, provider: str) -> list[tuple[KeyPath, str]]:
    found: list[tuple[KeyPath, str]] = []
    if ssh.port > 65535:
        found.append((("port",), f"must be a TCP port (1-65535), got {ssh.port}"))
    root = ssh.workspaces_root
    if not (root.startswith("/") or root == "~" or root.startswith("~/")) or root.strip("/") == "":
        found.append((("workspaces_root",), "must be an absolute path or start with ~/ (not /)"))
    # `ssh.host` names the machine of `pod.provider: ssh`, and only of that provider.
    if provider == SSH_PROVIDER and ssh.host is None:
        found.append((("host",), "required for pod.provider: ssh (the machine to run on)"))
    elif provider != SSH_PROVIDER and ssh.host is not None:
        found.append(
            (
                ("host",),
                f"only used with pod.provider: ssh (the {provider} provider finds its pod's "
                "address itself)",
            )
        )
    return found


SSH_SECTION = ConfigSection(key="ssh", type=SshSpec, rules=ssh_rules)


def configured_key_path(ssh: SshSpec, home: str) -> str | None:
    """The key file to offer, `~` as the run's HOME; None when the agent is asked and the
    default key is absent (a missing key the user named is still an error, when connecting)."""
    path = ssh.key_path
    if path == "~" or path.startswith("~/"):
        path = os.path.join(home, path[2:])
    if ssh.use_agent and ssh.key_path == SshSpec().key_path and not Path(path).is_file():
        return None
    return path


def pinned_host_keys_path(run_pointer: Path) -> Path:
    """The run's pinned host key file: beside its pointer, `<state dir>/runs/<stamp>.known_hosts`
    (removed with the pointer: it is a file beside it that its locator names)."""
    return run_pointer.with_suffix(PINNED_HOST_KEYS_SUFFIX)


def key_file_problems(sections: Mapping[str, Any], home: str) -> list[tuple[KeyPath, str]]:
    """`validate`: the key a run would log in with is there, readable, a key (or the agent
    holds one)."""
    from pegboard.adapters.ssh_keys import key_problem

    ssh = sections.get("ssh")
    if not isinstance(ssh, SshSpec):
        return []
    problem = key_problem(configured_key_path(ssh, home), use_agent=ssh.use_agent)
    return [] if problem is None else [(("ssh", "key_path"), problem)]
