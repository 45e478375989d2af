"""Shared bench helpers: the baseline venvs (squarepeg 0.4.1, runpod-deploy 0.8.4) and timing utilities."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_VENV = REPO / ".bench-venv"
BASELINE_SQUAREPEG = "squarepeg==0.4.1"
# runpod-deploy 0.8.4 requires Python >= 3.13: its own venv, made with that interpreter.
RUNPOD_DEPLOY_VENV = REPO / ".bench-venv-runpod-deploy"
BASELINE_RUNPOD_DEPLOY = "runpod-deploy==0.8.4"
PYTHON_313 = Path("/root/.pyenv/versions/3.13.0/bin/python")


def our_bin(name: str) -> Path:
    """The console script of our own install, next to the running interpreter."""
    return Path(sys.executable).parent / name


def baseline_squarepeg() -> Path | None:
    """Path of squarepeg 0.4.1's console script in .bench-venv, creating the venv if needed.

    Returns None (and says why on stderr) when it cannot be installed, so benches can report
    the baseline as unavailable instead of failing.
    """
    script = BENCH_VENV / "bin" / "squarepeg"
    if script.exists():
        return script
    try:
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run(
            [str(BENCH_VENV / "bin" / "pip"), "install", "-q", BASELINE_SQUAREPEG],
            check=True,
            timeout=600,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"bench: could not install {BASELINE_SQUAREPEG}: {exc}", file=sys.stderr)
        return None
    return script if script.exists() else None


def baseline_runpod_deploy() -> Path | None:
    """Path of runpod-deploy 0.8.4's console script in its own Python 3.13 venv, made if needed.

    The interpreter is $PEGBOARD_BENCH_PYTHON313, else pyenv's 3.13.0. Returns None (and says
    why on stderr) when it cannot be installed, like `baseline_squarepeg`.
    """
    script = RUNPOD_DEPLOY_VENV / "bin" / "runpod-deploy"
    if script.exists():
        return script
    python = os.environ.get("PEGBOARD_BENCH_PYTHON313", str(PYTHON_313))
    try:
        subprocess.run([python, "-m", "venv", str(RUNPOD_DEPLOY_VENV)], check=True)
        subprocess.run(
            [str(RUNPOD_DEPLOY_VENV / "bin" / "pip"), "install", "-q", BASELINE_RUNPOD_DEPLOY],
            check=True,
            timeout=600,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"bench: could not install {BASELINE_RUNPOD_DEPLOY}: {exc}", file=sys.stderr)
        return None
    return script if script.exists() else None


def wall_times(
    argv: Sequence[str], *, runs: int = 7, env: dict[str, str] | None = None, warmup: int = 1
) -> list[float]:
    """Wall-clock seconds of `runs` executions of argv (after `warmup` unmeasured ones)."""
    full_env = {**os.environ, **(env or {})}
    samples: list[float] = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        subprocess.run(argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return samples


def paired_wall_times(
    argv_a: Sequence[str],
    argv_b: Sequence[str],
    *,
    runs: int = 7,
    env: dict[str, str] | None = None,
) -> tuple[list[float], list[float]]:
    """Wall times of two commands measured alternately, so drift in machine load hits both."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(runs):
        a += wall_times(argv_a, runs=1, env=env, warmup=0 if a else 1)
        b += wall_times(argv_b, runs=1, env=env, warmup=0 if b else 1)
    return a, b


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
