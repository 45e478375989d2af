"""The installed `squarepeg` console script, run as a subprocess: the done-when dry runs."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from helpers.squarepeg_e2e import squarepeg_bin


def run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(tmp_path),
        "KUBECONFIG": str(tmp_path / "missing-kubeconfig"),
        "PATH": "/usr/bin:/bin",
        "LOGNAME": "e2e-user",
    }
    return subprocess.run(
        [squarepeg_bin(), *argv], env=env, capture_output=True, text=True, timeout=60
    )


def main_container(manifest: dict[str, Any]) -> dict[str, Any]:
    spec = manifest["spec"]["template"]["spec"] if manifest["kind"] == "Job" else manifest["spec"]
    container: dict[str, Any] = spec["containers"][0]
    return container


def check_pod_spec(manifest: dict[str, Any], labels: dict[str, str]) -> None:
    container = main_container(manifest)
    assert container["args"] == ["echo", "hi"]
    quantities = {"cpu": "500m", "memory": "512Mi"}
    assert container["resources"] == {"requests": quantities, "limits": quantities}
    assert labels["app.kubernetes.io/managed-by"] == "squarepeg"
    assert labels["squarepeg.io/created-by"] == "e2e-user"
    assert len(labels["squarepeg.io/run-id"]) == 36  # a UUID


def test_pod_dry_run(tmp_path: Path) -> None:
    result = run(
        tmp_path, "run", "--dry-run", "--cpus", "0.5", "-m", "512m", "alpine", "echo", "hi"
    )
    assert result.returncode == 0, result.stderr
    manifest = yaml.safe_load(result.stdout)
    assert manifest["kind"] == "Pod"
    assert manifest["spec"]["restartPolicy"] == "Never"
    assert manifest["metadata"]["name"].startswith("squarepeg-alpine-")
    labels = manifest["metadata"]["labels"]
    assert "squarepeg.io/keep" not in labels
    check_pod_spec(manifest, labels)


def test_keep_label_with_keep(tmp_path: Path) -> None:
    result = run(tmp_path, "run", "--dry-run", "--keep", "alpine")
    assert yaml.safe_load(result.stdout)["metadata"]["labels"]["squarepeg.io/keep"] == "true"


def test_job_dry_run(tmp_path: Path) -> None:
    result = run(
        tmp_path, "run", "--dry-run", "--mode", "job", "--cpus", "0.5", "-m", "512m",
        "alpine", "echo", "hi",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = yaml.safe_load(result.stdout)
    assert manifest["kind"] == "Job" and manifest["apiVersion"] == "batch/v1"
    spec = manifest["spec"]
    assert (spec["backoffLimit"], spec["completions"], spec["parallelism"]) == (0, 1, 1)
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    check_pod_spec(manifest, spec["template"]["metadata"]["labels"])
    assert manifest["metadata"]["labels"] == spec["template"]["metadata"]["labels"]
    assert "&id" not in result.stdout


def test_stdout_is_only_yaml_and_errors_are_one_line(tmp_path: Path) -> None:
    ok = run(tmp_path, "run", "--dry-run", "alpine")
    assert ok.stdout.startswith("apiVersion: v1\n")
    bad = run(tmp_path, "run", "--dry-run", "--cpus", "nan", "alpine")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("squarepeg: --cpus")


def test_version_and_help(tmp_path: Path) -> None:
    assert run(tmp_path, "--version").stdout.startswith("squarepeg 0.")
    help_result = run(tmp_path, "--help")
    assert help_result.returncode == 0 and "run" in help_result.stdout
