"""A container's volumes are its own: emptyDir and PersistentVolumeClaim volumes mounted at their
mountPaths in a private mount namespace, seen the same by `kubectl exec` and `kubectl cp`; a
claim's data outlives its pods and goes with the claim."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from helpers.components import in_ci, require_executable
from helpers.kubectl import Kubectl
from helpers.kubernetes_sandbox import pod_manifest, wait_phase, wait_until
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.kubernetes.scheduling import Hindrance, scheduling_verdict


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        if running.volume_isolation is not None:
            reason = f"containers cannot get their own mounts here: {running.volume_isolation}"
            if in_ci():
                pytest.fail(f"{reason}; CI runs as root with util-linux", pytrace=False)
            pytest.skip(reason)
        yield running


@pytest.fixture(scope="module")
def core(sandbox: KubernetesSandbox) -> kubernetes.client.CoreV1Api:
    api = kubernetes.config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))
    return kubernetes.client.CoreV1Api(api)


@pytest.fixture(scope="module")
def kubectl(sandbox: KubernetesSandbox, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    path = require_executable("kubectl", path="/usr/bin/kubectl", install_hint="kubectl >= 1.31")
    return Kubectl(path, sandbox, tmp_path_factory.mktemp("kubectl-home"))


def with_volume(
    name: str, command: list[str], volume: dict[str, Any], mount_path: str, **container: Any
) -> dict[str, Any]:
    manifest = pod_manifest(
        name,
        command,
        volumeMounts=[{"name": "vol", "mountPath": mount_path, **container.pop("mount", {})}],
        **container,
    )
    manifest["spec"]["volumes"] = [{"name": "vol", **volume}]
    return manifest


def claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def test_two_pods_each_have_their_own_workspace(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api, kubectl: Kubectl
) -> None:
    marker = f"marker-{secrets.token_hex(4)}"
    for name in ("ws-one", "ws-two"):
        core.create_namespaced_pod(
            "default",
            with_volume(
                name,
                ["sh", "-c", f"echo {name} > /workspace/{marker}; sleep 600"],
                {"emptyDir": {}},
                "/workspace",
                workingDir="/workspace",
            ),
        )
    for name in ("ws-one", "ws-two"):
        wait_phase(sandbox, name, "Running")
        seen = wait_until(
            lambda n=name: (
                kubectl("exec", n, "--", "sh", "-c", f"pwd; ls; cat {marker}", ok=False).stdout
                if kubectl(
                    "exec", n, "--", "test", "-e", f"/workspace/{marker}", ok=False
                ).returncode
                == 0
                else None
            ),
            what=f"{name}'s marker",
        )
        assert seen.splitlines() == ["/workspace", marker, name]
    assert not Path("/workspace", marker).exists()  # the host's /workspace never saw it


def test_kubectl_cp_and_exec_see_the_containers_volume(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api, kubectl: Kubectl, tmp_path: Path
) -> None:
    require_executable("tar", install_hint="kubectl cp runs tar in the container")
    core.create_namespaced_pod(
        "default",
        with_volume(
            "cp-target",
            ["sh", "-c", "until [ -e /work/in/done ]; do sleep 0.05; done; wc -c < /work/in/data.bin > /work/size; sleep 600"],
            {"emptyDir": {}},
            "/work",
        ),
    )  # fmt: skip
    wait_phase(sandbox, "cp-target", "Running")
    upload = tmp_path / "in"
    upload.mkdir()
    payload = os.urandom(300_000)
    (upload / "data.bin").write_bytes(payload)
    (upload / "done").write_text("")
    kubectl("cp", str(upload), "cp-target:/work/in")
    wait_until(
        lambda: kubectl("exec", "cp-target", "--", "cat", "/work/size", ok=False).stdout.strip(),
        what="the container's own read of the upload",
    )
    assert kubectl("exec", "cp-target", "--", "cat", "/work/size").stdout.strip() == str(
        len(payload)
    )
    kubectl("cp", "cp-target:/work/in/data.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == payload


def test_an_init_container_fills_the_volume_the_app_container_reads(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    manifest = with_volume("init-fill", ["cat", "/shared/greeting"], {"emptyDir": {}}, "/shared")
    manifest["spec"]["initContainers"] = [
        {"name": "fill", "image": "alpine", "command": ["sh", "-c", "echo from init > /shared/greeting"],
         "volumeMounts": [{"name": "vol", "mountPath": "/shared"}]}
    ]  # fmt: skip
    core.create_namespaced_pod("default", manifest)
    wait_phase(sandbox, "init-fill", "Succeeded")
    assert sandbox.log_bytes("init-fill") == b"from init\n"


def test_a_read_only_mount_refuses_writes(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_pod(
        "default",
        with_volume(
            "read-only",
            ["sh", "-c", "touch /ro/x 2>/dev/null && echo wrote || echo refused"],
            {"emptyDir": {}},
            "/ro",
            mount={"readOnly": True},
        ),
    )
    wait_phase(sandbox, "read-only", "Succeeded")
    assert sandbox.log_bytes("read-only") == b"refused\n"


def test_a_claims_data_outlives_its_pods_and_goes_with_the_claim(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    created = core.create_namespaced_persistent_volume_claim("default", claim("results"))
    assert created.status.phase == "Bound"
    assert created.spec.volume_name == f"pvc-{created.metadata.uid}"
    assert created.status.capacity == {"storage": "1Gi"}
    volume = {"persistentVolumeClaim": {"claimName": "results"}}
    core.create_namespaced_pod(
        "default", with_volume("writer", ["sh", "-c", "echo kept > /data/result"], volume, "/data")
    )
    wait_phase(sandbox, "writer", "Succeeded")
    core.delete_namespaced_pod("writer", "default")
    core.create_namespaced_pod(
        "default", with_volume("reader", ["cat", "/data/result"], volume, "/data")
    )
    wait_phase(sandbox, "reader", "Succeeded")
    assert sandbox.log_bytes("reader") == b"kept\n"
    directory = sandbox.kubelet.claim_directory("default", "results")
    assert (directory / "result").read_text() == "kept\n"
    listed = core.list_namespaced_persistent_volume_claim("default").items
    assert [c.metadata.name for c in listed] == ["results"]
    core.delete_namespaced_persistent_volume_claim("results", "default")
    core.delete_namespaced_pod("reader", "default")
    wait_until(lambda: not directory.exists(), what="the claim's directory removed")
    core.create_namespaced_persistent_volume_claim("default", claim("results"))
    core.create_namespaced_pod(
        "default", with_volume("fresh", ["sh", "-c", "ls -A /data | wc -l"], volume, "/data")
    )
    wait_phase(sandbox, "fresh", "Succeeded")
    assert sandbox.log_bytes("fresh").strip() == b"0"  # a new claim of the same name is empty


def test_a_claim_without_access_modes_or_size_is_invalid(core: kubernetes.client.CoreV1Api) -> None:
    with pytest.raises(kubernetes.client.ApiException) as refused:
        core.create_namespaced_persistent_volume_claim(
            "default", {"metadata": {"name": "bad"}, "spec": {}}
        )
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["message"] == (
        'PersistentVolumeClaim "bad" is invalid: [spec.accessModes: Required value: at least 1 '
        "access mode is required, spec.resources[storage]: Required value]"
    )


def test_without_isolation_containers_share_the_hosts_files(tmp_path: Path) -> None:
    with KubernetesSandbox(kill_grace_seconds=0.2, isolate_volumes=False) as plain:
        assert plain.volume_isolation == "turned off (isolate_volumes=False)"
        api = kubernetes.config.new_client_from_config(config_file=str(plain.kubeconfig_path))
        target = tmp_path / "host-dir"
        kubernetes.client.CoreV1Api(api).create_namespaced_pod(
            "default",
            with_volume("on-host", ["sh", "-c", f"mkdir -p {target}; echo hi > {target}/f"],
                        {"emptyDir": {}}, str(target)),
        )  # fmt: skip
        wait_phase(plain, "on-host", "Succeeded")
        assert (target / "f").read_text() == "hi\n"


def test_a_pod_waits_for_a_missing_claim_and_runs_once_it_exists(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    volume = {"persistentVolumeClaim": {"claimName": "late"}}
    core.create_namespaced_pod(
        "default", with_volume("claim-waiter", ["sh", "-c", "echo ok > /d/f"], volume, "/d")
    )
    expected = (
        '0/1 nodes are available: persistentvolumeclaim "late" not found. preemption: 0/1 nodes '
        "are available: 1 Preemption is not helpful for scheduling."
    )

    def failed() -> list[str]:
        return [e["message"] for e in sandbox.events() if e["reason"] == "FailedScheduling"
                and e["involvedObject"]["name"] == "claim-waiter"]  # fmt: skip

    assert wait_until(failed, what="FailedScheduling") == [expected]
    pod = sandbox.pod("claim-waiter")
    assert pod is not None and pod["status"]["phase"] == "Pending"
    verdict = scheduling_verdict(pod, sandbox.events())
    assert verdict.reasons == {Hindrance.VOLUME}
    assert not verdict.another_type_may_help
    core.create_namespaced_persistent_volume_claim("default", claim("late"))
    wait_phase(sandbox, "claim-waiter", "Succeeded")
    assert (sandbox.kubelet.claim_directory("default", "late") / "f").read_text() == "ok\n"
