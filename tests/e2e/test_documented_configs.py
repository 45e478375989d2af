"""Every config form the 0.8.4 docs (the seed lifecycle page, the troubleshooting page) and the
0.8.4 reference document, through `runpod-deploy validate` and `run --offline-dry-run`, as a user
switching to us would run them: from the configs' directory, on a fresh HOME, with only the
secrets' variables the config names. The commands run in-process (pegboard.testing.RunpodDeploy:
the CLI's own main(), parser, config loading and messages; 47 interpreter starts fewer); the
several-datacenters warning goes through the installed script, as do
tests/e2e/test_runpod_validate_examples.py's.

Each file in tests/data/documented_configs/ names where it was copied from and its expectation
(`# expect: ok`, `ok (env VAR)` when it reads a secret from VAR, or `refused: <the documented
reason, as we print it>`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.console_scripts import runpod_deploy_bin
from helpers.ssh_keys import install_ssh_key
from pegboard.testing import RunpodDeploy

DATA = Path(__file__).resolve().parents[1] / "data" / "documented_configs"
CONFIGS = sorted(DATA.glob("*.yaml"))
SECRET_VALUE = "documented-secret-value"
Runner = Callable[..., subprocess.CompletedProcess[str]]


def expectation(config: Path) -> str:
    lines = config.read_text().splitlines()
    assert lines[0].startswith("# Documented form, copied from: "), config.name
    return next(line for line in lines if line.startswith("# expect: "))[len("# expect: ") :]


def needed_env(expect: str) -> dict[str, str]:
    if "(env " in expect:
        return {expect.split("(env ")[1].rstrip(")"): SECRET_VALUE}
    return {}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of the data (dry runs write artifacts/ under the project root), HOME elsewhere."""
    (tmp_path / "home").mkdir()
    install_ssh_key(tmp_path / "home")  # validate checks the key the configs name
    shutil.copytree(DATA, tmp_path / "configs")
    return tmp_path


@pytest.fixture
def run(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`runpod-deploy ARGS` from the configs' directory with `env` set and HF_TOKEN unset, in
    the process environment too (`validate` reads it, keeping clear of the container)."""
    monkeypatch.chdir(workdir / "configs")

    def run_command(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        with monkeypatch.context() as scoped:
            scoped.delenv("HF_TOKEN", raising=False)
            for name, value in env.items():
                scoped.setenv(name, value)
            done = RunpodDeploy(home=workdir / "home", environ=env).cli(*args)
        return subprocess.CompletedProcess(args, done.exit_code, done.stdout, done.stderr)

    return run_command


def run_installed(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"HF_TOKEN"}}
    environ.update(HOME=str(workdir / "home"))
    return subprocess.run(
        [runpod_deploy_bin(), *args],
        cwd=workdir / "configs",
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_data_covers_every_item_of_issue_13() -> None:
    text = "\n".join(config.read_text() for config in CONFIGS)
    for form in ("source_env: HF_TOKEN", "var_name: HF_TOKEN", "source_file:", "env: [HF_TOKEN]"):
        assert form in text
    assert "datacenters: [EU-RO-1, US-CA-2]" in text and "mode: network_volume" in text
    assert len(CONFIGS) >= 15


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
@pytest.mark.parametrize("command", ["validate", "offline-dry-run"])
def test_documented_form(run: Runner, config: Path, command: str) -> None:
    expect = expectation(config)
    args = ["validate"] if command == "validate" else ["run", "--offline-dry-run"]
    done = run(*args, "--config", config.name, env=needed_env(expect))
    assert "Traceback" not in done.stderr
    assert SECRET_VALUE not in done.stdout + done.stderr
    if expect.startswith("ok"):
        assert done.returncode == 0, done.stderr
    else:
        reason = expect.removeprefix("refused: ")
        assert done.returncode == 2, done.stderr
        assert f"{config.name}:" in done.stderr and reason in done.stderr


def test_network_volume_with_several_datacenters_warns_in_validate(workdir: Path) -> None:
    done = run_installed(
        workdir, "validate", "--config", "reference_7_network_volume_several_datacenters.yaml"
    )
    assert done.returncode == 0
    assert "the pod can only go to the volume's datacenter" in done.stderr


SECRET_CONFIGS = [c for c in CONFIGS if "(env " in expectation(c)]


@pytest.mark.parametrize("config", SECRET_CONFIGS, ids=[c.stem for c in SECRET_CONFIGS])
@pytest.mark.parametrize("command", ["validate", "offline-dry-run"])
def test_unset_secret_variable_is_named_before_any_pod(
    run: Runner, config: Path, command: str
) -> None:
    args = ["validate"] if command == "validate" else ["run", "--offline-dry-run"]
    done = run(*args, "--config", config.name, env={})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "secret 'hf': environment variable HF_TOKEN is not set" in done.stderr
    assert "would create pod" not in done.stderr


@pytest.mark.parametrize("command", ["validate", "offline-dry-run"])
def test_absent_secret_file_is_named_before_any_pod(
    workdir: Path, run: Runner, command: str
) -> None:
    (workdir / "configs" / "secrets" / "hf.env").unlink()
    args = ["validate"] if command == "validate" else ["run", "--offline-dry-run"]
    done = run(*args, "--config", "seed_5a_secrets_source_file.yaml", env={})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "secret 'hf': no such file " in done.stderr and "secrets/hf.env" in done.stderr
    assert "would create pod" not in done.stderr
