"""The ssh provider's ports: one SshProvider (one connection) per Backend; the run closes it at
its end, a pod command when the process exits."""

from __future__ import annotations

from pegboard.adapters.providers.ssh.adapters import SshProvider
from pegboard.adapters.ssh_connection import SshTarget
from pegboard.adapters.ssh_keys import check_ssh_key
from pegboard.domain.gpujob.provider_plugin import BuildContext
from pegboard.domain.ports.backend import Backend, LocatorNeeded

from .locator import SshLocator


def ssh_backend(context: BuildContext, where: SshLocator) -> Backend:
    if not where.host or where.known_hosts is None:
        raise LocatorNeeded(
            "pod.provider ssh: no host to reach (a config's ssh.host, or a state file "
            "written by a run on that host)"
        )
    target = SshTarget(
        host=where.host,
        port=where.port or 22,
        user=where.user or "root",
        key_path=where.key_path or None,
        use_agent=where.use_agent,
        pod=where.pod_id or where.host,
    )
    workspaces_root = where.workspaces_root or "~/pegboard-workspaces"
    provider = SshProvider(
        target,
        known_hosts=where.known_hosts,
        workspaces_root=workspaces_root,
        connect_timeout=where.connect_timeout or 10.0,
        progress=context.progress,
    )
    return Backend(
        cloud=provider.cloud,
        open_shell=provider.open_shell,
        open_sync=provider.open_sync,
        check_usable=lambda: check_ssh_key(target.key_path, use_agent=target.use_agent),
        warm_up=provider.connection.warm_up,
        create_proves_shell=True,  # the claim is one command over the run's one connection
        locator=SshLocator(
            host=target.host,
            port=target.port,
            user=target.user,
            key_path=target.key_path,
            use_agent=target.use_agent,
            workspaces_root=workspaces_root,
            known_hosts=where.known_hosts,
        ),
        close=provider.close,
    )
