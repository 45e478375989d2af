"""Where a provider's pods are reached, as pod pointers record it: the `locator` object of a
pointer (the plugin's typed locator, unstructured: provider_plugin.unstructure_locator), read
back for the commands after the run (`cleanup`, `logs`, `ls-stale`).

Pointers written by older releases still load: keys a plugin's locator does not know are
ignored, missing ones take its defaults, and the plugin's `legacy_locator` says what an older
pointer implies (the local provider's top-level `pods_root`). From a pointer, the locator also
names the pod (`pod_id`), so a changed host key is refused naming it.

Files a run keeps beside its pointer (`<stamp>.known_hosts`, the pinned host keys) and that its
locator names go with the pointer when it is removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pegboard.domain.gpujob.provider_registry import ProviderRegistry
from pegboard.domain.gpujob.stale import pointer_pod_id, pointer_provider

LOCATOR_KEY = "locator"  # where a pointer keeps its backend's locator


def recorded_locator(pointer: Mapping[str, Any], providers: ProviderRegistry) -> dict[str, Any]:
    """The locator a pod pointer recorded (unstructured), with the pod it names; {} when it
    recorded none (the provider's defaults reach its pods)."""
    recorded = pointer.get(LOCATOR_KEY)
    locator = dict(recorded) if isinstance(recorded, Mapping) else {}
    plugin = providers.get(pointer_provider(pointer))
    if plugin is not None:
        locator = {**plugin.legacy_locator(pointer), **locator}
    pod_id = pointer_pod_id(pointer)
    if locator and pod_id:
        locator.setdefault("pod_id", pod_id)
    return locator


def run_files_beside(pointer_path: Path, pointer: Mapping[str, Any]) -> list[Path]:
    """The files of the run beside its pointer that its locator names (`<stamp>.<suffix>`):
    removed with it. Never a file the pointer merely names elsewhere."""
    recorded = pointer.get(LOCATOR_KEY)
    values = recorded.values() if isinstance(recorded, Mapping) else ()
    files = []
    for value in values:
        if not isinstance(value, str) or not value:
            continue
        path = Path(value)
        if path != pointer_path and path == pointer_path.with_suffix(path.suffix):
            files.append(path)
    return files


def forget_run_files(pointer_path: Path, pointer: Mapping[str, Any]) -> None:
    """Remove the run's files beside its pointer (the pod is gone)."""
    for path in run_files_beside(pointer_path, pointer):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # a leftover pin is harmless: it only ever names that pod
