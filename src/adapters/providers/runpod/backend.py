"""The RunPod provider's ports: the account's RunPodGpuCloud, and each pod over SSH with the
ssh provider's adapters (RunPodPodSsh), its host key pinned in the run's pin file (a
pointer's), else in one file per pod beside the user's pointers. New pods get the user's public
key in their PUBLIC_KEY, which RunPod's images put in root's authorized_keys."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from pegboard.adapters.providers.runpod.pod_ssh import RunPodPodSsh, authorized_key
from pegboard.adapters.runpod import RunPodGpuCloud
from pegboard.adapters.ssh_keys import check_ssh_key
from pegboard.domain.errors import PortError, UsageError
from pegboard.domain.gpujob.provider_plugin import BuildContext
from pegboard.domain.ports.backend import Backend

from .locator import RunPodLocator

logger = logging.getLogger(__name__)

RUNPOD_INSTALL_HINT = "reinstall pegboard (the RunPod adapter needs only the standard library)"


def check_runpod_account(environ: Mapping[str, str], home: str) -> None:
    """The RunPod adapter is installed and an API key is there (not checked against RunPod)."""
    try:
        from pegboard.adapters.runpod.credentials import api_key
    except ImportError as exc:  # an optional dependency of the adapter is missing
        raise UsageError(
            f"pod.provider runpod is not available in this install ({exc}); {RUNPOD_INSTALL_HINT}"
        ) from None
    try:
        api_key(environ, Path(home))
    except PortError as exc:
        raise UsageError(f"pod.provider runpod: {exc}") from None


def _expand_home(path: str | None, home: str) -> str | None:
    if path == "~" or (path is not None and path.startswith("~/")):
        return os.path.join(home, path[2:])
    return path or None


def runpod_backend(context: BuildContext, where: RunPodLocator) -> Backend:
    environ, home = context.environ, context.home
    key_path = _expand_home(where.key_path, home)
    use_agent = where.use_agent
    known_hosts = where.known_hosts
    pins_dir = context.state_dir / "pods"

    def pin_file(pod_id: str) -> Path:
        if known_hosts:
            return Path(known_hosts)
        pins_dir.mkdir(parents=True, exist_ok=True)
        return pins_dir / (re.sub(r"[^A-Za-z0-9_-]", "_", pod_id) + ".known_hosts")

    pods = RunPodPodSsh(
        key_path=key_path,
        use_agent=use_agent,
        pin_file=pin_file,
        connect_timeout=where.connect_timeout or 10.0,
        progress=context.progress,
    )

    def pod_env() -> Mapping[str, str]:
        public = authorized_key(key_path, use_agent=use_agent)
        if not public:
            logger.warning(
                "[provision] no public key found for ssh.key_path %s (nor in the agent): the "
                "pod trusts only the keys in your RunPod account settings",
                key_path,
            )
        return {"PUBLIC_KEY": public} if public else {}

    account = RunPodGpuCloud(environ=environ, home=home)

    def check_usable() -> None:
        check_runpod_account(environ, home)
        check_ssh_key(key_path, use_agent=use_agent)

    def close() -> None:
        pods.close()
        account.close()

    return Backend(
        cloud=account,
        open_shell=pods.open_shell,
        open_sync=pods.open_sync,
        check_usable=check_usable,
        locator=RunPodLocator(key_path=key_path, use_agent=use_agent, known_hosts=known_hosts),
        close=close,
        pod_env=pod_env,
    )
