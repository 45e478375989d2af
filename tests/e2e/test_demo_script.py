"""`make demo` keeps working, and installs only what it runs (issue 12 item 16).

The demo script runs here with the installed console scripts (about 5 s: one sandbox, three
squarepeg runs, one runpod-deploy run); what `make demo` would install into a fresh venv is read
from `make -n`, which installs nothing.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.components import require_executable

REPO = Path(__file__).resolve().parents[2]


def test_make_demo_installs_no_dev_extras(tmp_path: Path) -> None:
    require_executable("make")
    planned = subprocess.run(
        ["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    installs = [line for line in planned.splitlines() if "pip install" in line]
    # pegboard with its runtime dependencies and at most the runtime extras (`runpod`)
    assert any(re.search(r"install -q '\.(\[runpod\])?'$", line) for line in installs), planned
    assert not any("dev" in line.split("pip install", 1)[1] for line in installs), planned
    assert "scripts/demo.sh" in planned


@pytest.mark.slow
def test_the_demo_script_runs_end_to_end(tmp_path: Path) -> None:
    for tool in ("bash", "python3"):
        require_executable(tool)
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        env={
            "BIN": str(Path(sys.executable).parent),
            "PATH": "/usr/bin:/bin",
            "TMPDIR": str(tmp_path),
            "HOME": str(tmp_path / "home"),
        },
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard, not a measurement
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "demo finished" in done.stderr and "Traceback" not in done.stderr
    assert "HELLO_DONE" in done.stdout  # the runpod-deploy part ran, not just squarepeg's
    assert not list(tmp_path.glob("pegboard-demo.*"))  # its scratch directory is gone
