"""The `runpod-deploy` console script: the CLI imported and run with the collector paused for
start-up (app/shared/startup_gc.py), then left without the interpreter's teardown. A `run`
first lets its provider start reaching the machine (early_contact.py)."""

from __future__ import annotations

import sys

from pegboard.app.shared.startup_gc import pause_collector_for_startup


def main() -> None:
    pause_collector_for_startup()
    from pegboard.app.runpod_deploy.early_contact import contact_early

    contact_early(sys.argv[1:])
    from pegboard.app.runpod_deploy.cli import console_main

    console_main()
