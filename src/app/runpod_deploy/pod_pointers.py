"""Pod pointers (state files): the JSON file naming the pod a run created, written atomically.

Two exist per run: the per-run pointer (`<state dir>/runs/<run stamp>.json`, unique to the run,
written before the pod is created and the one every release command names) and the config's
`state_file` (shared by the runs of one config: recycle, `logs --config`, 0.8.4 scripts).
The state directory follows XDG: `$XDG_STATE_HOME/runpod-deploy` (default
`~/.local/state/runpod-deploy`), holding the per-config defaults of
`templates.default_state_file` and `runs/`. Still read, never written: the state directory of
earlier pegboard releases, `~/.runpod-deploy/state` (and its `runs/`), and 0.8.4's
`~/.runpod-deploy-current`. A config's own `state_file:` elsewhere is found through `--config`
or `--state-file`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pegboard.app.shared.seams import read_record_bytes
from pegboard.domain.gpujob.records import MANIFEST_NAME
from pegboard.domain.gpujob.stale import pointer_pod_id, pointer_pod_name
from pegboard.domain.input_limits import MAX_CONFIG_BYTES, MAX_RECORD_BYTES, decode_text, loads_json

from .provider_locators import forget_run_files
from .run_recorder import write_json_atomic
from .state_paths import RUN_POINTERS_SUBDIR, StatePaths

logger = logging.getLogger(__name__)


class PodPointer:
    """A state file naming the pod a run created (atomic writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        try:  # the path comes from the config (`state_file`): /dev/zero must not hang
            data = loads_json(decode_text(read_record_bytes(self.path, MAX_CONFIG_BYTES)))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # InputRejected and malformed JSON are ValueErrors
            logger.warning("[state] ignoring unreadable state file %s: %s", self.path, exc)
            return None
        return data if isinstance(data, dict) else None

    def write(self, data: dict[str, Any]) -> None:
        write_json_atomic(self.path, data)

    def remove_if_points_at(self, pod_id: str) -> bool:
        """Unlink only if the file still names `pod_id` (never another run's pointer)."""
        current = self.read()
        if current is None or current.get("pod_id") != pod_id:
            return False
        _unlink_with_its_pin(self.path, current)
        return True

    def remove_if_no_pod(self) -> bool:
        """Unlink a pointer written before create that never got a pod id."""
        current = self.read()
        if current is None or current.get("pod_id") is not None:
            return False
        _unlink_with_its_pin(self.path, current)
        return True


def run_pointer_path(state_dir: Path, run_stamp: str) -> Path:
    """`<state dir>/runs/<run stamp>.json`: unique per run, and short whatever the job name."""
    return state_dir / RUN_POINTERS_SUBDIR / f"{run_stamp}.json"


def read_pointer(path: Path) -> dict[str, Any] | None:
    """A state file's content via run's reader (None: missing or unreadable)."""
    return PodPointer(path).read()


def user_pointers(state: StatePaths) -> dict[str, dict[str, Any]]:
    """Every readable state file of this user that names a pod: the state directory and its
    `runs/`, the same in the legacy directory, and 0.8.4's `~/.runpod-deploy-current`."""
    found = {}
    paths = [state.legacy_file]
    for directory in (state.directory, state.legacy_directory):
        if directory.is_dir():
            paths += sorted(directory.glob("*.json"))
            paths += sorted((directory / RUN_POINTERS_SUBDIR).glob("*.json"))
    for path in paths:
        data = read_pointer(path)
        if data is not None and (pointer_pod_id(data) or pointer_pod_name(data)):
            found[str(path)] = data
    return found


def unlink_pointer_if_names(path: Path, pod_id: str | None, *, pod_name: str | None = None) -> bool:
    """Remove the state file only while it still names `pod_id` (any spelling of the key), or,
    with `pod_id` None, while it still names no pod id but the pod name `pod_name`."""
    current = read_pointer(path)
    if current is None or pointer_pod_id(current) != pod_id:
        return False
    if pod_id is None and (pod_name is None or pointer_pod_name(current) != pod_name):
        return False
    _unlink_with_its_pin(path, current)
    return True


def _unlink_with_its_pin(path: Path, pointer: Mapping[str, Any]) -> None:
    """Remove a pointer, and the run's files beside it that its locator names (the pinned host
    key file; never a file the pointer merely mentions elsewhere)."""
    path.unlink(missing_ok=True)
    forget_run_files(path, pointer)


def lifecycle_of(pointer: Mapping[str, Any]) -> str | None:
    """The lifecycle action of the run that wrote the pointer (from its manifest), if known."""
    recorded = pointer.get("lifecycle_action")
    if isinstance(recorded, str) and recorded:
        return recorded
    run_dir = pointer.get("run_dir")
    if not isinstance(run_dir, str) or not run_dir:
        return None
    from pegboard.domain.gpujob.forensics import parse_manifest

    try:  # bounded and depth-checked like every record reader (input_limits)
        manifest = parse_manifest(
            read_record_bytes(Path(run_dir) / MANIFEST_NAME, MAX_RECORD_BYTES)
        )
    except (OSError, ValueError):
        return None
    action = manifest.get("lifecycle_action") if isinstance(manifest, dict) else None
    # The manifest must be about the pod the pointer names (a later run may have reused it).
    if manifest.get("pod_id") != pointer_pod_id(pointer):
        return None
    return action if isinstance(action, str) and action else None
