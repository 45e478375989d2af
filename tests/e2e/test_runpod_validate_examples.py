"""The installed `runpod-deploy validate` on the shipped examples, as a user would run it."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers.console_scripts import runpod_deploy_bin
from helpers.ssh_keys import install_ssh_key

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "runpod"
SWEEP_FLAGS = [
    "--var",
    "seed=42",
    "--var",
    "backbone=deberta",
    "--cost-cap-usd",
    "4.0",
    "--max-runtime-minutes",
    "60",
]


_HOME = tempfile.TemporaryDirectory(prefix="pegboard-validate-home-")


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """The CLI with a scratch HOME holding the key the examples name (~/.ssh/id_ed25519)."""
    home = Path(_HOME.name)
    install_ssh_key(home)
    return subprocess.run(
        [runpod_deploy_bin(), *args],
        cwd=cwd,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def sweep_header_flags() -> list[str]:
    """The flags of the `runpod-deploy run` command line in the canonical sweep's header."""
    lines = (EXAMPLES / "canonical_sweep_pinned.yaml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#   runpod-deploy run"))
    command = []
    for line in lines[start:]:
        command.append(line.lstrip("#").strip().rstrip("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    words = " ".join(command).split()[2:]  # drop `runpod-deploy run`
    flags, skip = [], False
    for _index, word in enumerate(words):
        if skip:
            skip = False
        elif word == "--config":
            skip = True
        elif word != "--print-run-dir":
            flags.append(word)
    return flags


@pytest.mark.parametrize("name", ["hello.yaml", "a4000_smoke.yaml", "a4000_smoke_pinned.yaml"])
def test_examples_validate(name: str) -> None:
    done = run("validate", "--config", str(EXAMPLES / name), "--check-local")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok: {EXAMPLES / name}")


def test_canonical_sweep_validates_with_its_header_flags() -> None:
    flags = sweep_header_flags()
    assert flags == SWEEP_FLAGS
    done = run(
        "validate",
        "--config",
        "examples/runpod/canonical_sweep_pinned.yaml",
        *flags,
        "--check-local",
    )
    assert done.returncode == 0, done.stderr
    assert "(job canonical-deberta-s42)" in done.stdout
    assert "[budget] cap=$4.00 assumed_rate=$4.00/h timeout=60m" in done.stderr


def test_canonical_sweep_without_vars_names_what_is_missing() -> None:
    done = run("validate", "--config", "examples/runpod/canonical_sweep_pinned.yaml")
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr
    assert (
        "canonical_sweep_pinned.yaml:24: name: unknown template variable {backbone}" in done.stderr
    )


def test_broken_config_exit_code_and_one_line_per_problem(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        (EXAMPLES / "hello.yaml").read_text().replace("on_failure: stop", "on_failure: recycle")
        + "tyop: 1\n"
    )
    done = run("validate", "--config", str(config))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0] == "runpod-deploy: 2 problems in the configuration:"
    assert lines[1].endswith("lifecycle.on_failure: recycle is only allowed for on_success")
    assert "tyop: unknown key 'tyop'" in lines[2]


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("runpod-deploy ")
    done = run("--help")
    assert done.returncode == 0
    for command in (
        "validate",
        "ls-runs",
        "manifest-summary",
        "compare-runs",
        "events",
        "events-query",
        "capture-env",
    ):
        assert command in done.stdout
    assert run("validate", "--help").stdout.count("--quiet") == 1
