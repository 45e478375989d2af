"""resolve_run / render_manifest: every `squarepeg run` flag's effect on the manifest."""

from __future__ import annotations

from typing import Any

import pytest

from helpers.squarepeg_requests import RUN_ID, container, manifest, pod_spec, resolve
from pegboard.domain.errors import ConfigError, UsageError
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.config import SquarepegConfig
from pegboard.domain.squarepeg.render import render_manifest
from pegboard.domain.squarepeg.request import EnvFile, RunRequest


def test_done_when_pod() -> None:
    m = manifest("alpine", "echo", "hi", cpus="0.5", memory="512m")
    assert m["apiVersion"] == "v1" and m["kind"] == "Pod"
    assert list(m) == ["apiVersion", "kind", "metadata", "spec"]
    assert list(m["metadata"]) == ["name", "labels"]
    assert m["metadata"]["name"] == "squarepeg-alpine-a1b2c3"
    assert m["metadata"]["labels"] == {
        labels.MANAGED_BY: "squarepeg",
        labels.RUN_ID: RUN_ID,
        labels.CREATED_BY: "jane",
    }
    assert list(m["spec"]) == ["restartPolicy", "containers"]
    assert m["spec"]["restartPolicy"] == "Never"
    c = container(m)
    assert list(c) == ["name", "image", "args", "resources"]
    assert c["args"] == ["echo", "hi"]
    assert c["resources"] == {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }


def test_done_when_job() -> None:
    m = manifest("alpine", "echo", "hi", cpus="0.5", memory="512m", mode="job")
    assert m["apiVersion"] == "batch/v1" and m["kind"] == "Job"
    spec = m["spec"]
    assert list(spec) == [
        "backoffLimit",
        "completions",
        "parallelism",
        "ttlSecondsAfterFinished",
        "template",
    ]
    assert (spec["backoffLimit"], spec["completions"], spec["parallelism"]) == (0, 1, 1)
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert spec["template"]["metadata"]["labels"] == m["metadata"]["labels"]
    assert spec["template"]["metadata"]["labels"] is not m["metadata"]["labels"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert container(m)["args"] == ["echo", "hi"]


def test_keep_label_only_with_keep_or_cleanup_false() -> None:
    assert labels.KEEP not in manifest()["metadata"]["labels"]
    assert manifest(keep=True)["metadata"]["labels"][labels.KEEP] == "true"
    kept = resolve(layers=[{"cleanup": False}])
    assert kept.keep and kept.manifest["metadata"]["labels"][labels.KEEP] == "true"


def test_resolved_run_fields() -> None:
    run = resolve(
        name="job-1", namespace="ns", context="ctx", timeout=30, quiet=True, no_color=True
    )
    assert run.kind is ResourceKind.POD
    assert (run.name, run.namespace, run.context) == ("job-1", "ns", "ctx")
    assert run.container_name == "main" and run.run_id == RUN_ID and run.created_by == "jane"
    assert run.startup_timeout_seconds == 30
    assert run.output.quiet and run.output.color is False
    assert run.sweep.enabled and run.sweep.min_age_seconds == 300
    assert run.lenient_tls is False


def test_lenient_tls_reaches_the_resolved_run() -> None:
    assert resolve(layers=[{"lenient_tls": True}]).lenient_tls is True


def test_command_is_passed_verbatim() -> None:
    args = ("ls", "-la", "--name", "x", "-e", "FOO=1", "--", "--keep", "-v", "/x")
    assert container(manifest("alpine", *args))["args"] == list(args)


def test_no_command_no_args() -> None:
    assert "args" not in container(manifest())


@pytest.mark.parametrize("image", ["", "--foo", "a b"])
def test_bad_image(image: str) -> None:
    with pytest.raises(UsageError):
        manifest(image)


def test_env_order_and_precedence() -> None:
    m = manifest(
        env=("B=cli", "C", "D=4"),
        env_files=(EnvFile("f.env", ("A=file", "D=file")),),
        environ={"C": "local"},
        layers=[{"defaults": {"env": {"A": "default", "B": "default", "N": 1}}}],
    )
    assert container(m)["env"] == [
        {"name": "A", "value": "file"},
        {"name": "B", "value": "cli"},
        {"name": "N", "value": "1"},
        {"name": "D", "value": "4"},
        {"name": "C", "value": "local"},
    ]


def test_workdir_entrypoint_pull_tty_stdin() -> None:
    c = container(manifest(workdir="/w", entrypoint="sh -c", pull="missing", tty=True))
    assert c["workingDir"] == "/w"
    assert c["command"] == ["sh -c"]
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["tty"] is True and c["stdin"] is True
    assert container(manifest(interactive=True))["stdin"] is True
    assert "stdin" not in container(manifest())


def test_pull_values() -> None:
    assert container(manifest(pull="always"))["imagePullPolicy"] == "Always"
    assert container(manifest(pull="never"))["imagePullPolicy"] == "Never"
    with pytest.raises(UsageError, match=r"--pull"):
        manifest(pull="sometimes")


def test_relative_workdir_is_rejected() -> None:
    with pytest.raises(UsageError, match=r"--workdir"):
        manifest(workdir="rel")


def test_defaults_from_config_apply_when_flags_are_absent() -> None:
    layers = [
        {
            "defaults": {
                "cpus": "2",
                "memory": "1g",
                "gpus": "1",
                "workdir": "/d",
                "image_pull_policy": "Always",
            }
        }
    ]
    m = manifest(layers=layers)
    c = container(m)
    assert c["resources"] == {
        "requests": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1},
        "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1},
    }
    assert c["workingDir"] == "/d" and c["imagePullPolicy"] == "Always"
    assert m["spec"]["runtimeClassName"] == "nvidia"


def test_gpus_and_runtime_class() -> None:
    m = manifest(gpus="count=2")
    assert container(m)["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert m["spec"]["runtimeClassName"] == "nvidia"
    assert "runtimeClassName" not in manifest(gpus="0")["spec"]
    custom = manifest(
        gpus="1", layers=[{"defaults": {"gpu_resource": "amd.com/gpu", "gpu_runtime_class": None}}]
    )
    assert container(custom)["resources"]["requests"] == {"amd.com/gpu": 1}
    assert "runtimeClassName" not in custom["spec"]


def test_request_and_limit_flags_override_one_field() -> None:
    c = container(manifest(cpus="1", memory="1g", request_cpu="250m", limit_memory="2Gi"))
    assert c["resources"] == {
        "requests": {"cpu": "250m", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }


def test_request_above_limit_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"memory request 2Gi is above its limit 1Gi"):
        manifest(request_memory="2Gi", memory="1g")


def test_bad_default_cpus_is_a_config_error() -> None:
    config = SquarepegConfig(defaults=SquarepegConfig().defaults.__class__(cpus="nan"))
    with pytest.raises(ConfigError, match=r"defaults.cpus"):
        render_manifest(RunRequest("alpine"), config, environ={}, user="u", run_id="r",
                        random_hex="abcdef")  # fmt: skip


def test_namespace_sources() -> None:
    assert "namespace" not in manifest()["metadata"]
    assert manifest(namespace="cli")["metadata"]["namespace"] == "cli"
    assert manifest(layers=[{"namespace": "cfg"}])["metadata"]["namespace"] == "cfg"
    assert manifest(default_namespace="ctx")["metadata"]["namespace"] == "ctx"
    assert manifest(namespace="cli", default_namespace="ctx")["metadata"]["namespace"] == "cli"
    adopted = manifest(layers=[{"kubernetes": {"metadata": {"namespace": "pt"}}}])
    assert adopted["metadata"]["namespace"] == "pt"


def test_passthrough_namespace_that_disagrees_is_an_error() -> None:
    layers = [{"kubernetes": {"metadata": {"namespace": "other"}}}]
    with pytest.raises(ConfigError, match=r"'other' disagrees with -n 'mine'"):
        manifest(namespace="mine", layers=layers)
    with pytest.raises(ConfigError, match=r"job.metadata.namespace"):
        manifest(mode="job", layers=[{"namespace": "a", "job": {"metadata": {"namespace": "b"}}}])


def test_bad_namespace_flag() -> None:
    with pytest.raises(UsageError, match=r"--namespace"):
        manifest(namespace="Bad_NS")


@pytest.mark.parametrize(("mode", "kind"), [("pod", "Pod"), ("job", "Job"), ("JOB", "Job")])
def test_mode_flag(mode: str, kind: str) -> None:
    assert manifest(mode=mode)["kind"] == kind


def test_unknown_mode_flag_is_rejected() -> None:
    with pytest.raises(UsageError, match=r"--mode 'cronjob'"):
        manifest(mode="cronjob")


def test_mode_flag_beats_config() -> None:
    assert manifest(mode="pod", layers=[{"mode": "job"}])["kind"] == "Pod"


def test_rm_and_keep_contradict() -> None:
    with pytest.raises(UsageError, match=r"--rm and --keep"):
        manifest(rm=True, keep=True)
    assert manifest(rm=True)["kind"] == "Pod"


def test_dry_run_flags_are_mutually_exclusive() -> None:
    with pytest.raises(UsageError, match=r"mutually exclusive"):
        manifest(dry_run=True, dry_run_server=True)


@pytest.mark.parametrize("timeout", [0, -5])
def test_timeout_must_be_positive(timeout: int) -> None:
    with pytest.raises(UsageError, match=r"--timeout"):
        resolve(timeout=timeout)


def test_timeout_from_config() -> None:
    assert resolve(layers=[{"timeout": 42}]).startup_timeout_seconds == 42
    assert resolve().startup_timeout_seconds == 300


def test_container_name() -> None:
    m = manifest(container_name="app")
    assert container(m, "app")["image"] == "alpine"
    with pytest.raises(UsageError, match=r"--container-name"):
        manifest(container_name="Bad_Name")


def test_name_flag_and_validation() -> None:
    assert manifest(name="my-run")["metadata"]["name"] == "my-run"
    with pytest.raises(UsageError, match=r"--name"):
        manifest(name="My.Run")


def test_docker_extras() -> None:
    m = manifest(
        user="1000:1000",
        read_only=True,
        cap_add=("NET_ADMIN",),
        cap_drop=("ALL",),
        hostname="box",
        add_hosts=("db:10.0.0.1",),
        platform="linux/arm64",
        labels=("team=ml",),
        shm_size="256m",
        tmpfs=("/run",),
    )
    c = container(m)
    assert c["securityContext"] == {
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "runAsNonRoot": True,  # a numeric non-root -u asserts it (Pod Security restricted)
        "readOnlyRootFilesystem": True,
        "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
    }
    spec = m["spec"]
    assert spec["hostname"] == "box"
    assert spec["hostAliases"] == [{"ip": "10.0.0.1", "hostnames": ["db"]}]
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"}
    assert m["metadata"]["labels"]["team"] == "ml"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]


def test_privileged_needs_config_permission() -> None:
    with pytest.raises(UsageError, match=r"allow_privileged"):
        manifest(privileged=True)
    m = manifest(privileged=True, layers=[{"allow_privileged": True}])
    assert container(m)["securityContext"] == {"privileged": True}


@pytest.mark.parametrize("field", ["hostname", "platform"])
def test_empty_values_are_rejected(field: str) -> None:
    with pytest.raises(UsageError, match=f"--{field}"):
        manifest(**{field: ""})


def test_job_labels_on_job_and_template_with_user_labels() -> None:
    m = manifest(mode="job", labels=("team=ml",), keep=True)
    for meta in (m["metadata"], m["spec"]["template"]["metadata"]):
        assert meta["labels"]["team"] == "ml"
        assert meta["labels"][labels.KEEP] == "true"


def test_render_accepts_a_merged_config() -> None:
    m = render_manifest(
        RunRequest("alpine"),
        SquarepegConfig(),
        environ={},
        user="u",
        run_id="r",
        random_hex="abcdef",
    )
    assert m["metadata"]["name"] == "squarepeg-alpine-abcdef"


def test_profile_from_the_request_is_applied_to_layers() -> None:
    layers: list[dict[str, Any]] = [{"profiles": {"big": {"defaults": {"cpus": "8"}}}}]
    assert container(manifest(profile="big", layers=layers))["resources"]["limits"]["cpu"] == "8"


def test_same_inputs_same_manifest() -> None:
    assert manifest(cpus="1", env=("A=1",)) == manifest(cpus="1", env=("A=1",))


def test_manifest_shares_no_objects() -> None:
    m = manifest(mode="job", layers=[{"kubernetes": {"metadata": {"labels": {"x": "y"}}}}])
    seen: dict[int, Any] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict | list):
            assert id(value) not in seen, "shared object would become a YAML alias"
            seen[id(value)] = value
            for item in value.values() if isinstance(value, dict) else value:
                walk(item)

    walk(m)


def test_pod_spec_helper() -> None:
    assert pod_spec(manifest(mode="job"))["restartPolicy"] == "Never"
