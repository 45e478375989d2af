"""The RunPod adapter and sandbox never import the `runpod` SDK (~1.5-2 s of every CLI process
it used to cost, docs/runpod-api-client.md), nor any HTTP library beyond the standard library:
a call that reaches RunPod works with the SDK made unimportable; the GraphQL part loads only
for what needs it."""

from __future__ import annotations

import subprocess
import sys

from pegboard.adapters.sandboxes.runpod import RunPodSandbox


def test_the_adapter_talks_to_runpod_without_the_sdk_or_requests() -> None:
    with RunPodSandbox() as sandbox:
        probe = (
            "import sys\n"
            "for name in ('runpod', 'requests', 'urllib3', 'aiohttp'):\n"
            "    sys.modules[name] = None  # importing any of them now raises ImportError\n"
            "import pegboard.adapters.runpod, pegboard.adapters.sandboxes.runpod\n"
            "from pegboard.adapters.runpod import RunPodGpuCloud\n"
            f"cloud = RunPodGpuCloud(environ={sandbox.environ()!r})\n"
            "print(cloud.gpu_prices(cloud_type='SECURE')['NVIDIA RTX A4000'])\n"
            "print(cloud.list_pods())\n"
            "print('pegboard.adapters.runpod.graphql_legacy' in sys.modules)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    prices, pods, graphql_loaded = done.stdout.splitlines()
    assert float(prices) > 0 and pods == "[]"
    assert graphql_loaded == "False"  # only spot and min vCPU/memory load the GraphQL part
