"""The RunPod provider's locator: how to log in to the account's pods over SSH."""

from __future__ import annotations

import attrs

from pegboard.adapters.ssh_section import MAX_CONNECT_TIMEOUT_SEC, SshSpec
from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.gpujob.provider_plugin import NOT_RECORDED


@attrs.frozen
class RunPodLocator:
    """How to log in to this account's pods (the endpoint comes with each pod's status)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    key_path: str | None = SshSpec().key_path  # `~/` is the process's home; None: agent only
    use_agent: bool = False
    known_hosts: str | None = None  # the run's pinned host key file (None: one per pod)
    connect_timeout: float = attrs.field(default=MAX_CONNECT_TIMEOUT_SEC, metadata=NOT_RECORDED)
