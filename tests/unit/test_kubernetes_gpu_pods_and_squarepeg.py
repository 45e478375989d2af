"""runpod-deploy's GPU pods as squarepeg sees them (same labels): `squarepeg clean` never takes one
as an orphan, `clean --include-kept` removes a finished one of this user only, never a running
one, and runpod-deploy's listing then shows what is left (the claim: a stopped pod)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from dependency_injector import providers

from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.providers.kubernetes.gpu_cloud import KubernetesGpuCloud
from pegboard.adapters.providers.kubernetes.pod_objects import GpuPodSettings
from pegboard.app.squarepeg.clean_use_case import execute_clean
from pegboard.app.squarepeg.container import Container
from pegboard.domain.ports.gpu_cloud import POD_EXITED, PodRequest

USER = "jane"


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


@pytest.fixture
def container(cluster: FakeCluster, tmp_path: Any) -> Iterator[tuple[Container, io.StringIO]]:
    c = Container()
    out = io.StringIO()
    with c.override_providers(
        cluster=providers.Object(cluster),
        clock=providers.Object(cluster.clock),
        stdout=providers.Object(out),
        stderr=providers.Object(io.StringIO()),
        environ=providers.Object({"HOME": str(tmp_path), "LOGNAME": USER}),
        user_name=providers.Object(USER),
    ):
        yield c, out


def gpu_pod(cluster: FakeCluster, name: str, *, user: str = USER, ends: bool) -> str:
    script = PodScript().running(at=1)
    cluster.script_pod(
        lambda pod: pod["metadata"]["labels"]["squarepeg.io/run-id"] == name,
        script.exit(0, at=5) if ends else script,
    )
    cloud = KubernetesGpuCloud(
        cluster, namespace="default", clock=cluster.clock, settings=GpuPodSettings(created_by=user)
    )
    request = PodRequest(name=name, image="img", gpu_id="L4", datacenter_id="c", volume_gb=1)
    return cloud.create_pod(request).pod_id


def test_the_orphan_sweep_never_takes_a_gpu_pod(
    cluster: FakeCluster, container: tuple[Container, io.StringIO]
) -> None:
    gpu_pod(cluster, "run-ended", ends=True)
    cluster.advance(3600)
    c, _ = container
    assert execute_clean(c.seams(), c.cluster_ports(), min_age=0, no_default_config=True) == 0
    assert len(cluster.pods) == 1  # kept: runpod-deploy's lifecycle decides


def test_clean_include_kept_takes_only_this_users_finished_gpu_pods(
    cluster: FakeCluster, container: tuple[Container, io.StringIO]
) -> None:
    ended = gpu_pod(cluster, "run-ended", ends=True)
    running = gpu_pod(cluster, "run-running", ends=False)
    theirs = gpu_pod(cluster, "run-theirs", user="bob", ends=True)
    cluster.advance(3600)
    c, _ = container
    code = execute_clean(
        c.seams(),
        c.cluster_ports(),
        min_age=0,
        include_kept=True,
        yes=True,
        no_default_config=True,
    )
    assert code == 0
    assert {p["metadata"]["name"] for p in cluster.pods} == {running, theirs}
    # What runpod-deploy lists now: the ended run's claim, as a stopped pod with a disk.
    cloud = KubernetesGpuCloud(
        cluster, namespace="default", clock=cluster.clock, settings=GpuPodSettings(created_by=USER)
    )
    assert [(p.pod_id, p.desired_status) for p in cloud.list_pods(status=POD_EXITED)] == [
        (ended, POD_EXITED)
    ]
