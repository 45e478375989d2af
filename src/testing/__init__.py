"""Run pegboard's use cases from your own tests (docs/testing.md), on the shipped fakes or the
loopback sandboxes, and get typed results back.

    from pegboard.testing import Squarepeg, RunpodDeploy

Importing this package is cheap (no kubernetes, runpod or dependency-injector import until a
command runs). The pytest fixtures (`fake_cluster`, `k8s_sandbox`, `runpod_sandbox`, ...) live in
`pegboard.testing.pytest_plugin`, which pytest loads through the `pegboard` entry point.
"""

from __future__ import annotations

from .results import CommandResult, DryRunResult, GpuJobRunResult, SquarepegRunResult
from .runpod_deploy import RunpodDeploy
from .sandboxes import kubernetes_sandbox, runpod_sandbox
from .squarepeg import Squarepeg

__all__ = [
    "CommandResult",
    "DryRunResult",
    "GpuJobRunResult",
    "RunpodDeploy",
    "Squarepeg",
    "SquarepegRunResult",
    "kubernetes_sandbox",
    "runpod_sandbox",
]
