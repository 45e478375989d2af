"""`runpod-deploy -v` shows the provider and shell calls it makes, with their durations
(issue 12 item 12); without -v none of them (tests/unit/test_call_trace.py has the details)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.runpod_local import LocalDeploy

CALL = re.compile(r"^\[call\] local\.(cloud|shell|sync)\.\w+\(.*\) \d+\.\d{3}s", re.M)


def test_verbose_run_shows_each_call_and_its_duration(tmp_path: Path) -> None:
    deploy = LocalDeploy(tmp_path)
    ran = deploy.cli("run", "--config", str(deploy.project / "hello.yaml"), "-v")
    err = ran.stderr.decode()
    assert ran.returncode == 0, err
    calls = CALL.findall(err)
    assert {"cloud", "shell", "sync"} <= set(calls), err
    assert re.search(r"^\[call\] local\.cloud\.create_pod\(<PodRequest>\) ", err, re.M)


def test_verbose_pod_command_shows_its_provider_call(tmp_path: Path) -> None:
    deploy = LocalDeploy(tmp_path)
    listed = deploy.cli("ls-stale", "--provider", "local", "-v")
    assert (
        listed.returncode == 0
        and b"[call]" not in deploy.cli("ls-stale", "--provider", "local").stderr
    )
    assert re.search(
        r"^\[call\] local\.cloud\.list_pods\(.*\) \d+\.\d{3}s$", listed.stderr.decode(), re.M
    )
