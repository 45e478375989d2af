"""The loopback sandboxes as context managers, for tests outside pytest fixtures.

    with kubernetes_sandbox() as sandbox:      # a Kubernetes API on 127.0.0.1 (docs/sandbox.md)
        Squarepeg(kubeconfig=sandbox.kubeconfig_path).run("alpine", "echo", "hi")

What a test may rely on (public): a Kubernetes sandbox's `kubeconfig_path`, `url`, `context`,
`namespace` and `faults` (docs/sandbox.md); a RunPod sandbox's `url`, `api_key`, `environ()`,
`faults` and `catalog` (docs/runpod.md). Keyword options are passed to the sandbox as
`squarepeg sandbox` / `runpod-deploy sandbox` would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
    from pegboard.adapters.sandboxes.runpod import RunPodSandbox

__all__ = ["kubernetes_sandbox", "runpod_sandbox"]


@contextmanager
def kubernetes_sandbox(**options: Any) -> Iterator[KubernetesSandbox]:
    """A started KubernetesSandbox (HTTPS, a kubeconfig in its own temp directory); stopped,
    every container killed, when the block ends."""
    from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

    with KubernetesSandbox(**options) as sandbox:
        yield sandbox


@contextmanager
def runpod_sandbox(**options: Any) -> Iterator[RunPodSandbox]:
    """A started RunPodSandbox (`ssh=True`: each pod a real sshd, for runs that log in)."""
    from pegboard.adapters.sandboxes.runpod import RunPodSandbox

    with RunPodSandbox(**options) as sandbox:
        yield sandbox
