"""`squarepeg run` parsing end to end (in-process): argv -> manifest, errors -> one line, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.squarepeg_cli import CliResult, run_cli
from helpers.squarepeg_requests import container
from pegboard.app.squarepeg import lifecycle
from pegboard.domain.squarepeg.docker_flags import REJECTED_FLAGS


def dry(tmp_path: Path, *argv: str, **pins: Any) -> dict[str, Any]:
    result = run_cli(["run", "--dry-run", "--no-default-config", *argv], home=tmp_path, **pins)
    assert result.code == 0, result.stderr
    loaded: dict[str, Any] = yaml.safe_load(result.stdout)
    return loaded


def fails(tmp_path: Path, *argv: str) -> CliResult:
    result = run_cli(["run", "--dry-run", *argv], home=tmp_path)
    assert result.code == 2, result
    assert result.stderr.startswith("squarepeg: ") and result.stderr.count("\n") == 1
    return result


def test_everything_after_image_is_the_command(tmp_path: Path) -> None:
    args = ["ls", "-la", "--name", "x", "-e", "FOO=1", "--", "--keep", "-v", "/x"]
    m = dry(tmp_path, "alpine", *args)
    assert container(m)["args"] == args
    assert m["metadata"]["name"] == "squarepeg-alpine-a1b2c3"


def test_all_container_flags(tmp_path: Path) -> None:
    m = dry(
        tmp_path,
        "-e", "A=1", "--env", "B=2", "-w", "/w", "--entrypoint", "sh", "-it", "--pull", "never",
        "--cpus", "1.5", "-m", "1g", "--gpus", "1", "--name", "r1", "-n", "ns",
        "--container-name", "app", "--rm", "--timeout", "10", "--quiet", "--no-color",
        "--context", "ctx", "alpine", "-c", "true",
    )  # fmt: skip
    c = container(m, "app")
    assert c["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert (c["workingDir"], c["command"], c["args"]) == ("/w", ["sh"], ["-c", "true"])
    assert c["tty"] is True and c["stdin"] is True and c["imagePullPolicy"] == "Never"
    assert c["resources"]["limits"] == {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 1}
    assert m["metadata"]["name"] == "r1" and m["metadata"]["namespace"] == "ns"


def test_request_and_limit_flags(tmp_path: Path) -> None:
    m = dry(tmp_path, "--request-cpu", "250m", "--limit-cpu", "1", "--request-memory", "256Mi",
            "--limit-memory", "1Gi", "alpine")  # fmt: skip
    assert container(m)["resources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }


def test_docker_extras(tmp_path: Path) -> None:
    env_file = tmp_path / "app.env"
    env_file.write_text("# comment\nFROM_FILE=1\n")
    m = dry(
        tmp_path, "-u", "1000:1000", "--env-file", str(env_file), "-l", "team=ml",
        "--label", "tier=gold", "--shm-size", "1g", "--read-only", "--cap-add", "NET_ADMIN",
        "--cap-drop", "ALL", "-h", "box", "--add-host", "db:10.0.0.1", "--tmpfs", "/run",
        "--platform", "linux/amd64", "alpine",
    )  # fmt: skip
    c = container(m)
    assert c["env"] == [{"name": "FROM_FILE", "value": "1"}]
    assert c["securityContext"]["runAsUser"] == 1000
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert m["metadata"]["labels"]["team"] == "ml" and m["metadata"]["labels"]["tier"] == "gold"
    assert m["spec"]["hostname"] == "box"
    assert m["spec"]["nodeSelector"]["kubernetes.io/arch"] == "amd64"
    assert {v["name"] for v in m["spec"]["volumes"]} == {"dshm", "tmpfs-run"}


def test_volumes_flag(tmp_path: Path) -> None:
    m = dry(tmp_path, "-v", "/data", "--volume", "/cache", "alpine")
    assert [v["name"] for v in m["spec"]["volumes"]] == ["data", "cache"]


def test_missing_env_file(tmp_path: Path) -> None:
    result = fails(tmp_path, "--env-file", str(tmp_path / "nope.env"), "alpine")
    assert "--env-file" in result.stderr


def test_keep_adds_the_label(tmp_path: Path) -> None:
    assert dry(tmp_path, "--keep", "alpine")["metadata"]["labels"]["squarepeg.io/keep"] == "true"
    assert "squarepeg.io/keep" not in dry(tmp_path, "alpine")["metadata"]["labels"]


def test_mode_job(tmp_path: Path) -> None:
    m = dry(tmp_path, "--mode", "job", "--cpus", "0.5", "-m", "512m", "alpine", "echo", "hi")
    assert m["kind"] == "Job" and m["spec"]["backoffLimit"] == 0
    assert container(m)["args"] == ["echo", "hi"]


def test_config_profile_and_no_default_config(tmp_path: Path) -> None:
    default = tmp_path / ".config" / "squarepeg" / "config.yaml"
    default.parent.mkdir(parents=True)
    default.write_text("namespace: from-home\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("profiles:\n  big:\n    defaults:\n      cpus: '4'\n")
    args = ["run", "--dry-run", "--config", str(extra), "--profile", "big", "alpine"]
    result = run_cli(args, home=tmp_path)
    m = yaml.safe_load(result.stdout)
    assert m["metadata"]["namespace"] == "from-home"
    assert container(m)["resources"]["limits"]["cpu"] == "4"
    m = dry(tmp_path, "alpine")  # dry() passes --no-default-config
    assert "namespace" not in m["metadata"]


def test_dry_run_namespace_from_kubeconfig_context(tmp_path: Path) -> None:
    m = dry(tmp_path, "alpine", kubeconfig_namespace="ctx-ns")
    assert m["metadata"]["namespace"] == "ctx-ns"
    assert (
        dry(tmp_path, "-n", "x", "alpine", kubeconfig_namespace="ctx-ns")["metadata"]["namespace"]
        == "x"
    )


def test_dry_run_reads_the_real_kubeconfig_honouring_context(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts:\n"
        "- name: a\n  context: {cluster: c, user: u, namespace: ctx-a}\n"
        "- name: b\n  context: {cluster: c, user: u, namespace: ctx-b}\n"
    )
    pins: dict[str, Any] = {"environ": {"KUBECONFIG": str(kubeconfig)}, "real_kubeconfig": True}
    assert dry(tmp_path, "alpine", **pins)["metadata"]["namespace"] == "ctx-a"
    assert dry(tmp_path, "--context", "b", "alpine", **pins)["metadata"]["namespace"] == "ctx-b"
    assert "namespace" not in dry(tmp_path, "--context", "zz", "alpine", **pins)["metadata"]


def test_kubeconfig_reader_failure_degrades_gracefully(tmp_path: Path) -> None:
    from pegboard.app.squarepeg.seams import (
        read_kubeconfig_namespace as _read_kubeconfig_namespace,
    )

    (tmp_path / "broken").write_text(":::: not yaml [")
    env = {"KUBECONFIG": str(tmp_path / "broken")}
    assert _read_kubeconfig_namespace(None, env, str(tmp_path)) is None
    assert _read_kubeconfig_namespace("nope", {"KUBECONFIG": "/missing"}, str(tmp_path)) is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cpus", "nan", "alpine"], "--cpus"),
        (["--cpus", "-1", "alpine"], "--cpus"),
        (["-m", "lots", "alpine"], "--memory"),
        (["--limit-memory", "512m", "alpine"], "did you mean 512Mi"),
        (["--gpus", "all", "alpine"], "--gpus"),
        (["--name", "Bad_Name", "alpine"], "--name"),
        (["-u", "bob", "alpine"], "--user"),
        (["--privileged", "alpine"], "allow_privileged"),
        (["-v", "/h:/c", "alpine"], "allow_host_path_mounts"),
        (["-e", "UNSET_VAR_X", "alpine"], "UNSET_VAR_X"),
        (["--rm", "--keep", "alpine"], "--rm and --keep"),
        (["--dry-run-server", "alpine"], "mutually exclusive"),
        (["--mode", "cron", "alpine"], "--mode"),
        (["--timeout", "soon", "alpine"], "--timeout"),
        (["--foo", "alpine"], "No such option '--foo'"),
        ([], "Missing argument"),
        (["--pull", "sometimes", "alpine"], "--pull"),
        (["--config", "/nonexistent.yaml", "alpine"], "no such file"),
    ],
)
def test_usage_errors_are_one_line_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    assert message in fails(tmp_path, *argv).stderr


@pytest.mark.parametrize("flag", REJECTED_FLAGS, ids=lambda f: f.aliases[-1])
def test_rejected_docker_flags_name_the_flag_as_typed(tmp_path: Path, flag: Any) -> None:
    alias = flag.aliases[-1]
    argv = [alias, "x"] if flag.takes_value else [alias]
    result = fails(tmp_path, *argv, "alpine")
    assert result.stderr.startswith(f"squarepeg: {alias} is not supported by squarepeg: ")


@pytest.mark.parametrize(
    ("argv", "typed"),
    [
        (["--net=host"], "--net"),
        (["--network", ""], "--network"),
        (["--network="], "--network"),
        (["-p8080:80"], "-p"),
        (["--publish", "80:80"], "--publish"),
        (["-d"], "-d"),
        (["-itd"], "-d"),
        (["--init"], "--init"),
    ],
)
def test_rejected_flag_forms(tmp_path: Path, argv: list[str], typed: str) -> None:
    assert fails(tmp_path, *argv, "alpine").stderr.startswith(f"squarepeg: {typed} is not")


def test_rejected_flag_after_image_is_a_container_arg(tmp_path: Path) -> None:
    assert container(dry(tmp_path, "alpine", "--network", "host"))["args"] == [
        "--network",
        "host",
    ]


def test_tty_without_interactive_warns(tmp_path: Path) -> None:
    result = run_cli(["run", "--dry-run", "-t", "alpine"], home=tmp_path)
    assert result.code == 0 and "-t without -i" in result.stderr


def test_real_run_and_server_dry_run_go_to_the_lifecycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, bool]] = []

    def fake_run(resolved: Any, seams: Any, ports: Any, *, dry_run_server: bool, **_: Any) -> int:
        calls.append((resolved, dry_run_server))
        return 7

    monkeypatch.setattr(lifecycle, "run", fake_run)
    assert run_cli(["run", "alpine", "true"], home=tmp_path).code == 7
    assert run_cli(["run", "--dry-run-server", "alpine"], home=tmp_path).code == 7
    assert [server for _, server in calls] == [False, True]
    assert calls[0][0].name == "squarepeg-alpine-a1b2c3"


def test_misplaced_flag_notes() -> None:
    from pegboard.app.squarepeg.run_use_case import misplaced_flag_notes

    assert len(misplaced_flag_notes(["--dry-run", "--mode=job", "-n", "--keep", "echo"])) == 3
    assert misplaced_flag_notes(["-n", "--name", "-e", "--rm"]) == []


def test_dry_run_shows_the_command_escaped_for_the_kubelet(tmp_path: Path) -> None:
    # Kubernetes expands $$ and $(NAME) in command, args and env values: each `$` it would act
    # on is doubled, so the container gets `kill -9 $$` as typed; `$HOME` needs nothing.
    m = dry(
        tmp_path, "-e", "V=$(X) $$", "--entrypoint", "$(sh)", "alpine", "-c", "kill -9 $$ $HOME"
    )
    c = container(m)
    assert (c["command"], c["args"]) == (["$$(sh)"], ["-c", "kill -9 $$$ $HOME"])
    assert c["env"] == [{"name": "V", "value": "$$(X) $$$"}]


def test_kube_expand_leaves_the_expansion_to_kubernetes(tmp_path: Path) -> None:
    c = container(dry(tmp_path, "--kube-expand", "-e", "V=$(X)", "alpine", "echo", "$(V) $$"))
    assert c["args"] == ["echo", "$(V) $$"] and c["env"] == [{"name": "V", "value": "$(X)"}]
    config = tmp_path / "expand.yaml"
    config.write_text("kube_expand: true\n")
    c = container(dry(tmp_path, "--config", str(config), "alpine", "echo", "$$"))
    assert c["args"] == ["echo", "$$"]
