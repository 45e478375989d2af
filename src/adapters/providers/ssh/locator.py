"""The ssh provider's locator: the machine, how to log in to it, and the run's pinned host key file."""

from __future__ import annotations

import attrs

from pegboard.adapters.ssh_section import MAX_CONNECT_TIMEOUT_SEC
from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.gpujob.provider_plugin import NOT_RECORDED


@attrs.frozen
class SshLocator:
    """Where the ssh provider's pods are: one machine, and how to log in to it."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    host: str | None = None
    known_hosts: str | None = None  # the pinned host key file
    port: int = 22
    user: str = "root"
    key_path: str | None = None  # None: the agent's keys only
    use_agent: bool = False
    workspaces_root: str = "~/pegboard-workspaces"
    connect_timeout: float = attrs.field(default=MAX_CONNECT_TIMEOUT_SEC, metadata=NOT_RECORDED)
    # The pod a pointer names, so that a changed host key is refused naming it.
    pod_id: str | None = attrs.field(default=None, metadata=NOT_RECORDED)
