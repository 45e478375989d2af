"""The composition roots import dependency-injector without the web frameworks it supports."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

PROBE = """
import sys
import pegboard.app.squarepeg.container, pegboard.app.runpod_deploy.container
loaded = sorted(n for n in ("fastapi", "starlette", "pydantic_settings") if n in sys.modules)
print(",".join(loaded))
import {later}  # still importable afterwards, for a program that uses it
"""


@pytest.mark.parametrize("later", ["fastapi", "pydantic_settings"])
def test_containers_do_not_import_optional_web_frameworks(later: str) -> None:
    if importlib.util.find_spec(later) is None:
        pytest.skip(f"{later} is not installed (the `runpod` extra brings it)")
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(later=later)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
