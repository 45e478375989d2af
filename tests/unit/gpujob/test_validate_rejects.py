"""`runpod-deploy validate`: rejects what 0.8.4 rejects, and what 0.8.4 wrongly accepted."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.runpod_configs import MINIMAL_YAML, with_sections
from helpers.ssh_keys import install_ssh_key
from pegboard.app.runpod_deploy.cli import main

POD = {"image": "i", "datacenters": ["d"], "gpu_order": ["g"]}
GREETING_JOB = with_sections(
    variables={"greeting": "hello"},
    run={
        "script_path": "/w/r.sh",
        "log_path": "/w/r.log",
        "success_marker": "x",
        "body": "echo {greeting}\n",
    },
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """HOME for every seam (validate reads it directly; run through the container)."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    install_ssh_key(home)  # the key the configs name (~/.ssh/id_ed25519) is there
    monkeypatch.setenv("HOME", str(home))
    yield home


def validate(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(["validate", "--config", str(config), *args])
    out, err = capsys.readouterr()
    return int(caught.value.code or 0), out, err


def write(home: Path, text: str, name: str = "job.yaml") -> Path:
    path = home / "proj" / name
    path.write_text(text)
    return path


def expect_rejected(
    capsys: pytest.CaptureFixture[str], path: Path, *fragments: str, args: tuple[str, ...] = ()
) -> str:
    code, out, err = validate(capsys, path, *args)
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    assert any(line.startswith("runpod-deploy: ") for line in err.splitlines())
    for fragment in fragments:
        assert fragment in err, err
    return err


# --- what 0.8.4 rejects too ---


@pytest.mark.parametrize(
    ("sections", "fragment"),
    [
        ({"extra": 1}, "job.yaml:19: extra: unknown key 'extra'"),
        ({"pod": {**POD, "gpu": 1}}, "pod.gpu: unknown key"),
        ({"run": None}, "run: required key missing"),
        ({"pod": {**POD, "gpu_count": "2"}}, "pod.gpu_count: must be an integer, got str"),
        ({"pod": {**POD, "gpu_count": True}}, "pod.gpu_count: must be an integer, got bool"),
        ({"pod": {**POD, "datacenters": "EU"}}, "pod.datacenters: must be a list, got str"),
        ({"budget": {"cost_cap_usd": 0}}, "budget.cost_cap_usd: must be > 0"),
        ({"telemetry": {"sample_interval_sec": 1}}, "telemetry.sample_interval_sec: must be >= 5"),
        ({"secrets": [{"name": "a", "destination": "/x"}]}, "secrets[0]: set exactly one of"),
        ({"lifecycle": {"on_failure": "recycle"}}, "recycle is only allowed for on_success"),
        ({"stop": {"on_success": True}}, "the `stop:` block was removed"),
        ({"schema_version": 1}, "schema_version: must be 2"),
        ({"variables": {"n": 1}}, "variables.n: must be a string, got int"),
    ],
)
def test_rejected_like_0_8_4(
    sections: dict[str, Any], fragment: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expect_rejected(capsys, write(home, with_sections(**sections)), fragment)


@pytest.mark.parametrize("root", ["~", "HOME"])
def test_home_project_root(root: str, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    value = str(home) if root == "HOME" else "~"
    path = write(home, with_sections(local={"project_root": value}))
    expect_rejected(capsys, path, "local.project_root: resolves to your home directory")


def test_missing_config_file(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_rejected(capsys, home / "nope.yaml", "nope.yaml: no such file")


# --- what 0.8.4 wrongly accepted ---


def test_unknown_template_variable_in_body(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = with_sections(
        run={
            "script_path": "/s",
            "log_path": "/l",
            "success_marker": "x",
            "body": "echo {outdir}\n",
        }
    )
    expect_rejected(
        capsys, write(home, text), "job.yaml:", "run.body: unknown template variable {outdir}"
    )


def test_budget_violation(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = with_sections(
        budget={"cost_cap_usd": 1.0, "assumed_hourly_rate_usd": 4.0, "max_runtime_minutes": 60}
    )
    expect_rejected(
        capsys,
        write(home, text),
        "budget: max_runtime_minutes=60",
        "costs $4.00, more than cost_cap_usd=1",
    )


def test_budget_violation_from_flags(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(home, MINIMAL_YAML)
    expect_rejected(
        capsys,
        path,
        "after --cost-cap-usd",
        args=("--cost-cap-usd", "0.5", "--max-runtime-minutes", "60"),
    )


def test_bad_budget_flag(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_rejected(
        capsys,
        write(home, MINIMAL_YAML),
        "--cost-cap-usd must be > 0",
        args=("--cost-cap-usd", "0"),
    )


def test_invalid_cloud_type_and_ports(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = with_sections(pod={**POD, "cloud_type": "CHEAPEST", "ports": ["22/tcp", "abc"]})
    expect_rejected(
        capsys, write(home, text), "2 problems", "pod.cloud_type: must be one of", "pod.ports[1]:"
    )


def test_duplicate_yaml_keys(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = MINIMAL_YAML + "name: again\n"
    expect_rejected(capsys, write(home, text), "duplicate key 'name'")


def test_network_volume_with_several_datacenters_warns(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = with_sections(
        pod={**POD, "datacenters": ["A", "B"]},
        storage={"mode": "network_volume", "volume_name": "v"},
    )
    code, out, err = validate(capsys, write(home, text))
    assert code == 0 and out.startswith("ok: ")
    assert (
        "pod.datacenters lists 2 datacenters (A, B) with network volume 'v'; the pod can only go "
        "to the volume's datacenter" in err
    )


@pytest.mark.parametrize("key", ["gpu_order", "datacenters"])
def test_empty_gpu_order_or_datacenters_is_refused(
    home: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    err = expect_rejected(
        capsys, write(home, with_sections(pod={**POD, key: []})), f"pod.{key}: must list"
    )
    assert len(err.strip().splitlines()) == 1  # one line, before any budget or run


@pytest.mark.parametrize(
    ("secret", "missing"),
    [
        ({"env": ["PEGBOARD_TEST_UNSET"]}, "environment variable PEGBOARD_TEST_UNSET is not set"),
        ({"source_env": "PEGBOARD_TEST_UNSET", "var_name": "HF_TOKEN"}, "PEGBOARD_TEST_UNSET"),
        ({"file": "absent.json"}, "no such file"),
        ({"source_file": "{project_root}/absent.json"}, "absent.json"),
    ],
)
def test_missing_secret_source_is_refused_naming_the_secret(
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    secret: dict[str, Any],
    missing: str,
) -> None:
    monkeypatch.delenv("PEGBOARD_TEST_UNSET", raising=False)
    text = with_sections(secrets=[{"name": "hf", "destination": "/root/.hf", **secret}])
    err = expect_rejected(capsys, write(home, text), "secrets[0]: secret 'hf': ", missing)
    assert "job.yaml:" in err


def test_present_secret_sources_pass(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEGBOARD_TEST_TOKEN", "x")
    (home / "proj" / "key.json").write_text("{}")
    text = with_sections(
        secrets=[
            {"name": "hf", "destination": "/r/a", "source_env": "PEGBOARD_TEST_TOKEN"},
            {"name": "key", "destination": "/r/b", "source_file": "key.json"},
        ]
    )
    code, _out, err = validate(capsys, write(home, text))
    assert code == 0, err


def test_export_keys_are_validated(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = with_sections(remote_env={"exports": {"X;rm -rf /": "1"}})
    expect_rejected(capsys, write(home, text), "must be an identifier")


def test_check_local_reports_missing_required_paths(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = with_sections(local={"required_paths": ["pyproject.toml", "{job_name}.txt"]})
    path = write(home, text)
    (home / "proj" / "pyproject.toml").write_text("")
    err = expect_rejected(
        capsys, path, "local.required_paths[1]: does not exist:", args=("--check-local",)
    )
    assert "hello.txt" in err and "required_paths[0]" not in err


# --- what simply works now ---


def test_bash_line_percent_name_and_bash_expansions(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "cat > /tmp/x <<'EOF'\nBASH\nEOF\necho ${HOME} ${{USER}} %d\n"
    text = with_sections(
        name="run-%Y-%d",
        run={"script_path": "/s", "log_path": "/l", "success_marker": "x", "body": body},
    )
    code, out, err = validate(capsys, write(home, text))
    assert code == 0, err
    assert out.startswith("ok: ") and "(job run-%Y-%d)" in out


def test_cli_variables_feed_yaml_variables(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = with_sections(
        name="sweep-s{seed}",
        variables={"out": "/w/{backbone}-{seed}"},
        run={
            "script_path": "{out}/r.sh",
            "log_path": "{out}/r.log",
            "success_marker": "x",
            "body": "echo {out}\n",
        },
    )
    path = write(home, text)
    expect_rejected(capsys, path, "unknown template variable {seed}")
    vars_file = home / "vars.json"
    vars_file.write_text(json.dumps({"seed": 1, "backbone": "bert"}))
    code, out, err = validate(capsys, path, "--vars-file", str(vars_file), "--var", "seed=7")
    assert code == 0, err
    assert "(job sweep-s7)" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--var", "noequals"), "--var expects KEY=VALUE"),
        (("--var", "a-b=1"), "variable name must be an identifier"),
        (("--vars-file", "/no/such.json"), "no such file"),
    ],
)
def test_bad_variable_flags(
    args: tuple[str, ...], fragment: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expect_rejected(capsys, write(home, MINIMAL_YAML), fragment, args=args)


def test_network_checks_are_honest_about_being_skipped(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = validate(
        capsys, write(home, MINIMAL_YAML), "--check-availability", "--check-image-registry"
    )
    assert code == 0
    assert "[check-availability] skipped" in err and "[check-image-registry] skipped" in err


@pytest.mark.parametrize(
    ("provider", "why"),
    [
        ("local", "this machine is the pod"),
        ("ssh", "the pod is the machine ssh.host names"),
        ("kubernetes", "a cluster has no stock to ask: the scheduler places a GPU type"),
    ],
)
def test_a_provider_without_stock_says_why_it_needs_no_availability_check(
    home: Path, capsys: pytest.CaptureFixture[str], provider: str, why: str
) -> None:
    """Each in its own words: `this machine is the pod` is the local provider's alone."""
    sections: dict[str, Any] = {"pod": {**POD, "provider": provider}}
    if provider == "ssh":
        sections["ssh"] = {"host": "gpu-box.lab", "use_agent": True}
    code, _, err = validate(capsys, write(home, with_sections(**sections)), "--check-availability")
    assert code == 0, err
    assert f"[check-availability] provider {provider}: nothing to check ({why}" in err
    if provider != "local":
        assert "this machine is the pod" not in err


def test_scan_consumer_flags_self_dependency(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = home / "proj"
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "consumer"
            dependencies = ["runpod-deploy>=0.8", "torch"]
            """
        )
    )
    (project / "src").mkdir()
    (project / "src" / "paths.py").write_text("DATA = '/Users/alice/data'\n")
    text = with_sections(
        staging=[{"label": "src", "source": "{project_root}/src/", "destination": "/w/"}]
    )
    code, _, err = validate(capsys, write(home, text), "--scan-consumer", "-v")
    assert code == 0
    assert "'runpod-deploy>=0.8' is a runtime dependency" in err
    assert "torch is not pinned" in err
    assert "paths.py:1: hard-coded local path '/Users/alice'" in err


def test_quiet_silences_notes(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = validate(capsys, write(home, MINIMAL_YAML), "-q")
    assert code == 0 and out.startswith("ok: ") and err == ""


def test_a_variable_no_template_uses_is_a_usage_error_naming_the_closest(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = GREETING_JOB
    err = expect_rejected(
        capsys,
        write(home, text),
        "--var greting: no template in",
        "(did you mean greeting?)",
        args=("--var", "greting=hi"),
    )
    assert len(err.splitlines()) == 1


def test_an_unused_vars_file_entry_is_a_warning(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vars file shared by several configs may hold names one of them does not use."""
    text = GREETING_JOB
    vars_file = home / "vars.json"
    vars_file.write_text(json.dumps({"greeting": "hi", "seed": 3}))
    code, out, err = validate(capsys, write(home, text), "--vars-file", str(vars_file))
    assert code == 0, err
    assert "--vars-file: seed: no template in" in err and out.startswith("ok: ")


def test_a_missing_ssh_key_is_a_problem_naming_ssh_key_path(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".ssh" / "id_ed25519").unlink()  # the default key the config relies on
    err = expect_rejected(
        capsys, write(home, MINIMAL_YAML), "ssh.key_path", "ssh key not found", "ssh-keygen"
    )
    assert str(home / ".ssh" / "id_ed25519") in err
    broken = home / "broken"
    broken.write_text("not a key\n")
    text = with_sections(ssh={"key_path": str(broken)})
    expect_rejected(capsys, write(home, text, "b.yaml"), "ssh.key_path", "is not a private key")
    local = with_sections(pod={"provider": "local", **POD})  # no SSH: no key needed
    code, _out, err = validate(capsys, write(home, local, "l.yaml"))
    assert code == 0, err


def test_every_kind_of_problem_is_reported_at_once(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Structure, budget, secrets and the SSH key in one error (issue 17 item 9): before, the
    secret and budget problems appeared only once the structural ones were fixed."""
    monkeypatch.delenv("PEGBOARD_TEST_UNSET_TOKEN", raising=False)
    (home / ".ssh" / "id_ed25519").unlink()
    text = with_sections(
        pod={**POD, "gpu_count": "two"},  # structural
        budget={"cost_cap_usd": 1.0, "assumed_hourly_rate_usd": 4.0, "max_runtime_minutes": 60},
        secrets=[{"name": "tok", "destination": "/w/t", "env": ["PEGBOARD_TEST_UNSET_TOKEN"]}],
    )
    err = expect_rejected(
        capsys,
        write(home, text),
        "pod.gpu_count",
        "budget: max_runtime_minutes=60",
        "PEGBOARD_TEST_UNSET_TOKEN is not set",
        "ssh.key_path: ssh key not found",
    )
    lines = [line for line in err.splitlines() if line.startswith("  ")]
    assert len(lines) >= 4, err


def test_a_template_problem_does_not_hide_the_budget_or_the_secrets(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PEGBOARD_TEST_UNSET_TOKEN", raising=False)
    text = with_sections(
        run={
            "script_path": "/w/r.sh",
            "log_path": "/w/r.log",
            "success_marker": "x",
            "body": "echo {no_such_variable}\n",
        },
        budget={"cost_cap_usd": 1.0, "assumed_hourly_rate_usd": 4.0, "max_runtime_minutes": 60},
        secrets=[{"name": "tok", "destination": "/w/t", "env": ["PEGBOARD_TEST_UNSET_TOKEN"]}],
    )
    expect_rejected(
        capsys,
        write(home, text),
        "no_such_variable",
        "budget: max_runtime_minutes=60",
        "PEGBOARD_TEST_UNSET_TOKEN is not set",
    )
