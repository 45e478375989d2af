"""KubernetesGpuCloud on FakeCluster: the pod it asks for, the GPU-type walk on unschedulable
pods, and what each lifecycle call leaves (pods, claims), in virtual time."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard.adapters.fakes.cluster import FakeCluster, PodScript
from pegboard.adapters.providers.kubernetes.gpu_cloud import KubernetesGpuCloud
from pegboard.adapters.providers.kubernetes.pod_objects import (
    CONTAINER,
    GpuPodSettings,
    tool_selector,
)
from pegboard.domain.errors import NoCandidateHelps, NotFound, Transient
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    CreateOutcomeUnknown,
    NoCapacity,
    PodRequest,
)

CLAIM = ResourceKind.PERSISTENT_VOLUME_CLAIM
RUN = "train-20261202T003000.123456Z-ab12"
GPU_LABEL = "nvidia.com/gpu.product"
SHORT = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available."
)


def gpu_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["nodeSelector"][GPU_LABEL])


@pytest.fixture
def cluster() -> FakeCluster:
    fake = FakeCluster()
    fake.default_script = PodScript().running(at=1)
    return fake


def cloud_on(cluster: FakeCluster, **kwargs: Any) -> KubernetesGpuCloud:
    settings = kwargs.pop("settings", GpuPodSettings(created_by="Jane Doe"))
    return KubernetesGpuCloud(
        cluster, namespace="default", clock=cluster.clock, settings=settings, **kwargs
    )


def request(**overrides: Any) -> PodRequest:
    values: dict[str, Any] = {
        "name": RUN,
        "image": "ghcr.io/acme/train:1",
        "gpu_id": "NVIDIA-A100-SXM4-80GB",
        "datacenter_id": "cluster",
        "gpu_count": 2,
        "volume_gb": 50,
        "container_disk_gb": 30,
    }
    values.update(overrides)
    return PodRequest(**values)


def test_the_pod_asks_for_the_gpus_by_resource_and_node_label(cluster: FakeCluster) -> None:
    cloud = cloud_on(cluster)
    handle = cloud.create_pod(request(min_vcpu_count=8, min_memory_gb=64))
    pod = cluster.pod(handle.pod_id)
    (container,) = pod["spec"]["containers"]
    assert container["name"] == CONTAINER and container["image"] == "ghcr.io/acme/train:1"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert container["resources"]["limits"]["ephemeral-storage"] == "30Gi"
    # The apiserver defaults a request equal to each limit that has none (the GPUs).
    assert container["resources"]["requests"] == {
        "nvidia.com/gpu": "2",
        "ephemeral-storage": "30Gi",
        "cpu": "8",
        "memory": "64Gi",
    }
    assert pod["spec"]["nodeSelector"] == {GPU_LABEL: "NVIDIA-A100-SXM4-80GB"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"][
        "tolerations"
    ]
    meta = pod["metadata"]["labels"]
    assert meta[labels.MANAGED_BY] == "squarepeg"
    assert meta[labels.CREATED_BY] == "Jane-Doe"
    assert meta[labels.RUN_ID] == RUN  # a valid label value as it is
    assert meta[labels.KEEP] == "true"  # never an orphan of squarepeg's sweep
    assert handle.pod_id.startswith("train-20261202t003000-123456z-ab12-")
    mounts = container["volumeMounts"]
    assert mounts == [{"name": "workspace", "mountPath": "/workspace"}]
    (volume,) = pod["spec"]["volumes"]
    assert volume["persistentVolumeClaim"] == {"claimName": handle.pod_id}
    claim = cluster.read(CLAIM, handle.pod_id, namespace="default")
    assert claim is not None
    assert claim["spec"]["resources"]["requests"]["storage"] == "50Gi"


def test_a_custom_resource_and_label_name_the_gpu_and_a_storage_class_the_claim(
    cluster: FakeCluster,
) -> None:
    settings = GpuPodSettings(
        gpu_resource="amd.com/gpu",
        gpu_label="cloud.google.com/gke-accelerator",
        created_by="jane",
        storage_class="fast",
    )
    handle = cloud_on(cluster, settings=settings).create_pod(request(gpu_id="mi300x"))
    pod = cluster.pod(handle.pod_id)
    assert pod["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"] == "2"
    assert pod["spec"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "mi300x"}
    claim = cluster.read(CLAIM, handle.pod_id, namespace="default")
    assert claim is not None and claim["spec"]["storageClassName"] == "fast"


def test_ephemeral_without_a_volume_size_is_an_empty_dir_and_no_claim(cluster: FakeCluster) -> None:
    handle = cloud_on(cluster).create_pod(request(volume_gb=None))
    (volume,) = cluster.pod(handle.pod_id)["spec"]["volumes"]
    assert volume == {"name": "workspace", "emptyDir": {}}
    assert cluster.list(CLAIM, namespace="default") == []


def test_empty_dir_workspaces_where_the_cluster_has_no_claims_to_give(
    cluster: FakeCluster,
) -> None:
    settings = GpuPodSettings(created_by="jane", ephemeral_claims=False)
    handle = cloud_on(cluster, settings=settings).create_pod(request(volume_gb=40))
    (volume,) = cluster.pod(handle.pod_id)["spec"]["volumes"]
    assert volume == {"name": "workspace", "emptyDir": {"sizeLimit": "40Gi"}}
    assert cluster.list(CLAIM, namespace="default") == []


def test_an_unschedulable_type_is_deleted_with_its_claim_and_refused_as_no_capacity(
    cluster: FakeCluster,
) -> None:
    cluster.script_pod(lambda pod: gpu_of(pod) == "H100", PodScript().unschedulable(SHORT))
    cloud = cloud_on(cluster, schedule_timeout_sec=30)
    started = cluster.clock.monotonic()
    with pytest.raises(NoCapacity, match=r"Insufficient nvidia\.com/gpu") as caught:
        cloud.create_pod(request(gpu_id="H100"))
    assert "H100 x2" in str(caught.value) and "30s" in str(caught.value)
    assert cluster.clock.monotonic() - started >= 30  # waited the whole bounded wait
    assert cluster.pods == [] and cluster.list(CLAIM, namespace="default") == []
    # The next type of the walk binds.
    handle = cloud.create_pod(request(gpu_id="A100"))
    cluster.advance(2)
    assert cloud.get_pod(handle.pod_id).desired_status == POD_RUNNING


def test_a_type_placed_within_the_wait_binds(cluster: FakeCluster) -> None:
    # The autoscaler adds a node after 20 s: the pod is placed then and runs.
    cluster.script_pod(
        lambda pod: gpu_of(pod) == "L4",
        PodScript().unschedulable(SHORT).placed(at=20).running(at=21),
    )
    cloud = cloud_on(cluster, schedule_timeout_sec=60)
    handle = cloud.create_pod(request(gpu_id="L4"))
    cluster.advance(1)
    assert cloud.get_pod(handle.pod_id).desired_status == POD_RUNNING


def test_a_missing_claim_stops_the_walk(cluster: FakeCluster) -> None:
    message = '0/3 nodes are available: persistentvolumeclaim "models" not found.'
    cluster.script_pod(lambda pod: True, PodScript().unschedulable(message))
    with pytest.raises(NoCandidateHelps, match="models"):
        cloud_on(cluster, schedule_timeout_sec=5).create_pod(
            request(network_volume_id="models", volume_gb=None)
        )
    assert cluster.pods == []


def test_a_create_the_server_may_have_done_is_an_unknown_outcome(cluster: FakeCluster) -> None:
    cluster.fail_next("create", Transient("connection reset"), when=lambda r: r.kind == "Pod")
    with pytest.raises(CreateOutcomeUnknown):
        cloud_on(cluster).create_pod(request())


def test_stop_keeps_the_claim_and_resume_makes_a_new_pod_on_it(cluster: FakeCluster) -> None:
    cloud = cloud_on(cluster)
    handle = cloud.create_pod(request())
    cluster.advance(2)
    first_uid = cluster.pod(handle.pod_id)["metadata"]["uid"]
    cluster.advance(100)
    cloud.stop_pod(handle.pod_id)
    stopped = cloud.get_pod(handle.pod_id)
    assert stopped.desired_status == POD_EXITED and stopped.name == RUN
    assert stopped.stopped_at == pytest.approx(cluster.clock.now(), abs=1)
    assert [p.pod_id for p in cloud.list_pods(status=POD_EXITED)] == [handle.pod_id]
    cloud.resume_pod(handle.pod_id, gpu_count=4)
    cluster.advance(2)
    resumed = cluster.pod(handle.pod_id)
    assert resumed["metadata"]["uid"] != first_uid
    assert resumed["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == handle.pod_id
    assert resumed["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
    status = cloud.get_pod(handle.pod_id)
    assert status.desired_status == POD_RUNNING and status.stopped_at is None


def test_stop_of_a_pod_without_its_own_claim_leaves_nothing(cluster: FakeCluster) -> None:
    cloud = cloud_on(cluster)
    handle = cloud.create_pod(request(volume_gb=None))
    cloud.stop_pod(handle.pod_id)
    cluster.advance(15)
    with pytest.raises(NotFound):
        cloud.get_pod(handle.pod_id)


def test_terminate_deletes_the_pod_and_its_own_claim_never_a_network_volume(
    cluster: FakeCluster,
) -> None:
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "models"},
            "spec": {"resources": {"requests": {"storage": "100Gi"}}},
        },
        namespace="default",
    )
    cloud = cloud_on(cluster)
    volume = cloud.network_volume("models")
    assert volume is not None and (volume.volume_id, volume.size_gb) == ("models", 100)
    assert volume.datacenter_id is None
    assert cloud.network_volume("nope") is None
    on_volume = cloud.create_pod(request(network_volume_id="models", volume_gb=None))
    own = cloud.create_pod(request(name="train-20261202T003001.000000Z-cd34"))
    cloud.terminate_pod(on_volume.pod_id)
    cloud.terminate_pod(own.pod_id)
    assert cluster.pods == []
    names = [c["metadata"]["name"] for c in cluster.list(CLAIM, namespace="default")]
    assert names == ["models"]
    cloud.terminate_pod(own.pod_id)  # already gone: not an error
    with pytest.raises(NotFound):
        cloud.stop_pod(own.pod_id)


def test_listing_is_scoped_to_this_users_runpod_deploy_pods(cluster: FakeCluster) -> None:
    mine = cloud_on(cluster).create_pod(request())
    theirs = cloud_on(cluster, settings=GpuPodSettings(created_by="bob")).create_pod(request())
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "plain",
                "labels": {labels.MANAGED_BY: "squarepeg", labels.CREATED_BY: "Jane-Doe"},
            },
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
        namespace="default",
    )
    assert [p.pod_id for p in cloud_on(cluster).list_pods()] == [mine.pod_id]
    assert [p.pod_id for p in cloud_on(cluster).find_pods(name=RUN)] == [mine.pod_id]
    assert (
        cluster.list(ResourceKind.POD, namespace="default", label_selector=tool_selector("bob"))[0][
            "metadata"
        ]["name"]
        == theirs.pod_id
    )
    with pytest.raises(NotFound):  # not ours to report on
        cloud_on(cluster).get_pod("plain")


def test_stock_is_the_first_datacenter_only_and_prices_are_the_configured_ones(
    cluster: FakeCluster,
) -> None:
    cloud = cloud_on(cluster, prices={"A100": 1.5})
    stock = cloud.gpu_availability(
        gpu_ids=["A100", "L4"], datacenter_ids=["c1", "c2"], cloud_type="SECURE"
    )
    assert {(s.gpu_id, s.datacenter_id): s.stock for s in stock} == {
        ("A100", "c1"): "high",
        ("L4", "c1"): "high",
        ("A100", "c2"): "none",
        ("L4", "c2"): "none",
    }
    assert cloud.gpu_prices(cloud_type="SECURE") == {"A100": 1.5}
    handle = cloud.create_pod(request(gpu_id="A100"))
    assert cloud.get_pod(handle.pod_id).cost_per_hour_usd == pytest.approx(3.0)  # 2 GPUs


def test_a_pod_is_priced_as_its_creating_run_said_whoever_lists_it(cluster: FakeCluster) -> None:
    """ls-stale lists every pod of a namespace with one run's settings: each pod is priced at
    what its own run configured (none: no price), not at the lister's prices."""
    priced = cloud_on(cluster, prices={"A100": 1.5}).create_pod(request(gpu_id="A100")).pod_id
    unpriced = cloud_on(cluster).create_pod(request(name=RUN + "cd", gpu_id="A100")).pod_id
    other_prices = cloud_on(cluster, prices={"A100": 9.0})
    costs = {p.pod_id: p.cost_per_hour_usd for p in other_prices.list_pods()}
    assert costs == {priced: pytest.approx(3.0), unpriced: None}
    # A pod made before pods recorded their price: the lister's price, as before.
    cluster.patch(
        ResourceKind.POD,
        priced,
        {"metadata": {"annotations": {"pegboard.io/price-per-gpu-hour": None}}},
        namespace="default",
    )
    assert other_prices.get_pod(priced).cost_per_hour_usd == pytest.approx(18.0)


def test_a_runpod_gpu_id_selects_the_node_label_gpu_feature_discovery_writes(
    cluster: FakeCluster,
) -> None:
    handle = cloud_on(cluster).create_pod(request(gpu_id="NVIDIA RTX  A4000"))
    pod = cluster.pod(handle.pod_id)
    assert pod["spec"]["nodeSelector"] == {GPU_LABEL: "NVIDIA-RTX-A4000"}
    assert cloud_on(cluster).get_pod(handle.pod_id).gpu_id == "NVIDIA RTX  A4000"
