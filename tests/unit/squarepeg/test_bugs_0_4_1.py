"""One test per weak spot of squarepeg 0.4.1 that must not come back (reference §1.5, §3)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.squarepeg_cli import run_cli
from helpers.squarepeg_requests import container, manifest
from pegboard.app.squarepeg import container as container_module
from pegboard.domain.errors import ConfigError, UsageError
from pegboard.domain.kubernetes import labels


def main_passthrough(**fields: Any) -> list[dict[str, Any]]:
    return [{"kubernetes": {"spec": {"containers": [{"name": "main", **fields}]}}}]


def test_passthrough_cannot_replace_the_image() -> None:
    m = manifest("alpine:3", layers=main_passthrough(image="busybox:evil"))
    assert container(m)["image"] == "alpine:3"


def test_passthrough_cannot_change_restart_policy() -> None:
    for mode in ("pod", "job"):
        layers = [{"kubernetes": {"spec": {"restartPolicy": "Always"}}}]
        spec = manifest(mode=mode, layers=layers)
        pod_spec = spec["spec"]["template"]["spec"] if mode == "job" else spec["spec"]
        assert pod_spec["restartPolicy"] == "Never"


def test_passthrough_aimed_at_the_default_name_cannot_add_an_imageless_container() -> None:
    # 0.4.1: with --container-name app, passthrough aimed at `main` made a second, image-less
    # container. Our container keeps its identity and the stray one is an error.
    with pytest.raises(ConfigError, match=r"no image"):
        manifest(container_name="app", layers=main_passthrough(args=["x"]))
    m = manifest(container_name="app", layers=[{"kubernetes": {"spec": {"containers": [
        {"name": "app", "args": ["cfg"]}]}}}])  # fmt: skip
    assert [c["name"] for c in m["spec"]["containers"]] == ["app"]


def test_passthrough_cannot_rewrite_squarepegs_own_labels() -> None:
    evil = {labels.MANAGED_BY: "helm", labels.CREATED_BY: "someone", labels.RUN_ID: "x"}
    for mode in ("pod", "job"):
        m = manifest(mode=mode, layers=[{"kubernetes": {"metadata": {"labels": evil}}}])
        metas = [m["metadata"]] + ([m["spec"]["template"]["metadata"]] if mode == "job" else [])
        for meta in metas:
            assert meta["labels"][labels.MANAGED_BY] == "squarepeg"
            assert meta["labels"][labels.CREATED_BY] == "jane"
            assert meta["labels"][labels.RUN_ID] != "x"


def test_nameless_containers_list_cannot_replace_the_container() -> None:
    layers = [{"kubernetes": {"spec": {"containers": [{"image": "other"}]}}}]
    with pytest.raises(ConfigError, match=r"every container needs a name"):
        manifest("alpine", "echo", "hi", env=("A=1",), layers=layers)


def test_request_and_limit_flags_take_kubernetes_quantities_and_catch_milli_memory() -> None:
    c = container(manifest(request_memory="256Mi", limit_memory="1G", request_cpu="250m"))
    assert c["resources"]["requests"] == {"cpu": "250m", "memory": "256Mi"}
    assert c["resources"]["limits"] == {"memory": "1G"}
    with pytest.raises(UsageError, match=r"did you mean 512Mi"):
        manifest(limit_memory="512m")


def test_env_values_are_always_strings() -> None:
    m = manifest(
        layers=[
            {"defaults": {"env": {"N": 1, "B": True}}},
            {"kubernetes": {"spec": {"containers": [{"name": "main", "env": [
                {"name": "P", "value": 8080}]}]}}},
        ]
    )  # fmt: skip
    assert all(isinstance(e["value"], str) for e in container(m)["env"])


@pytest.mark.parametrize("mode", ["Job", "JOB", "job"])
def test_config_mode_job_in_any_case_is_a_job(mode: str) -> None:
    assert manifest(layers=[{"mode": mode}])["kind"] == "Job"


def test_unknown_mode_is_rejected_not_a_pod() -> None:
    with pytest.raises(ConfigError, match=r"mode"):
        manifest(layers=[{"mode": "cronjob"}])
    with pytest.raises(UsageError, match=r"--mode"):
        manifest(mode="deployment")


def test_volume_names_never_collide_silently() -> None:
    m = manifest(volumes=("/a/b", "/a-b"))
    assert len({v["name"] for v in m["spec"]["volumes"]}) == 2
    layers = [{"volumes": {"refdata": {"persistentVolumeClaim": {"claimName": "ref"}}}}]
    m = manifest(volumes=("refdata:/ref:ro", "/refdata"), layers=layers)
    mounts = {mount["mountPath"]: mount["name"] for mount in container(m)["volumeMounts"]}
    assert mounts["/ref"] == "refdata" and mounts["/refdata"] != "refdata"


def test_user_name_lookup_never_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    def no_entry(uid: int) -> Any:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    for key in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(KeyError):  # what 0.4.1 called, crashing even --dry-run
        getpass.getuser()
    name = container_module.Container().user_name()
    assert name.startswith("uid-")
    assert labels.sanitize_label_value(name) == name


def test_cpus_nan_is_a_one_line_usage_error(tmp_path: Path) -> None:
    for value in ("nan", "inf"):
        result = run_cli(["run", "--dry-run", "--cpus", value, "alpine"], home=tmp_path)
        assert result.code == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("squarepeg: --cpus")
        assert "Traceback" not in result.stderr


def test_dry_run_yaml_has_no_anchors_or_aliases(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("kubernetes:\n  metadata:\n    labels: {team: x}\n    annotations: {a: b}\n")
    result = run_cli(
        ["run", "--dry-run", "--mode", "job", "--config", str(config), "alpine"], home=tmp_path
    )
    assert result.code == 0, result.stderr
    assert "&id" not in result.stdout and "*id" not in result.stdout
    assert yaml.safe_load(result.stdout)["spec"]["template"]["metadata"]["labels"]["team"] == "x"


def test_own_flag_after_image_is_a_container_arg_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pegboard.app.squarepeg import lifecycle

    seen: list[Any] = []

    def fake_run(resolved: Any, seams: Any, ports: Any, **_: Any) -> int:
        seen.append(resolved)
        return 0

    monkeypatch.setattr(lifecycle, "run", fake_run)
    result = run_cli(["run", "alpine", "--dry-run"], home=tmp_path)
    assert result.code == 0
    assert result.stdout == ""  # not a dry run: docker semantics kept
    assert container(seen[0].manifest)["args"] == ["--dry-run"]
    notes = [line for line in result.stderr.splitlines() if "'--dry-run'" in line]
    assert len(notes) == 1 and "after IMAGE" in notes[0]
