"""TEST-ONLY: stop `runpod-deploy run` at a named point so a test can SIGKILL it there.

    PEGBOARD_TEST_STOP_AT=<point>  PEGBOARD_TEST_STOP_DIR=<dir>  runpod-deploy run ...

When the run reaches <point> it creates `<dir>/<point>.reached` (with its pid) and blocks
until a signal ends it: the test waits for the file and then kills the process, so the kill
lands exactly at that boundary (no sleeps). Points: `enter-<phase>` for every phase the run
enters (validate ... manifest), `before-create`, `after-create` (the pod id exists, no pointer
names it yet), `after-pointer` (the per-run pointer names the pod), `after-lifecycle`.
Unset (always, outside tests): a no-op. Never set these in production.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from pathlib import Path

STOP_AT_ENV = "PEGBOARD_TEST_STOP_AT"
STOP_DIR_ENV = "PEGBOARD_TEST_STOP_DIR"


def kill_point(environ: Mapping[str, str], point: str) -> None:
    """Block here forever if the test hook names this point; otherwise return at once."""
    if environ.get(STOP_AT_ENV) != point or not environ.get(STOP_DIR_ENV):
        return
    marker = Path(environ[STOP_DIR_ENV]) / f"{point}.reached"
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(f"{os.getpid()}\n")
    os.replace(tmp, marker)
    while True:  # until the test's SIGKILL
        signal.pause()
