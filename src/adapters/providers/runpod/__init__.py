"""`pod.provider: runpod` (the default): GPU pods rented from a RunPod account over its REST
API v2 (RUNPOD_API_KEY or ~/.runpod/config.toml, RUNPOD_API_BASE_URL), each reached over SSH
at the endpoint it publishes, with the `ssh:` section's key (docs/runpod-deploy/).

Its locator is the key to log in with and the run's pinned host key file (else one file per pod
beside the user's pointers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pegboard.adapters.ssh_section import (
    MAX_CONNECT_TIMEOUT_SEC,
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
from pegboard.domain.ports.backend import Backend

from .locator import RunPodLocator

if TYPE_CHECKING:
    from pegboard.domain.gpujob.spec import JobSpec

RUNPOD_PROVIDER = "runpod"


def _build(context: BuildContext, locator: RunPodLocator | None) -> Backend:
    from .backend import runpod_backend

    return runpod_backend(context, locator or RunPodLocator())


def _from_config(spec: JobSpec, context: LocatorContext) -> RunPodLocator:
    ssh: SshSpec = spec.section("ssh")
    return RunPodLocator(
        key_path=configured_key_path(ssh, context.home),
        use_agent=ssh.use_agent,
        known_hosts=str(pinned_host_keys_path(context.run_pointer)),
        connect_timeout=min(MAX_CONNECT_TIMEOUT_SEC, float(context.ready_timeout_sec)),
    )


PLUGIN = ProviderPlugin(
    name=RUNPOD_PROVIDER,
    summary="GPU pods rented from your RunPod account (REST API v2), reached over SSH",
    locator_type=RunPodLocator,
    build=_build,
    locator_from_config=_from_config,
    sections=(SSH_SECTION,),
    check_access=key_file_problems,
)
