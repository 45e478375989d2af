"""Claims: what the command line set can never be changed by passthrough."""

from __future__ import annotations

from typing import Any

import pytest

from helpers.squarepeg_requests import container, manifest
from pegboard.domain.kubernetes import labels
from pegboard.domain.squarepeg.claims import always_claimed, as_strings, claims_for, named
from pegboard.domain.squarepeg.request import RunRequest


def passthrough_main(**fields: Any) -> list[dict[str, Any]]:
    return [{"kubernetes": {"spec": {"containers": [{"name": "main", **fields}]}}}]


def test_claim_path_format() -> None:
    claims = as_strings(always_claimed(container_name="main", keep=False))
    assert "/spec/containers/[name=main]/image" in claims
    assert "/spec/restartPolicy" in claims
    assert f"/metadata/labels/{labels.CREATED_BY}" in claims
    assert f"/metadata/labels/{labels.KEEP}" not in claims
    assert named("x") == "[name=x]"


def test_claims_follow_what_was_set() -> None:
    request = RunRequest(image="i", command=("a",), cpus="1", user="1:2", platform="linux/amd64")
    claims = as_strings(
        claims_for(request, container_name="c", env_keys=["FOO"], cli_volume_names=["v"],
                   gpu_resource="nvidia.com/gpu", keep=True, namespace_explicit=True)
    )  # fmt: skip
    for path in (
        "/spec/containers/[name=c]/args",
        "/spec/containers/[name=c]/env/[name=FOO]",
        "/spec/containers/[name=c]/resources/requests/cpu",
        "/spec/containers/[name=c]/resources/limits/cpu",
        "/spec/containers/[name=c]/securityContext/runAsGroup",
        "/spec/volumes/[name=v]",
        "/spec/containers/[name=c]/volumeMounts/[name=v]",
        "/spec/nodeSelector/kubernetes.io/os",
        "/metadata/namespace",
        f"/metadata/labels/{labels.KEEP}",
    ):
        assert path in claims
    assert "/spec/containers/[name=c]/resources/requests/memory" not in claims
    assert "/metadata/name" not in claims


@pytest.mark.parametrize(
    ("fields", "override", "path"),
    [
        ({"env": ("FOO=cli",)}, {"env": [{"name": "FOO", "value": "cfg"}]}, ("env", 0, "value")),
        ({"workdir": "/cli"}, {"workingDir": "/cfg"}, ("workingDir",)),
        ({"entrypoint": "cli"}, {"command": ["cfg"]}, ("command", 0)),
        ({"pull": "never"}, {"imagePullPolicy": "Always"}, ("imagePullPolicy",)),
        ({"cpus": "1"}, {"resources": {"limits": {"cpu": "9"}}}, ("resources", "limits", "cpu")),
        ({"memory": "1g"}, {"resources": {"requests": {"memory": "9Gi"}}},
         ("resources", "requests", "memory")),
        ({"limit_memory": "1Gi"}, {"resources": {"limits": {"memory": "9Gi"}}},
         ("resources", "limits", "memory")),
        ({"user": "1000"}, {"securityContext": {"runAsUser": 0}}, ("securityContext", "runAsUser")),
        ({"tty": True}, {"tty": False}, ("tty",)),
    ],
)  # fmt: skip
def test_cli_values_survive_passthrough(
    fields: dict[str, Any], override: dict[str, Any], path: tuple[Any, ...]
) -> None:
    expected: Any = container(manifest(**fields))
    actual: Any = container(manifest(layers=passthrough_main(**override), **fields))
    for part in path:
        expected, actual = expected[part], actual[part]
    assert actual == expected


def test_cli_args_survive_passthrough() -> None:
    m = manifest("alpine", "echo", "cli", layers=passthrough_main(args=["cfg"]))
    assert container(m)["args"] == ["echo", "cli"]


def test_unclaimed_args_are_open_to_passthrough() -> None:
    assert container(manifest(layers=passthrough_main(args=["cfg"])))["args"] == ["cfg"]


def test_name_namespace_and_user_labels_are_claimed() -> None:
    layers = [{"kubernetes": {"metadata": {"name": "cfg", "labels": {"team": "cfg"}}}}]
    m = manifest(name="cli", labels=("team=cli",), layers=layers)
    assert m["metadata"]["name"] == "cli"
    assert m["metadata"]["labels"]["team"] == "cli"


def test_cli_volume_survives_passthrough() -> None:
    layers = [{"kubernetes": {"spec": {"volumes": [{"name": "data", "hostPath": {"path": "/"}}]}}}]
    m = manifest(volumes=("/data",), layers=layers)
    assert m["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]


def test_platform_and_hostname_survive_passthrough() -> None:
    layers = [{"kubernetes": {"spec": {"hostname": "cfg", "nodeSelector": {
        "kubernetes.io/arch": "amd64", "pool": "x"}}}}]  # fmt: skip
    m = manifest(platform="arm64", hostname="cli", layers=layers)
    assert m["spec"]["hostname"] == "cli"
    assert m["spec"]["nodeSelector"] == {"kubernetes.io/arch": "arm64", "pool": "x"}
