"""Skip a test when a system component is missing, except in CI, where that is a failure."""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_executable(name: str, *, path: str | None = None, install_hint: str = "") -> str:
    """Return the executable's path; skip (or fail under CI) with a clear reason when absent."""
    found = path if path and os.access(path, os.X_OK) else shutil.which(name)
    if found:
        return found
    reason = f"{name} is not installed" + (f" ({install_hint})" if install_hint else "")
    if in_ci():
        pytest.fail(f"{reason}; .ci/run must install it", pytrace=False)
    pytest.skip(reason)
