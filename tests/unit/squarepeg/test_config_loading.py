"""Layer discovery (0.4.1 order) and loading through an injected document reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.adapters.yaml_documents import read_yaml_document
from pegboard.app.squarepeg.config_loading import (
    ConfigSource,
    discover_config_files,
    load_config,
    load_config_layers,
)
from pegboard.domain.errors import ConfigError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "squarepeg").mkdir(parents=True)
    return home


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_order_is_home_then_env_list_then_config_flags(home: Path, tmp_path: Path) -> None:
    default = _write(home / ".config/squarepeg/config.yaml", "namespace: home\n")
    env_a = _write(tmp_path / "a.yaml", "")
    env_b = _write(tmp_path / "b.yaml", "")
    flag = _write(home / "flag.yaml", "")
    files = discover_config_files(
        config_paths=["~/flag.yaml"],
        no_default_config=False,
        environ={"SQUAREPEG_CONFIG": f"{env_a}::{env_b}:"},
        home=home,
    )
    assert files == (
        ConfigSource(default, "default location"),
        ConfigSource(env_a, "$SQUAREPEG_CONFIG"),
        ConfigSource(env_b, "$SQUAREPEG_CONFIG"),
        ConfigSource(flag, "--config ~/flag.yaml"),
    )


def test_no_default_config_skips_only_the_home_file(home: Path, tmp_path: Path) -> None:
    _write(home / ".config/squarepeg/config.yaml", "")
    env_file = _write(tmp_path / "e.yaml", "")
    files = discover_config_files(
        config_paths=[],
        no_default_config=True,
        environ={"SQUAREPEG_CONFIG": str(env_file)},
        home=home,
    )
    assert [f.path for f in files] == [env_file]


def test_missing_home_file_is_fine(home: Path) -> None:
    assert (
        discover_config_files(config_paths=[], no_default_config=False, environ={}, home=home) == ()
    )


def test_missing_explicit_files_are_errors_naming_their_origin(home: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        discover_config_files(
            config_paths=["~/nope.yaml"],
            no_default_config=False,
            environ={"SQUAREPEG_CONFIG": str(tmp_path / "gone.yaml")},
            home=home,
        )
    assert [str(p) for p in exc.value.problems] == [
        f"{tmp_path / 'gone.yaml'}: no such file (from $SQUAREPEG_CONFIG)",
        f"{home / 'nope.yaml'}: no such file (from --config ~/nope.yaml)",
    ]


def test_load_config_merges_with_profile(home: Path, tmp_path: Path) -> None:
    _write(
        home / ".config/squarepeg/config.yaml",
        "namespace: home\nprofiles:\n  p:\n    namespace: profile\n    timeout: 7\n",
    )
    flag = _write(tmp_path / "c.yaml", "namespace: flag\nquiet: ${Q}\n")
    loaded = load_config_layers(
        config_paths=[str(flag)],
        no_default_config=False,
        profile="p",
        environ={"Q": "on"},
        home=home,
        read_document=read_yaml_document,
    )
    assert (loaded.config.namespace, loaded.config.timeout, loaded.config.quiet) == (
        "flag",
        7,
        True,
    )
    assert [f.origin for f in loaded.files] == ["default location", f"--config {flag}"]
    assert loaded.merged.sources[0] == "<built-in defaults>"


def test_load_config_returns_the_validated_config(home: Path) -> None:
    config = load_config(
        config_paths=[],
        no_default_config=True,
        profile=None,
        environ={},
        home=str(home),
        read_document=read_yaml_document,
    )
    assert config.timeout == 300


def test_read_errors_of_every_file_are_reported_together(tmp_path: Path, home: Path) -> None:
    one = _write(tmp_path / "one.yaml", "a: [\n")
    two = _write(tmp_path / "two.yaml", "- 1\n")
    with pytest.raises(ConfigError) as exc:
        load_config(
            config_paths=[str(one), str(two)],
            no_default_config=True,
            profile=None,
            environ={},
            home=home,
            read_document=read_yaml_document,
        )
    assert [p.source for p in exc.value.problems] == [str(one), str(two)]


def test_the_reader_is_injected(home: Path) -> None:
    from pegboard.domain.documents import SourceDocument

    seen: list[Path] = []

    def fake_reader(path: Path) -> SourceDocument:
        seen.append(path)
        return SourceDocument(source=str(path), data={"timeout": 5})

    flag = _write(home / "x.yaml", "ignored: by the fake\n")
    config = load_config(
        config_paths=[str(flag)],
        no_default_config=True,
        profile=None,
        environ={},
        home=home,
        read_document=fake_reader,
    )
    assert seen == [flag] and config.timeout == 5


def test_the_default_config_follows_xdg_config_home(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "squarepeg").mkdir(parents=True)
    (xdg / "squarepeg" / "config.yaml").write_text("namespace: from-xdg\n")
    old = tmp_path / "home" / ".config" / "squarepeg"
    old.mkdir(parents=True)
    (old / "config.yaml").write_text("namespace: from-home\n")
    files = discover_config_files(
        config_paths=[],
        no_default_config=False,
        environ={"XDG_CONFIG_HOME": str(xdg)},
        home=tmp_path / "home",
    )
    assert [f.path for f in files] == [xdg / "squarepeg" / "config.yaml"]


def test_the_old_default_config_is_still_read_under_another_xdg_config_home(
    tmp_path: Path,
) -> None:
    old = tmp_path / "home" / ".config" / "squarepeg"
    old.mkdir(parents=True)
    (old / "config.yaml").write_text("namespace: from-home\n")
    for environ in ({"XDG_CONFIG_HOME": str(tmp_path / "empty")}, {"XDG_CONFIG_HOME": "rel"}):
        files = discover_config_files(
            config_paths=[], no_default_config=False, environ=environ, home=tmp_path / "home"
        )
        assert [f.path for f in files] == [old / "config.yaml"]
