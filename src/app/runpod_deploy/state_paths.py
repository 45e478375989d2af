"""Where runpod-deploy keeps this user's pod pointers (state files), by XDG.

Written: `$XDG_STATE_HOME/runpod-deploy/` (default `~/.local/state/runpod-deploy/`): the
per-config default state files (`templates.default_state_file`) and `runs/<run stamp>.json`.
Still read, never written: `~/.runpod-deploy/state/` (and its `runs/`), where earlier pegboard
releases wrote them, and 0.8.4's `~/.runpod-deploy-current`. docs/environment.md lists every
path and variable both tools use.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path

import attrs

from pegboard.app.shared import xdg
from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.gpujob.templates import DEFAULT_STATE_DIR, LEGACY_STATE_DIR

RUN_POINTERS_SUBDIR = "runs"
# 0.8.4's one state file for every config (its default `state_file`): still read, never written.
LEGACY_STATE_FILE = ".runpod-deploy-current"


@attrs.frozen
class StatePaths:
    """Where this user's pod pointers are: `directory` is written, the legacy places only read."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    directory: Path  # $XDG_STATE_HOME/runpod-deploy, default ~/.local/state/runpod-deploy
    legacy_directory: Path  # ~/.runpod-deploy/state (earlier pegboard releases)
    legacy_file: Path  # ~/.runpod-deploy-current (0.8.4's one state file for every config)

    def legacy_twin(self, default_state_file: Path) -> Path | None:
        """The same default state file where earlier releases wrote it, if it is there."""
        if default_state_file.parent != self.directory:
            return None
        twin = self.legacy_directory / default_state_file.name
        return twin if twin.is_file() else None


def state_paths(home: str, environ: Mapping[str, str]) -> StatePaths:
    """The state directory by the one XDG rule both tools use (app/shared/xdg.py), and the
    legacy places under `home`."""
    return StatePaths(
        directory=xdg.state_home(environ, home) / posixpath.basename(DEFAULT_STATE_DIR),
        legacy_directory=Path(home) / LEGACY_STATE_DIR.removeprefix("~/"),
        legacy_file=Path(home) / LEGACY_STATE_FILE,
    )
