"""`squarepeg config [show]` through the real CLI entry point (container streams overridden)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pegboard.app.squarepeg.cli import main
from pegboard.app.squarepeg.container import Container

# The composition root handed to cli.main, its providers overridden per test.
CONTAINER = Container()


@pytest.fixture
def streams(tmp_path: Path) -> Iterator[tuple[io.StringIO, io.StringIO, Path]]:
    home = tmp_path / "home"
    (home / ".config" / "squarepeg").mkdir(parents=True)
    out, err = io.StringIO(), io.StringIO()
    container = CONTAINER
    with (
        container.stdout.override(out),
        container.stderr.override(err),
        container.environ.override({"HOME": str(home), "REGION": "eu"}),
        container.home.override(str(home)),
    ):
        yield out, err, home


def _run(*argv: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(argv), container=CONTAINER)
    code = exc.value.code
    assert isinstance(code, int)
    return code


def test_show_prints_merged_yaml_on_stdout_and_sources_on_stderr(
    streams: tuple[io.StringIO, io.StringIO, Path], tmp_path: Path
) -> None:
    out, err, home = streams
    default = home / ".config/squarepeg/config.yaml"
    default.write_text("namespace: home\nprofiles:\n  p:\n    defaults: {env: {R: '${REGION}'}}\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("timeout: 60\n")
    assert _run("config", "show", "--config", str(extra), "--profile", "p") == 0
    shown = yaml.safe_load(out.getvalue())
    assert shown["namespace"] == "home"
    assert shown["timeout"] == 60
    assert shown["defaults"]["env"] == {"R": "eu"}
    assert "profiles" not in shown
    assert err.getvalue().splitlines() == [
        f"[squarepeg] {default} (default location)",
        f"[squarepeg] {extra} (--config {extra})",
    ]


def test_no_files_says_so(streams: tuple[io.StringIO, io.StringIO, Path]) -> None:
    out, err, _ = streams
    assert _run("config", "show", "--no-default-config") == 0
    assert err.getvalue() == "[squarepeg] no config files loaded\n"
    assert yaml.safe_load(out.getvalue())["mode"] == "pod"


def test_bare_config_is_show(streams: tuple[io.StringIO, io.StringIO, Path]) -> None:
    out, _, _ = streams
    assert _run("config", "--no-default-config") == 0
    assert "timeout: 300" in out.getvalue()


def test_group_options_pass_down_and_show_options_win(
    streams: tuple[io.StringIO, io.StringIO, Path], tmp_path: Path
) -> None:
    out, _, _ = streams
    config = tmp_path / "c.yaml"
    config.write_text("profiles:\n  a: {timeout: 1}\n  b: {timeout: 2}\n")
    assert _run("config", "--config", str(config), "--profile", "a", "show") == 0
    assert yaml.safe_load(out.getvalue())["timeout"] == 1
    out.truncate(0)
    out.seek(0)
    assert _run("config", "--config", str(config), "--profile", "a", "show", "--profile", "b") == 0
    assert yaml.safe_load(out.getvalue())["timeout"] == 2


def test_config_errors_exit_2_with_one_line(
    streams: tuple[io.StringIO, io.StringIO, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, _, _ = streams
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults:\n  env: null\n")
    assert _run("config", "show", "--config", str(bad)) == 2
    assert out.getvalue() == ""
    message = capsys.readouterr().err
    assert (
        message
        == f"squarepeg: {bad}:2: defaults.env: expected a mapping of NAME: value, got null\n"
    )


def test_show_never_writes_anchors(
    streams: tuple[io.StringIO, io.StringIO, Path], tmp_path: Path
) -> None:
    out, _, _ = streams
    config = tmp_path / "c.yaml"
    config.write_text("kubernetes:\n  metadata: &m {labels: {a: b}}\njob:\n  metadata: *m\n")
    assert _run("config", "show", "--no-default-config", "--config", str(config)) == 0
    assert "&" not in out.getvalue() and "*" not in out.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ("config", "show", "-o", "json", "--no-default-config"),
        ("config", "show", "--json", "--no-default-config"),
        ("config", "-o", "json", "--no-default-config"),
        ("config", "-o", "json", "show", "--no-default-config"),
    ],
)
def test_show_as_json(
    streams: tuple[io.StringIO, io.StringIO, Path], argv: tuple[str, ...]
) -> None:
    import json

    out, _, _ = streams
    assert _run(*argv) == 0
    assert json.loads(out.getvalue())["timeout"] == 300


def test_show_has_no_table(streams: tuple[io.StringIO, io.StringIO, Path]) -> None:
    assert _run("config", "show", "-o", "table") == 2
