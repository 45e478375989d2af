"""The `runpod-deploy` console script: the CLI imported and run with the collector paused for
start-up (app/shared/startup_gc.py), then left without the interpreter's teardown."""

from __future__ import annotations

from pegboard.app.shared.startup_gc import pause_collector_for_startup


def main() -> None:
    pause_collector_for_startup()
    from pegboard.app.runpod_deploy.cli import console_main

    console_main()
