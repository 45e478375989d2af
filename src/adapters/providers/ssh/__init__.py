"""`pod.provider: ssh`: a machine you already have, named by the `ssh:` section
(docs/runpod-deploy/ssh.md). One connection per run; nothing is rented.

Its locator names the machine (host, port, user), the key, the workspaces root and the run's
pinned host key file; a pod command without a config reaches every host the user's pointers
recorded (place_of).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.adapters.ssh_section import (
    MAX_CONNECT_TIMEOUT_SEC,
    SSH_PROVIDER,
    SSH_SECTION,
    SshSpec,
    configured_key_path,
    key_file_problems,
    pinned_host_keys_path,
)
from pegboard.domain.gpujob.provider_plugin import (
    BuildContext,
    LocatorContext,
    ProviderPlugin,
)
from pegboard.domain.gpujob.spec import BudgetSpec
from pegboard.domain.ports.backend import Backend

from .locator import SshLocator

if TYPE_CHECKING:
    from pegboard.domain.gpujob.spec import JobSpec


def _build(context: BuildContext, locator: SshLocator | None) -> Backend:
    from .backend import ssh_backend

    return ssh_backend(context, locator or SshLocator())


def _from_config(spec: JobSpec, context: LocatorContext) -> SshLocator:
    ssh: SshSpec = spec.section("ssh")
    return SshLocator(
        host=ssh.host,
        port=ssh.port,
        user=ssh.user,
        workspaces_root=ssh.workspaces_root,
        key_path=configured_key_path(ssh, context.home),
        use_agent=ssh.use_agent,
        known_hosts=str(pinned_host_keys_path(context.run_pointer)),
        connect_timeout=min(MAX_CONNECT_TIMEOUT_SEC, float(context.ready_timeout_sec)),
    )


def _early_contact(data: Mapping[str, Any], ready_timeout_flag: int | None, home: str) -> None:
    """A literal `ssh:` machine (host, port, user, key, agent) and ready timeout: the run's dial
    starts now, to the very target and connect timeout _from_config and ssh_backend will give
    the run's connection (it takes the dial only if they are equal; anything templated or
    malformed is left to the run)."""
    ssh, budget = data.get("ssh"), data.get("budget")
    if not isinstance(ssh, Mapping):
        return
    defaults = SshSpec()
    host, port = ssh.get("host"), ssh.get("port", defaults.port)
    user = ssh.get("user", defaults.user)
    key_path = ssh.get("key_path", defaults.key_path)
    use_agent = ssh.get("use_agent", defaults.use_agent)
    if not (isinstance(host, str) and isinstance(user, str) and isinstance(key_path, str)):
        return
    if not all(value and "{" not in value for value in (host, user, key_path)):
        return
    if type(port) is not int or not 0 < port <= 65535 or type(use_agent) is not bool:
        return
    ready = ready_timeout_flag
    if ready is None:
        ready = budget.get("ssh_ready_timeout_sec") if isinstance(budget, Mapping) else None
        if ready is None:
            ready = BudgetSpec().ssh_ready_timeout_sec
    if type(ready) is not int or ready < 1:
        return
    from pegboard.adapters.ssh_connection import SshTarget, prestart

    key = configured_key_path(attrs.evolve(defaults, key_path=key_path, use_agent=use_agent), home)
    target = SshTarget(
        host=host, port=port, user=user, key_path=key or None, use_agent=use_agent, pod=host
    )
    prestart(target, min(MAX_CONNECT_TIMEOUT_SEC, float(ready)))


def _place_of(locator: SshLocator) -> tuple[str, str] | None:
    """One place per machine and workspaces root (two runs' pin files do not make two)."""
    if not locator.host:
        return None
    name = f"{locator.user}@{locator.host}:{locator.port}"
    return f"{name} {locator.workspaces_root} {locator.key_path} {locator.use_agent}", name


PLUGIN = ProviderPlugin(
    name=SSH_PROVIDER,
    summary="a machine you already have, over SSH (ssh.host; nothing billed)",
    locator_type=SshLocator,
    build=_build,
    locator_from_config=_from_config,
    sections=(SSH_SECTION,),
    # Nothing to pick an image, a datacenter or a GPU type from: optional (recorded when given).
    pod_defaults={"image": "ssh-host", "datacenters": ["ssh-host"], "gpu_order": ["SSH-HOST"]},
    check_access=key_file_problems,
    place_of=_place_of,
    early_contact=_early_contact,
    billed=False,
    gpu_catalog=False,
    live_stock=False,
    no_stock_note="the pod is the machine ssh.host names",
)
