"""`-i` never succeeds silently without reading stdin (issue 17, item 6): squarepeg does not
attach, so piped or redirected input is refused in one line, exit 2, before anything is created;
on a terminal a warning says that stdin is not forwarded."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from dependency_injector import providers

from helpers.squarepeg_runs import USER
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg.container import Container
from pegboard.app.squarepeg.run_use_case import execute
from pegboard.app.squarepeg.seams import stdin_brings_input
from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.request import RunRequest

Setup = tuple[Container, FakeCluster, io.StringIO]


@pytest.fixture
def setup(tmp_path: Any) -> Iterator[Setup]:
    cluster = FakeCluster(FakeClock())
    c = Container()
    err = io.StringIO()
    with c.override_providers(
        cluster=providers.Object(cluster),
        clock=providers.Object(cluster.clock),
        stdout=providers.Object(io.StringIO()),
        stderr=providers.Object(err),
        environ=providers.Object({"HOME": str(tmp_path), "LOGNAME": USER}),
        user_name=providers.Object(USER),
    ):
        yield c, cluster, err


def request(**changes: Any) -> RunRequest:
    return RunRequest(image="alpine", command=("sh",), no_default_config=True, **changes)


def test_piped_stdin_with_i_is_refused_before_anything_is_created(setup: Setup) -> None:
    c, cluster, _ = setup
    seams = attrs.evolve(c.seams(), stdin_brings_input=lambda: True)
    with pytest.raises(UsageError, match=r"^-i: stdin is a pipe or a file, .*drop -i$"):
        execute(request(interactive=True), seams, c.cluster_ports())
    assert cluster.requests == []


def test_i_on_a_terminal_runs_and_says_stdin_is_not_forwarded(setup: Setup) -> None:
    c, cluster, err = setup
    cluster.script_pod("p", PodScript.completes())
    seams = attrs.evolve(c.seams(), stdin_brings_input=lambda: False)
    assert execute(request(interactive=True, name="p", quiet=True), seams, c.cluster_ports()) == 0
    assert "-i: stdin is not forwarded to the container" in err.getvalue()


def test_dry_runs_and_runs_without_i_never_look_at_stdin(setup: Setup) -> None:
    c, cluster, _ = setup
    cluster.script_pod("p", PodScript.completes())

    def must_not_ask() -> bool:
        raise AssertionError("stdin inspected")

    seams = attrs.evolve(c.seams(), stdin_brings_input=must_not_ask)
    assert execute(request(interactive=True, dry_run=True), seams, c.cluster_ports()) == 0
    assert execute(request(name="p", quiet=True), seams, c.cluster_ports()) == 0


def probe(stdin: Any) -> str:
    code = "from pegboard.app.squarepeg.seams import stdin_brings_input;print(stdin_brings_input())"
    done = subprocess.run(
        [sys.executable, "-c", code], stdin=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_what_counts_as_input(tmp_path: Path) -> None:
    data = tmp_path / "input.txt"
    data.write_text("echo hi\n")
    with data.open() as file:
        assert probe(file) == "True"  # `< file`
    assert probe(subprocess.PIPE) == "True"  # `echo ... |`
    with open(os.devnull) as null:
        assert probe(null) == "False"  # `< /dev/null`: nothing to lose
    assert probe(subprocess.DEVNULL) == "False"
    assert isinstance(stdin_brings_input(), bool)
