"""`-v/--volume`, `--tmpfs` and `--shm-size` -> Pod volumes and the container's volumeMounts.

Forms of `-v` (docker's):
  /ctr/path               anonymous emptyDir (scratch space that lives as long as the pod)
  NAME:/ctr[:ro|rw]       the volume `volumes.NAME` from config; an unconfigured NAME is an error
                          (docker would create a persistent named volume; Kubernetes has no such thing)
  /host:/ctr[:ro|rw]      hostPath (also ./rel, resolved against the working directory), only with
                          config `allow_host_path_mounts: true`

A volume squarepeg makes up for `-v` (anonymous or host path) is named after the *container*
path, as in 0.4.1 (`-v /srv/data:/data` -> `data`), so config passthrough that refers to it by
name keeps working. Volume names never collide silently: configured names are reserved first,
and a generated name that is taken gets a `-2`, `-3`, ... suffix. Two mounts on one container
path are rejected.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import ConfigError, ConfigProblem, UsageError
from pegboard.domain.squarepeg.config import VolumeConfig
from pegboard.domain.squarepeg.quantities import bytes_to_k8s_memory, docker_memory_to_bytes

__all__ = [
    "MAX_NAME_LENGTH",
    "VolumePlan",
    "plan_volumes",
    "sanitize_volume_name",
]

MAX_NAME_LENGTH = 63
_NOT_NAME = re.compile(r"[^a-z0-9-]+")
_VOLUME_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def sanitize_volume_name(raw: str) -> str:
    """Lowercase, runs outside `[a-z0-9-]` -> '-', outer '-' stripped, ≤ 63; empty -> `vol`."""
    name = _NOT_NAME.sub("-", raw.lower()).strip("-")
    return name[:MAX_NAME_LENGTH].strip("-") or "vol"


@attrs.frozen
class VolumePlan:
    """Volumes and mounts in emission order, plus which ones the command line asked for."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    volumes: tuple[dict[str, Any], ...] = ()
    mounts: tuple[dict[str, Any], ...] = ()
    cli_volume_names: frozenset[str] = frozenset()


@attrs.define
class _Builder:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    used_names: set[str]
    volumes: list[dict[str, Any]] = attrs.Factory(list)
    mounts: list[dict[str, Any]] = attrs.Factory(list)
    mount_sources: dict[str, str] = attrs.Factory(dict)  # normalised mountPath -> what asked for it
    cli_names: set[str] = attrs.Factory(set)
    emitted: set[str] = attrs.Factory(set)

    def unique_name(self, base: str) -> str:
        name, n = base, 1
        while name in self.used_names:
            n += 1
            suffix = f"-{n}"
            name = base[: MAX_NAME_LENGTH - len(suffix)].rstrip("-") + suffix
        self.used_names.add(name)
        return name

    def add_volume(self, name: str, source: Mapping[str, Any]) -> None:
        if name not in self.emitted:
            self.emitted.add(name)
            self.volumes.append({"name": name, **source})

    def add_mount(
        self, name: str, path: str, *, read_only: bool, origin: str, from_cli: bool
    ) -> None:
        key = posixpath.normpath(path)
        if key in self.mount_sources:
            raise UsageError(
                f"{origin}: mount path {path} is already used by {self.mount_sources[key]}"
            )
        self.mount_sources[key] = origin
        mount: dict[str, Any] = {"name": name, "mountPath": path}
        if read_only:
            mount["readOnly"] = True
        self.mounts.append(mount)
        if from_cli:
            self.cli_names.add(name)


def _configured_sources(
    configured: Mapping[str, VolumeConfig],
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Config name -> (Kubernetes volume name, volume source without squarepeg's own keys)."""
    result: dict[str, tuple[str, dict[str, Any]]] = {}
    owners: dict[str, str] = {}
    problems = []
    for key, entry in configured.items():
        name = sanitize_volume_name(key)
        if name in owners:
            problems.append(
                ConfigProblem(
                    "config",
                    f"volumes.{key}",
                    f"same volume name {name!r} as volumes.{owners[name]}",
                )
            )
            continue
        owners[name] = key
        source = {k: v for k, v in entry.volume_source().items() if k != "name"}
        result[key] = (name, source)
    if problems:
        raise ConfigError(problems)
    return result


def _container_path(path: str, *, origin: str) -> str:
    if not path.startswith("/"):
        raise UsageError(f"{origin}: the container path {path!r} must be absolute")
    return path


def _mode(raw: str, *, origin: str) -> bool:
    if raw not in ("ro", "rw"):
        raise UsageError(f"{origin}: mode must be ro or rw, got {raw!r}")
    return raw == "ro"


def plan_volumes(
    *,
    cli_volumes: Iterable[str] = (),
    configured: Mapping[str, VolumeConfig],
    allow_host_path_mounts: bool,
    cwd: str = "/",
    tmpfs: Iterable[str] = (),
    shm_size: str | None = None,
) -> VolumePlan:
    """Config auto-mounts first, then `-v` in order, then `--tmpfs`, then `--shm-size`."""
    sources = _configured_sources(configured)
    builder = _Builder(used_names={name for name, _ in sources.values()})
    for key, entry in configured.items():
        if entry.mount_path is None:
            continue
        name, source = sources[key]
        builder.add_volume(name, source)
        builder.add_mount(
            name,
            _container_path(entry.mount_path, origin=f"config volumes.{key}.mount_path"),
            read_only=entry.read_only,
            origin=f"config volumes.{key}",
            from_cli=False,
        )
    for spec in cli_volumes:
        origin = f"-v {spec}"
        fields = spec.split(":")
        if len(fields) > 3 or not all(fields[:2]):
            raise UsageError(f"{origin}: expected /ctr, NAME:/ctr[:ro|rw] or /host:/ctr[:ro|rw]")
        if len(fields) == 1:
            path = _container_path(fields[0], origin=origin)
            name = builder.unique_name(sanitize_volume_name(path))
            builder.add_volume(name, {"emptyDir": {}})
            builder.add_mount(name, path, read_only=False, origin=origin, from_cli=True)
            continue
        first, path = fields[0], _container_path(fields[1], origin=origin)
        read_only = _mode(fields[2], origin=origin) if len(fields) == 3 else False
        if first.startswith(("/", ".")):
            if not allow_host_path_mounts:
                raise UsageError(
                    f"{origin}: host path mounts are off; set 'allow_host_path_mounts: true' in "
                    "config (the path is on the node, not this machine), or use a configured volume"
                )
            host = posixpath.normpath(posixpath.join(cwd, first))
            name = builder.unique_name(sanitize_volume_name(path))
            builder.add_volume(name, {"hostPath": {"path": host}})
        else:
            if first.startswith("~"):
                raise UsageError(f"{origin}: '~' is not expanded here; give an absolute host path")
            if not _VOLUME_NAME.fullmatch(first):
                raise UsageError(f"{origin}: {first!r} is not a valid volume name")
            if first not in sources:
                known = ", ".join(sorted(sources)) or "none"
                raise UsageError(
                    f"{origin}: no volume {first!r} in config (volumes.{first}; configured: "
                    f"{known}); use -v {path} for scratch space"
                )
            name, source = sources[first]
            builder.add_volume(name, source)
        builder.add_mount(name, path, read_only=read_only, origin=origin, from_cli=True)
    for spec in tmpfs:
        origin = f"--tmpfs {spec}"
        path, _, options = spec.partition(":")
        path = _container_path(path, origin=origin)
        empty_dir: dict[str, Any] = {"medium": "Memory"}
        for option in filter(None, options.split(",")):
            if not option.startswith("size="):
                raise UsageError(f"{origin}: only the size= option can be expressed in Kubernetes")
            size = docker_memory_to_bytes(option[5:], flag="--tmpfs size")
            empty_dir["sizeLimit"] = bytes_to_k8s_memory(size)
        name = builder.unique_name(sanitize_volume_name("tmpfs-" + sanitize_volume_name(path)))
        builder.add_volume(name, {"emptyDir": empty_dir})
        builder.add_mount(name, path, read_only=False, origin=origin, from_cli=True)
    if shm_size is not None:
        size = docker_memory_to_bytes(shm_size, flag="--shm-size")
        name = builder.unique_name("dshm")
        builder.add_volume(
            name, {"emptyDir": {"medium": "Memory", "sizeLimit": bytes_to_k8s_memory(size)}}
        )
        builder.add_mount(
            name, "/dev/shm", read_only=False, origin=f"--shm-size {shm_size}", from_cli=True
        )
    return VolumePlan(
        volumes=tuple(builder.volumes),
        mounts=tuple(builder.mounts),
        cli_volume_names=frozenset(builder.cli_names),
    )
