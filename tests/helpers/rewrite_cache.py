"""pytest's assertion-rewrite cache written once, before the xdist workers start.

pytest rewrites the asserts of every test module, conftest and plugin it imports, and keeps the
result in `__pycache__/<name>.cpython-311-pytest-<version>.pyc` beside the module, unless
bytecode writing is off (PYTHONDONTWRITEBYTECODE, set on this project's CI machine): then each of
`make test`'s workers rewrites all of them again at collection, ~5 s of CPU each (visiting
4,600 asserts, then compiling). A worker reads a cached rewrite whatever that setting says, so
the controller, which imports no test module itself, writes the cache for the modules the
workers will import before it starts them: the rewrite is done once, split over two processes
(CI has two cores), and a second run of an unchanged tree finds it all cached (~1 s).

Only pytest's own rewrite is written, by pytest's own functions, into the place it reads from;
a module rewritten with another pytest version, or changed since, is rewritten again by the
worker as before. Anything unexpected (another pytest's internals, a read-only tree) leaves the
cache as it was: the workers then rewrite what they import, as without this.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

WARM_PROCESSES = 2  # CI's cores


def _modules_to_rewrite(config: pytest.Config) -> list[Path]:
    """The files the workers will import through the rewrite hook: every conftest and test
    module (`python_files`) under the run's paths, and the plugins and conftests the controller
    has rewritten already (pytest_plugins, the pegboard entry point)."""
    from _pytest.pathlib import fnmatch_ex

    hook = config.pluginmanager.rewrite_hook
    found: dict[Path, None] = dict.fromkeys(getattr(hook, "_rewritten_names", {}).values())
    patterns = config.getini("python_files")
    for arg in config.args:
        root = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        files = [root] if root.is_file() else sorted(root.rglob("*.py")) if root.is_dir() else []
        for path in files:
            if "__pycache__" in path.parts:
                continue
            if path.name == "conftest.py" or any(fnmatch_ex(p, path) for p in patterns):
                found[path.resolve()] = None
    return list(found)


def _warm(config: pytest.Config, paths: list[Path]) -> None:
    from _pytest.assertion.rewrite import (
        PYC_TAIL,
        _read_pyc,
        _rewrite_test,
        _write_pyc,
        assertstate_key,
        get_cache_dir,
        try_makedirs,
    )

    state = config.stash[assertstate_key]
    for fn in paths:
        cache_dir = get_cache_dir(fn)
        if not try_makedirs(cache_dir):
            continue
        pyc = cache_dir / (fn.name[:-3] + PYC_TAIL)
        if _read_pyc(fn, pyc) is not None:
            continue
        source_stat, co = _rewrite_test(fn, config)
        _write_pyc(state, co, source_stat, pyc)


def write_rewrite_cache(config: pytest.Config) -> None:
    """Rewrite, and cache, what the workers will import: in this process and WARM_PROCESSES - 1
    forked ones, each taking every n-th module, all done when this returns."""
    if config.getoption("assertmode") != "rewrite" or not hasattr(os, "fork"):
        return
    try:
        paths = _modules_to_rewrite(config)
        children = []
        for index in range(1, WARM_PROCESSES):
            pid = os.fork()
            if pid == 0:  # a child: its share, then out without running pytest's exit code
                code = 0
                try:
                    _warm(config, paths[index::WARM_PROCESSES])
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            children.append(pid)
        try:
            _warm(config, paths[0::WARM_PROCESSES])
        finally:
            for pid in children:
                os.waitpid(pid, 0)
    except Exception as exc:  # the workers rewrite what is not cached, as without this
        sys.stderr.write(f"rewrite cache not written: {exc!r}\n")
