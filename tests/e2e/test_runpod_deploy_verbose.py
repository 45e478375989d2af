"""`runpod-deploy -v` shows the provider and shell calls it makes, with their durations
(issue 12 item 12); without -v none of them (tests/unit/test_traced_port.py has the details)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.runpod_local import LocalDeploy

CALL = re.compile(r"^runpod-deploy: local\.(cloud|shell|sync)\.\w+\(.*\) -> .+ in \d+ ms$", re.M)


def test_verbose_run_shows_each_call_and_its_duration(tmp_path: Path) -> None:
    deploy = LocalDeploy(tmp_path)
    ran = deploy.cli("run", "--config", str(deploy.project / "hello.yaml"), "-v")
    err = ran.stderr.decode()
    assert ran.returncode == 0, err
    calls = CALL.findall(err)
    assert {"cloud", "shell", "sync"} <= set(calls), err
    assert re.search(
        r"^runpod-deploy: local\.cloud\.create_pod\(<PodRequest>\) -> ok in ", err, re.M
    )
    assert re.search(r"^runpod-deploy: local\.shell\.run\('true', .*\) -> exit 0 in ", err, re.M)


def test_verbose_pod_command_shows_its_provider_call(tmp_path: Path) -> None:
    deploy = LocalDeploy(tmp_path)
    listed = deploy.cli("ls-stale", "--provider", "local", "-v")
    assert (
        listed.returncode == 0
        and b" -> ok in " not in deploy.cli("ls-stale", "--provider", "local").stderr
    )
    assert re.search(
        r"^runpod-deploy: local\.cloud\.list_pods\(\) -> ok in \d+ ms$",
        listed.stderr.decode(),
        re.M,
    )
