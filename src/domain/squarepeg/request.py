"""RunRequest: what the user typed for `squarepeg run`, before config and defaults apply.

Every field is None (or empty / False) when the flag was not given, so the claims protecting
CLI values from config passthrough can be derived from this object alone.
"""

from __future__ import annotations

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

__all__ = [
    "EnvFile",
    "RunRequest",
]


@attrs.frozen
class EnvFile:
    """The lines of one `--env-file`, read by the app layer (the domain does no I/O)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    path: str
    lines: tuple[str, ...]


@attrs.frozen
class RunRequest:
    """The `squarepeg run` command line, parsed but not yet resolved against config."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    image: str
    command: tuple[str, ...] = ()
    # container
    env: tuple[str, ...] = ()  # raw `-e` values: KEY=VALUE or bare KEY
    env_files: tuple[EnvFile, ...] = ()
    volumes: tuple[str, ...] = ()  # raw `-v` values
    workdir: str | None = None
    entrypoint: str | None = None
    interactive: bool = False
    tty: bool = False
    kube_expand: bool = False  # let the kubelet expand $(VAR) and $$ (see kube_references.py)
    pull: str | None = None
    container_name: str | None = None
    # resources (raw strings; converted and validated by pegboard.domain.squarepeg.quantities)
    cpus: str | None = None
    memory: str | None = None
    gpus: str | None = None
    request_cpu: str | None = None
    limit_cpu: str | None = None
    request_memory: str | None = None
    limit_memory: str | None = None
    # docker flags mapped onto Kubernetes fields (pegboard.domain.squarepeg.docker_flags)
    user: str | None = None
    labels: tuple[str, ...] = ()
    shm_size: str | None = None
    read_only: bool = False
    cap_add: tuple[str, ...] = ()
    cap_drop: tuple[str, ...] = ()
    security_opt: tuple[str, ...] = ()
    hostname: str | None = None
    add_hosts: tuple[str, ...] = ()
    tmpfs: tuple[str, ...] = ()
    platform: str | None = None
    privileged: bool = False
    # resource and run
    name: str | None = None
    namespace: str | None = None
    context: str | None = None
    mode: str | None = None
    rm: bool = False
    keep: bool = False
    dry_run: bool = False
    dry_run_server: bool = False
    timeout: int | None = None
    quiet: bool = False
    no_color: bool = False
    result_file: str | None = (
        None  # where the run's JSON record goes (app/squarepeg/result_file.py)
    )
    # config layers
    config_paths: tuple[str, ...] = ()
    no_default_config: bool = False
    profile: str | None = None
