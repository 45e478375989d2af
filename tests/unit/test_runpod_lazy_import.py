"""The RunPod adapter and sandbox import without the `runpod` SDK (it costs ~1.4 s to import
and is an optional extra): only a call that talks to RunPod imports it."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_adapter_and_the_sandbox_does_not_import_the_sdk() -> None:
    probe = (
        "import sys; sys.modules['runpod'] = None\n"  # as if the extra were not installed
        "import pegboard.adapters.runpod, pegboard.adapters.sandboxes.runpod\n"
        "from pegboard.adapters.runpod import RunPodGpuCloud\n"
        "cloud = RunPodGpuCloud(environ={'RUNPOD_API_KEY': 'k'})\n"
        "try:\n"
        "    cloud.gpu_prices(cloud_type='SECURE')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == (
        "RunPodSdkMissing pod.provider runpod needs the RunPod SDK, which is not installed: "
        "pip install 'pegboard[runpod]'\n"
    )
