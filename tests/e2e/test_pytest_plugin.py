"""pegboard's pytest plugin as a user's project meets it: loaded by the `pegboard` entry point
in a project that is not this repository, cheap to load, and off with `-p no:pegboard`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

USER_TEST = """
from pegboard.adapters.fakes import PodScript

def test_uses_the_fixtures(fake_cluster, squarepeg_on_fakes):
    fake_cluster.script_pod(lambda pod: True, PodScript().running(at=1).log(b"ok\\\\n", at=1).exit(0, at=2))
    result = squarepeg_on_fakes.run("alpine", "echo", "ok")
    assert (result.exit_code, result.stdout) == (0, "ok\\\\n")
"""


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The user's own pytest: none of this run's options (PYTEST_ADDOPTS, e.g. a --basetemp).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_users_project_gets_the_fixtures_from_the_entry_point(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    off = _pytest(tmp_path, "-p", "no:pegboard")
    assert off.returncode != 0 and "fixture 'fake_cluster' not found" in off.stdout


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "import pegboard.testing.pytest_plugin\n"
        "heavy = ['kubernetes', 'runpod', 'paramiko', 'dependency_injector', 'yaml', 'click']\n"
        "print([name for name in heavy if name in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
