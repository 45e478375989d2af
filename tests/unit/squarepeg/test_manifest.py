"""Passthrough over the generated manifest: Pod mode, Job mode re-homing, job.* sections."""

from __future__ import annotations

from typing import Any

import pytest

from helpers.squarepeg_requests import container, manifest, pod_spec
from pegboard.domain.errors import ConfigError
from pegboard.domain.kubernetes import labels
from pegboard.domain.squarepeg.config import JobPassthrough, RunMode, SquarepegConfig
from pegboard.domain.squarepeg.manifest import ContainerParts, PodParts, build_container, build_pod
from pegboard.domain.squarepeg.render import render_manifest
from pegboard.domain.squarepeg.request import RunRequest

FIXED: dict[str, Any] = {"environ": {}, "user": "u", "run_id": "r", "random_hex": "abcdef"}


def k8s(metadata: Any = None, spec: Any = None) -> list[dict[str, Any]]:
    section: dict[str, Any] = {}
    if metadata is not None:
        section["metadata"] = metadata
    if spec is not None:
        section["spec"] = spec
    return [{"kubernetes": section}]


def test_container_key_order() -> None:
    c = build_container(
        ContainerParts(
            name="main",
            image="i",
            command=["c"],
            args=["a"],
            working_dir="/w",
            env={"A": "1"},
            image_pull_policy="Never",
            tty=True,
            requests={"cpu": "1"},
            limits={"cpu": "1"},
            volume_mounts=[{"name": "v", "mountPath": "/v"}],
            security_context={"runAsUser": 1},
        )
    )
    assert list(c) == [
        "name", "image", "command", "args", "workingDir", "env", "imagePullPolicy", "tty",
        "stdin", "resources", "volumeMounts", "securityContext",
    ]  # fmt: skip


def test_pod_spec_key_order() -> None:
    pod = build_pod(
        PodParts(
            name="n",
            labels={},
            namespace="ns",
            container=ContainerParts(name="main", image="i"),
            runtime_class_name="nvidia",
            volumes=[{"name": "v", "emptyDir": {}}],
            hostname="h",
            host_aliases=[{"ip": "1.2.3.4", "hostnames": ["x"]}],
            node_selector={"kubernetes.io/arch": "amd64"},
        )
    )
    assert list(pod["metadata"]) == ["name", "labels", "namespace"]
    assert list(pod["spec"]) == [
        "restartPolicy", "containers", "runtimeClassName", "volumes", "hostname", "hostAliases",
        "nodeSelector",
    ]  # fmt: skip


def test_pod_passthrough_adds_what_the_cli_did_not_set() -> None:
    m = manifest(
        layers=k8s(
            metadata={"labels": {"team": "x"}, "annotations": {"a": "b"}},
            spec={
                "nodeSelector": {"pool": "gpu"},
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "containers": [{"name": "main", "env": [{"name": "FROM_CONFIG", "value": "1"}]}],
            },
        )
    )
    assert m["metadata"]["labels"]["team"] == "x"
    assert m["metadata"]["annotations"] == {"a": "b"}
    assert m["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert container(m)["env"] == [{"name": "FROM_CONFIG", "value": "1"}]


def test_sidecars_are_appended_and_need_an_image() -> None:
    m = manifest(layers=k8s(spec={"containers": [{"name": "side", "image": "busybox"}]}))
    assert [c["name"] for c in m["spec"]["containers"]] == ["main", "side"]
    with pytest.raises(ConfigError, match=r"containers\[name=main\].*no image.*'app'"):
        manifest(container_name="app", layers=k8s(spec={"containers": [{"name": "main"}]}))


def test_passthrough_containers_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match=r"kubernetes.spec.containers"):
        manifest(layers=k8s(spec={"containers": {"name": "main"}}))


def test_passthrough_can_override_unclaimed_fields() -> None:
    m = manifest(
        layers=[
            {"defaults": {"cpus": "1"}},
            {"kubernetes": {"spec": {"containers": [
                {"name": "main", "resources": {"limits": {"cpu": "2"}}}
            ]}}},
        ]
    )  # fmt: skip
    assert container(m)["resources"]["limits"]["cpu"] == "2"
    assert container(m)["resources"]["requests"]["cpu"] == "1"


def test_passthrough_env_values_become_strings() -> None:
    m = manifest(
        layers=k8s(spec={"containers": [{"name": "main", "env": [
            {"name": "I", "value": 3}, {"name": "B", "value": False}, {"name": "F", "value": 1.5},
            {"name": "R", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ]}]})
    )  # fmt: skip
    assert container(m)["env"] == [
        {"name": "I", "value": "3"},
        {"name": "B", "value": "false"},
        {"name": "F", "value": "1.5"},
        {"name": "R", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]


def test_job_rehomes_pod_passthrough_under_the_template() -> None:
    m = manifest(
        mode="job",
        layers=k8s(
            metadata={"labels": {"team": "x"}, "annotations": {"a": "b"}},
            spec={"nodeSelector": {"pool": "gpu"}},
        ),
    )
    assert m["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert "nodeSelector" not in m["spec"]
    for meta in (m["metadata"], m["spec"]["template"]["metadata"]):
        assert meta["labels"]["team"] == "x"
        assert meta["annotations"] == {"a": "b"}


def test_job_spec_merges_over_the_job_spec() -> None:
    m = manifest(mode="job", layers=[{"job": {"spec": {"ttlSecondsAfterFinished": 3600,
                                                       "activeDeadlineSeconds": 60}}}])  # fmt: skip
    assert m["spec"]["ttlSecondsAfterFinished"] == 3600
    assert m["spec"]["activeDeadlineSeconds"] == 60
    assert list(m["spec"])[-1] == "template"


def test_job_spec_template_in_config_is_rejected_clearly() -> None:
    with pytest.raises(ConfigError, match=r"job.spec: 'template'"):
        manifest(mode="job", layers=[{"job": {"spec": {"template": {"spec": {}}}}}])


def test_job_spec_template_of_a_library_config_is_merged_not_dropped() -> None:
    template = {
        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {"priorityClassName": "low", "restartPolicy": "OnFailure",
                 "containers": [{"name": "main", "image": "evil"}]},
    }  # fmt: skip
    config = SquarepegConfig(mode=RunMode.JOB, job=JobPassthrough(spec={"template": template}))
    m = render_manifest(RunRequest("alpine"), config, **FIXED)
    template_out = m["spec"]["template"]
    assert template_out["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert template_out["spec"]["priorityClassName"] == "low"
    assert template_out["spec"]["restartPolicy"] == "Never"
    assert container(m)["image"] == "alpine"


def test_job_metadata_is_merged_not_ignored() -> None:
    m = manifest(
        mode="job",
        layers=[{"job": {"metadata": {"annotations": {"owner": "me"},
                                      "labels": {labels.MANAGED_BY: "other", "x": "y"}}}}],
    )  # fmt: skip
    assert m["metadata"]["annotations"] == {"owner": "me"}
    assert m["metadata"]["labels"]["x"] == "y"
    assert m["metadata"]["labels"][labels.MANAGED_BY] == "squarepeg"


@pytest.mark.parametrize("key", ["completions", "parallelism"])
def test_job_with_more_than_one_pod_is_rejected(key: str) -> None:
    with pytest.raises(ConfigError, match=f"job.spec.{key}"):
        manifest(mode="job", layers=[{"job": {"spec": {key: 3}}}])


def test_backoff_limit_may_be_raised() -> None:
    m = manifest(mode="job", layers=[{"job": {"spec": {"backoffLimit": 2}}}])
    assert m["spec"]["backoffLimit"] == 2


def test_bad_job_template_shape() -> None:
    config = SquarepegConfig(mode=RunMode.JOB, job=JobPassthrough(spec={"template": {"x": {}}}))
    with pytest.raises(ConfigError, match=r"job.spec.template"):
        render_manifest(RunRequest("alpine"), config, **FIXED)


def test_job_template_has_no_name_or_namespace() -> None:
    m = manifest(mode="job", namespace="ns", layers=k8s(metadata={"namespace": "ns"}))
    assert set(m["spec"]["template"]["metadata"]) == {"labels"}
    assert m["metadata"]["namespace"] == "ns"


def test_passthrough_name_is_used_when_no_name_flag() -> None:
    m = manifest(layers=k8s(metadata={"name": "from-config"}))
    assert m["metadata"]["name"] == "from-config"
    assert manifest(name="cli", layers=k8s(metadata={"name": "cfg"}))["metadata"]["name"] == "cli"
    with pytest.raises(ConfigError, match=r"metadata.name"):
        manifest(layers=k8s(metadata={"name": "Not_Valid"}))


def test_pull_policy_from_passthrough_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"imagePullPolicy 'Sometimes'"):
        manifest(
            layers=k8s(spec={"containers": [{"name": "main", "imagePullPolicy": "Sometimes"}]})
        )


def test_pod_spec_of_job() -> None:
    assert pod_spec(manifest(mode="job"))["containers"][0]["name"] == "main"
