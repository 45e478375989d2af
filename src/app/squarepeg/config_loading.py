"""Find squarepeg's config layers (as squarepeg 0.4.1 did) and merge them.

Layers, lowest precedence first:
1. the built-in defaults;
2. `$XDG_CONFIG_HOME/squarepeg/config.yaml` (default `~/.config/...`), else the old
   `~/.config/squarepeg/config.yaml` under $HOME, if one exists (skipped by --no-default-config);
3. `$SQUAREPEG_CONFIG`, a colon-separated list, left to right (empty segments skipped; a missing
   file is an error);
4. each `--config PATH`, left to right (`~` expanded; a missing file is an error).
CLI flags come on top of all of these (the run command applies them as claims).

The app layer never imports adapters: the document reader comes in as a parameter
(the container's `read_document`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from pegboard.app.shared import xdg
from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.squarepeg.config import SquarepegConfig
from pegboard.domain.squarepeg.layers import MergedConfig, built_in_defaults, merge_layers

CONFIG_ENV_VAR = "SQUAREPEG_CONFIG"
DEFAULT_CONFIG_RELATIVE = Path(".config") / "squarepeg" / "config.yaml"
ORIGIN_DEFAULT = "default location"
ORIGIN_ENV = f"${CONFIG_ENV_VAR}"

ReadDocument = Callable[[Path], SourceDocument]


@attrs.frozen
class ConfigSource:
    """One config file and why it was loaded ("default location", "$SQUAREPEG_CONFIG",
    "--config PATH")."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    path: Path
    origin: str


@attrs.frozen
class LoadedConfig:
    """The merged config plus the files it came from (what `config show` prints)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    merged: MergedConfig
    files: tuple[ConfigSource, ...]

    @property
    def config(self) -> SquarepegConfig:
        return self.merged.config


def default_config_file(environ: Mapping[str, str], home: str | Path) -> Path | None:
    """The user's config file: under $XDG_CONFIG_HOME, else at 0.4.1's `~/.config/...`."""
    new = xdg.config_home(environ, home) / "squarepeg" / "config.yaml"
    return xdg.first_existing([new, Path(home) / DEFAULT_CONFIG_RELATIVE])


def discover_config_files(
    *,
    config_paths: Sequence[str],
    no_default_config: bool,
    environ: Mapping[str, str],
    home: str | Path,
) -> tuple[ConfigSource, ...]:
    """The config files to load, lowest precedence first; ConfigError for missing explicit files."""
    home_path = Path(home)
    found: list[ConfigSource] = []
    problems: list[ConfigProblem] = []
    default_file = None if no_default_config else default_config_file(environ, home_path)
    if default_file is not None:
        found.append(ConfigSource(default_file, ORIGIN_DEFAULT))
    for segment in environ.get(CONFIG_ENV_VAR, "").split(":"):
        if not segment:
            continue
        path = _expand_user(segment, home_path)
        if path.exists():
            found.append(ConfigSource(path, ORIGIN_ENV))
        else:
            problems.append(
                ConfigProblem(
                    source=str(path), path="", message=f"no such file (from {ORIGIN_ENV})"
                )
            )
    for raw in config_paths:
        path = _expand_user(raw, home_path)
        if path.exists():
            found.append(ConfigSource(path, f"--config {raw}"))
        else:
            problems.append(
                ConfigProblem(
                    source=str(path), path="", message=f"no such file (from --config {raw})"
                )
            )
    if problems:
        raise ConfigError(problems)
    return tuple(found)


def load_config_layers(
    *,
    config_paths: Sequence[str],
    no_default_config: bool,
    profile: str | None,
    environ: Mapping[str, str],
    home: str | Path,
    read_document: ReadDocument,
) -> LoadedConfig:
    """Discover, read, interpolate, validate and merge every layer; every problem at once."""
    files = discover_config_files(
        config_paths=config_paths,
        no_default_config=no_default_config,
        environ=environ,
        home=home,
    )
    documents: list[SourceDocument] = [built_in_defaults()]
    problems: list[ConfigProblem] = []
    for file in files:
        try:
            documents.append(read_document(file.path))
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    merged = merge_layers(documents, environ=environ, profile=profile)
    return LoadedConfig(merged=merged, files=files)


def load_config(
    *,
    config_paths: Sequence[str],
    no_default_config: bool,
    profile: str | None,
    environ: Mapping[str, str],
    home: str | Path,
    read_document: ReadDocument,
) -> SquarepegConfig:
    """The merged, validated config for a command line (what `squarepeg run` needs)."""
    return load_config_layers(
        config_paths=config_paths,
        no_default_config=no_default_config,
        profile=profile,
        environ=environ,
        home=home,
        read_document=read_document,
    ).config


def _expand_user(raw: str, home: Path) -> Path:
    """`~` and `~/x` from the given HOME (so tests and the container decide); `~user` as usual."""
    if raw == "~":
        return home
    if raw.startswith("~/"):
        return home / raw[2:]
    if raw.startswith("~"):
        try:
            return Path(raw).expanduser()
        except RuntimeError:  # unknown user: keep the path as written, it then does not exist
            return Path(raw)
    return Path(raw)
