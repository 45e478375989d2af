"""The cyclic garbage collector paused while a console script starts.

Start-up allocates tens of thousands of objects that live until exit (modules, classes,
functions, click's commands, the kubernetes client), and the collector's passes over them find
nothing to free: ~10 ms of a `squarepeg run --dry-run` and ~25 ms of a trivial `squarepeg run`
(`gc.callbacks` timings). So each console script starts with the collector off and turns it
back on after STARTUP_BUDGET_SECONDS: a command that ends sooner never runs it; one that goes
on (a log stream, a monitor loop, the sandbox) gets it back while it works, so garbage cycles
never pile up for longer than the budget. Reference counting frees everything else as usual.
Tests call the CLIs' `main()`, which leaves the collector alone.
"""

from __future__ import annotations

import gc
import threading

STARTUP_BUDGET_SECONDS = 2.0


def pause_collector_for_startup(budget: float = STARTUP_BUDGET_SECONDS) -> threading.Timer | None:
    """Turn the collector off now and back on after `budget` seconds (a daemon timer, so it
    never holds the process up); None, and nothing changed, when it is already off."""
    if not gc.isenabled():
        return None
    gc.disable()
    timer = threading.Timer(budget, gc.enable)
    timer.daemon = True
    timer.start()
    return timer
