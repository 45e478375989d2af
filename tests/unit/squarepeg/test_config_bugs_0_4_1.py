"""One test per squarepeg 0.4.1 config bug that pegboard fixes (reference §3 bugs 10 and 14).

Bad configs must exit 2 with one `squarepeg: <file>:<line>: <key>: <problem>` line, never a
traceback; accepted-but-wrong values must now do what they say.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pegboard.adapters.yaml_documents import read_yaml_document
from pegboard.app.squarepeg.cli import main
from pegboard.app.squarepeg.config_loading import load_config
from pegboard.app.squarepeg.container import Container
from pegboard.domain.squarepeg.config import RunMode, SquarepegConfig

# The composition root handed to cli.main, its providers overridden per test.
CONTAINER = Container()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "squarepeg").mkdir(parents=True)
    return home


@pytest.fixture
def out(home: Path) -> Iterator[io.StringIO]:
    stdout = io.StringIO()
    container = CONTAINER
    with (
        container.stdout.override(stdout),
        container.stderr.override(io.StringIO()),
        container.environ.override({"HOME": str(home)}),
        container.home.override(str(home)),
    ):
        yield stdout


def _load(home: Path, *files: Path, profile: str | None = None) -> SquarepegConfig:
    return load_config(
        config_paths=[str(f) for f in files],
        no_default_config=False,
        profile=profile,
        environ={},
        home=home,
        read_document=read_yaml_document,
    )


def _file(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _show_fails(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run `config show --config path`; assert exit 2 and one line; return that line."""
    with pytest.raises(SystemExit) as exc:
        main(["config", "show", "--no-default-config", "--config", str(path)], container=CONTAINER)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_home_profile_no_longer_beats_a_higher_config_file(home: Path, tmp_path: Path) -> None:
    (home / ".config/squarepeg/config.yaml").write_text(
        "profiles:\n  gpu:\n    namespace: gpu-ns\n    defaults: {cpus: '8'}\n"
    )
    flag = _file(tmp_path, "namespace: team-ns\n")
    config = _load(home, flag, profile="gpu")
    assert config.namespace == "team-ns"  # 0.4.1: gpu-ns
    assert config.defaults.cpus == "8"  # what the higher layer did not set still comes through


def test_empty_list_clears_an_inherited_named_list(home: Path, tmp_path: Path) -> None:
    low = _file(
        tmp_path, "kubernetes:\n  spec:\n    imagePullSecrets: [{name: regcred}]\n", "a.yaml"
    )
    high = _file(tmp_path, "kubernetes:\n  spec:\n    imagePullSecrets: []\n", "b.yaml")
    assert _load(home, low, high).kubernetes.spec["imagePullSecrets"] == []  # 0.4.1: kept


def test_null_env_is_a_one_line_config_error(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "defaults:\n  env:\n")
    line = _show_fails(path, capsys)
    assert line == f"squarepeg: {path}:2: defaults.env: expected a mapping of NAME: value, got null"


def test_a_list_where_a_map_belongs_is_a_config_error(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "defaults:\n  env:\n    - FOO=1\n")
    assert _show_fails(path, capsys).endswith(
        "defaults.env: expected a mapping of NAME: value, got a list"
    )


def test_a_list_of_profiles_is_a_config_error(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "profiles:\n  - gpu\n")
    assert (
        _show_fails(path, capsys)
        == f"squarepeg: {path}:1: profiles: expected a mapping, got a list"
    )


def test_integer_memory_means_bytes(home: Path, tmp_path: Path) -> None:
    config = _load(home, _file(tmp_path, "defaults:\n  memory: 536870912\n"))
    assert config.defaults.memory == "536870912"  # 0.4.1: traceback


def test_non_string_env_values_become_strings(home: Path, tmp_path: Path) -> None:
    config = _load(home, _file(tmp_path, "defaults:\n  env: {N: 1, DEBUG: true}\n"))
    assert config.defaults.env == {"N": "1", "DEBUG": "true"}  # 0.4.1: value: 1 (an int)


def test_mode_is_case_insensitive(home: Path, tmp_path: Path) -> None:
    assert _load(home, _file(tmp_path, "mode: Job\n")).mode is RunMode.JOB  # 0.4.1: a Pod


def test_unknown_mode_is_an_error(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "mode: deployment\n")
    assert _show_fails(path, capsys).endswith("mode: expected pod or job, got 'deployment'")


def test_typo_under_kubernetes_is_an_error(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "kubernetes:\n  sepc:\n    serviceAccountName: x\n")
    assert _show_fails(path, capsys) == (
        f"squarepeg: {path}:2: kubernetes.sepc: unknown key 'sepc' (did you mean 'spec'?)"
    )


def test_duplicate_yaml_keys_are_an_error_with_the_line(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "namespace: a\ntimeout: 5\nnamespace: b\n")
    line = _show_fails(path, capsys)
    assert line.startswith(f"squarepeg: {path}:3: duplicate key 'namespace'")


def test_job_spec_template_is_an_error_not_silently_dropped(
    out: io.StringIO, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "job:\n  spec:\n    template: {}\n")
    assert "kubernetes.spec" in _show_fails(path, capsys)


def test_job_metadata_is_kept(home: Path, tmp_path: Path) -> None:
    config = _load(home, _file(tmp_path, "job:\n  metadata: {annotations: {a: b}}\n"))
    assert config.job.metadata == {"annotations": {"a": "b"}}  # 0.4.1: ignored


def test_show_output_has_no_yaml_anchors(out: io.StringIO, tmp_path: Path) -> None:
    path = _file(tmp_path, "kubernetes:\n  metadata: &m {labels: {a: b}}\njob:\n  metadata: *m\n")
    with pytest.raises(SystemExit) as exc:
        main(["config", "show", "--config", str(path)], container=CONTAINER)
    assert exc.value.code == 0
    assert "&id" not in out.getvalue() and "*id" not in out.getvalue()
    assert yaml.safe_load(out.getvalue())["job"]["metadata"] == {"labels": {"a": "b"}}
