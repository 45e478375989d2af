"""runpod-deploy's GPU pods as squarepeg sees them (same labels): `squarepeg clean` never takes one
as an orphan; `clean --include-kept` and `rm` remove a finished one of this user only, never a
running one, with its own claim (its disk bills), unless its run asked to keep the workspace
(preserve, recycle): then the claim stays, and runpod-deploy lists it as a stopped pod."""

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
from pegboard.app.squarepeg.remove_use_case import execute_remove
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.ports.gpu_cloud import POD_EXITED, PodRequest

USER = "jane"


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


@pytest.fixture
def err() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def container(
    cluster: FakeCluster, tmp_path: Any, err: io.StringIO
) -> Iterator[tuple[Container, io.StringIO]]:
    c = Container()
    out = io.StringIO()
    with c.override_providers(
        cluster=providers.Object(cluster),
        clock=providers.Object(cluster.clock),
        stdout=providers.Object(out),
        stderr=providers.Object(err),
        environ=providers.Object({"HOME": str(tmp_path), "LOGNAME": USER}),
        user_name=providers.Object(USER),
    ):
        yield c, out


def gpu_cloud(cluster: FakeCluster, user: str = USER) -> KubernetesGpuCloud:
    return KubernetesGpuCloud(
        cluster, namespace="default", clock=cluster.clock, settings=GpuPodSettings(created_by=user)
    )


def gpu_pod(cluster: FakeCluster, name: str, *, user: str = USER, ends: bool) -> str:
    script = PodScript().running(at=1)
    cluster.script_pod(
        lambda pod: pod["metadata"]["labels"]["squarepeg.io/run-id"] == name,
        script.exit(0, at=5) if ends else script,
    )
    request = PodRequest(name=name, image="img", gpu_id="L4", datacenter_id="c", volume_gb=1)
    return gpu_cloud(cluster, user).create_pod(request).pod_id


def clean_kept(c: Container, **options: Any) -> int:
    """`squarepeg clean --include-kept --min-age 0`, with `options`."""
    return execute_clean(
        c.seams(),
        c.cluster_ports(),
        min_age=0,
        include_kept=True,
        no_default_config=True,
        **options,
    )


def claims(cluster: FakeCluster) -> set[str]:
    listed = cluster.list(ResourceKind.PERSISTENT_VOLUME_CLAIM, namespace="default")
    return {c["metadata"]["name"] for c in listed}


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
    assert clean_kept(c, yes=True) == 0
    assert {p["metadata"]["name"] for p in cluster.pods} == {running, theirs}
    # Its claim went with it (it bills for its disk, and nobody asked to keep it): runpod-deploy
    # lists nothing of the ended run, where it used to list the claim as a stopped pod.
    assert ended not in claims(cluster) and claims(cluster) == {running, theirs}
    assert gpu_cloud(cluster).list_pods(status=POD_EXITED) == []


@pytest.mark.parametrize("action", ["preserve", "recycle"])
def test_a_workspace_its_run_asked_to_keep_stays_when_clean_takes_the_pod(
    cluster: FakeCluster, container: tuple[Container, io.StringIO], err: io.StringIO, action: str
) -> None:
    preserved = gpu_pod(cluster, "run-preserved", ends=True)
    gpu_cloud(cluster).keep_workspace(preserved, action)  # what the run's lifecycle does
    abandoned = gpu_pod(cluster, "run-killed", ends=True)
    cluster.advance(3600)
    c, out = container
    assert clean_kept(c, dry_run=True) == 0
    listed = out.getvalue()
    assert f"persistentvolumeclaim/{abandoned}" in listed
    assert f"persistentvolumeclaim/{preserved}" not in listed
    assert clean_kept(c, yes=True) == 0
    assert cluster.pods == []
    assert claims(cluster) == {preserved}
    assert [(p.pod_id, p.desired_status) for p in gpu_cloud(cluster).list_pods()] == [
        (preserved, POD_EXITED)
    ]
    assert f"persistentvolumeclaim/{preserved} kept: its run asked to keep its workspace " in (
        err.getvalue()
    )
    assert f"runpod-deploy cleanup --pod-id {preserved} --provider kubernetes" in err.getvalue()


def test_rm_of_a_gpu_pod_takes_its_claim_unless_its_run_keeps_it(
    cluster: FakeCluster, container: tuple[Container, io.StringIO], err: io.StringIO
) -> None:
    abandoned = gpu_pod(cluster, "run-killed", ends=False)  # rm takes a running one too
    preserved = gpu_pod(cluster, "run-preserved", ends=False)
    gpu_cloud(cluster).keep_workspace(preserved, "preserve")
    theirs = gpu_pod(cluster, "run-theirs", user="bob", ends=False)
    cluster.advance(10)
    c, _ = container
    code = execute_remove(
        c.seams(),
        c.cluster_ports(),
        names=[abandoned, preserved],
        confirm=lambda _: True,
        no_default_config=True,
    )
    assert code == 0
    assert {p["metadata"]["name"] for p in cluster.pods} == {theirs}
    assert claims(cluster) == {preserved, theirs}
    assert f"persistentvolumeclaim/{preserved} kept" in err.getvalue()


def test_a_resumed_pod_is_its_new_runs_to_keep_again(cluster: FakeCluster) -> None:
    pod_id = gpu_pod(cluster, "run-recycled", ends=False)
    cloud = gpu_cloud(cluster)
    cloud.keep_workspace(pod_id, "recycle")
    cloud.stop_pod(pod_id)
    cluster.advance(30)
    cloud.resume_pod(pod_id)
    claim = cluster.read(ResourceKind.PERSISTENT_VOLUME_CLAIM, pod_id, namespace="default")
    assert claim is not None
    assert "pegboard.io/keep-workspace" not in (claim["metadata"].get("annotations") or {})
