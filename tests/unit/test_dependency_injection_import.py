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


PYDANTIC_PROBE = """
import sys
import pegboard.app.squarepeg.container, pegboard.app.runpod_deploy.container
from pegboard.app.shared.dependency_injection import providers
print("pydantic" in sys.modules, "pydantic_core" in sys.modules)
import pydantic  # the real one afterwards, for a program that uses it
assert hasattr(pydantic, "BaseModel"), pydantic
print(providers.Factory(dict, a=1)())
"""


def test_containers_do_not_import_pydantic() -> None:
    # dependency-injector's `providers` imports pydantic only to look for pydantic 1's
    # BaseSettings (~18 ms of every `runpod-deploy run` and `squarepeg run`).
    if importlib.util.find_spec("pydantic") is None:
        pytest.skip("pydantic is not installed (the `runpod` extra brings it)")
    done = subprocess.run([sys.executable, "-c", PYDANTIC_PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False False", "{'a': 1}"]


ASYNCIO_PROBE = """
import sys, types
import pegboard.app.squarepeg.container, pegboard.app.runpod_deploy.container
from pegboard.app.shared.dependency_injection import providers
print("asyncio" in sys.modules, "ssl" in sys.modules)
print(providers.Factory(dict, a=1)())
def numbers():
    yield 1
print(type(providers.Callable(numbers)()).__name__)  # a generator result, as before
import asyncio  # the real one afterwards, for a program that uses it
assert hasattr(asyncio, "run") and hasattr(asyncio.coroutines, "_is_coroutine"), asyncio
async def answer():
    return 42
async def main():
    return await providers.Coroutine(answer)()  # async mode still works, on the real asyncio
print(asyncio.run(main()))
"""


def test_containers_do_not_import_asyncio() -> None:
    # dependency-injector's `providers` imports asyncio (and with it ssl, ~10-18 ms of every
    # `runpod-deploy run` and `squarepeg run`) only for the async mode pegboard never uses.
    done = subprocess.run([sys.executable, "-c", ASYNCIO_PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["False False", "{'a': 1}", "generator", "42"]
