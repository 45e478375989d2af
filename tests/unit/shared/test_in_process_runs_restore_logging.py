"""pegboard.testing's in-process runs leave the process's logging as they found it: -v/-q set
the `pegboard` logger and call tracing for the CLI's whole process, and a user's next test must
not inherit them (a `-q` run left the logger at WARNING; a later caplog test saw no records)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from pegboard.adapters.fakes import FakeCluster
from pegboard.app.shared import call_trace
from pegboard.testing import RunpodDeploy, Squarepeg

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_verbose_squarepeg_run_leaves_call_tracing_as_it_was(tmp_path: Path) -> None:
    before = call_trace.observer()
    result = Squarepeg(cluster=FakeCluster(), home=tmp_path).clean("-v", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert call_trace.observer() is before


def test_a_quiet_runpod_deploy_run_leaves_the_logger_as_it_was(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "local", tmp_path / "local")
    logger = logging.getLogger("pegboard")
    before = (logger.level, list(logger.handlers), logger.propagate)
    result = RunpodDeploy(home=tmp_path / "home").validate(tmp_path / "local/hello.yaml", "-q")
    assert result.exit_code == 0, result.stderr
    assert (logger.level, list(logger.handlers), logger.propagate) == before


def test_a_verbose_runpod_deploy_run_leaves_both_as_they_were(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "local", tmp_path / "local")
    logger = logging.getLogger("pegboard")
    before = (logger.level, list(logger.handlers), logger.propagate, call_trace.observer())
    result = RunpodDeploy(home=tmp_path / "home").validate(tmp_path / "local/hello.yaml", "-v")
    assert result.exit_code == 0, result.stderr
    assert (logger.level, list(logger.handlers), logger.propagate, call_trace.observer()) == before
