"""GpuCloud contract against RunPodGpuCloud (REST v2 over HTTP) on the RunPod API sandbox; every
request the adapter sends is held to RunPod's published document, and none is GraphQL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from contract.gpu_cloud_contract import GpuCloudContract
from helpers.runpod_openapi import validate_received_requests
from pegboard.adapters.runpod import RunPodGpuCloud
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.domain.ports.gpu_cloud import PodRequest


class _Driver:
    volume_name = "pid-workspace-100gb"  # the sandbox's default volume (examples/runpod use it)
    unknown_volume_name = "no-such-volume"

    def __init__(self, cloud: RunPodGpuCloud) -> None:
        self.cloud = cloud

    def request(self, name: str) -> PodRequest:
        return PodRequest(
            name=name,
            image="runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
            gpu_id="NVIDIA RTX A4000",
            datacenter_id="EU-RO-1",
            volume_gb=20,
        )

    def settle(self) -> None:
        time.sleep(0.01)


class TestRunPodGpuCloudContract(GpuCloudContract):
    @pytest.fixture
    def driver(self, runpod_cloud: RunPodGpuCloud, runpod_sandbox: RunPodSandbox) -> Iterator[Any]:
        yield _Driver(runpod_cloud)
        # After each contract test: what the adapter sent is what RunPod's document allows.
        validate_received_requests(runpod_sandbox.received_v2)
        assert runpod_sandbox.received == []  # no GraphQL
