"""runpod-deploy's composition root with some of its providers overridden: the one way a test
gets a RunDeps or a PodCommandDeps (no hand-built bags).

    deps = run_deps_with(clock=clock, backend_for=lambda provider: fake_backend)

Each keyword names a provider of RunpodDeployContainer (RunDeps' and PodCommandDeps' field
names are accepted too: `providers` is `provider_registry`, `out_bytes` is `job_output`) and
its value replaces it (KEEP: the container's own stays). A `backend_for` override without a `backend_at` one serves both, so a
run's config locator reaches the same fake backend.
"""

from __future__ import annotations

from typing import Any

from pegboard.app.runpod_deploy.container import RunpodDeployContainer
from pegboard.app.runpod_deploy.pod_access import PodCommandDeps
from pegboard.app.runpod_deploy.run_types import RunDeps
from pegboard.app.shared.dependency_injection import providers

_ALIASES = {"providers": "provider_registry", "out_bytes": "job_output"}

# A value that keeps the container's own provider (a harness default taken back).
KEEP: Any = object()


def container_with(**values: Any) -> RunpodDeployContainer:
    """A fresh container (not the process-wide one) with these providers overridden."""
    container = RunpodDeployContainer()
    values = {name: value for name, value in values.items() if value is not KEEP}
    for name, value in values.items():
        provider = getattr(container, _ALIASES.get(name, name))
        provider.override(providers.Object(value))
    if "backend_for" in values and "backend_at" not in values:
        backend_for = values["backend_for"]
        container.backend_at.override(
            providers.Object(lambda provider, locator: backend_for(provider))
        )
    return container


def run_deps_with(**values: Any) -> RunDeps:
    return container_with(**values).run_deps()


def pod_command_deps_with(**values: Any) -> PodCommandDeps:
    return container_with(**values).pod_command_deps()
