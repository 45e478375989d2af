"""`runpod-deploy` given hostile files and flags (issue 7, items 10-14): one line, exit 2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.runpod_configs import MINIMAL_YAML, with_sections
from pegboard.app.runpod_deploy.cli import main
from pegboard.app.runpod_deploy.job_loading import merge_cli_vars
from pegboard.domain.errors import UsageError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """HOME for every seam (validate reads it directly; run through the container)."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    yield home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(caught.value.code or 0), out, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    return err


def alias_bomb() -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b'{"a": "\xff"}', "not valid UTF-8 text"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than 64"),
        (b'{"a": ' + b"9" * 5000 + b"}", "more than 64 digits"),
        (b'{"a": NaN}', "NaN is not a JSON number"),
    ],
)
def test_hostile_vars_files_are_usage_errors(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "vars.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=fragment):
        merge_cli_vars([], path)


def test_vars_file_dev_zero_is_bounded() -> None:
    with pytest.raises(UsageError, match="--vars-file /dev/zero: larger than 1 MiB"):
        merge_cli_vars([], Path("/dev/zero"))


def test_vars_file_numbers_still_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "vars.json"
    path.write_text('{"a": 1, "b": 2.5, "c": true, "d": "x"}')
    assert merge_cli_vars(["d=y"], path) == {"a": "1", "b": "2.5", "c": "true", "d": "y"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (alias_bomb(), "more than 20000 values once aliases are expanded"),
        ("name: x\npod: " + "[" * 500 + "]" * 500 + "\n", "nested more than 64 levels deep"),
        ("schema_version: " + "9" * 5000 + "\n", "integer with more than 64 digits"),
        (with_sections(budget={"cost_cap_usd": float("inf")}), "must be a finite number"),
        (with_sections(budget={"cost_cap_usd": 1e308}), "must be at most 1,000,000,000,000"),
    ],
)
def test_validate_refuses_hostile_configs_in_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    path = home / "proj" / "job.yaml"
    path.write_text(text)
    code, out, err = run(capsys, "validate", "--config", str(path))
    assert (code, out) == (2, "")
    assert fragment in one_line(err)


def test_validate_refuses_an_unused_variable_bomb(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variables = {"a0": "x" * 10}
    for level in range(1, 11):
        variables[f"a{level}"] = "".join("{a" + str(level - 1) + "}" for _ in range(10))
    path = home / "proj" / "job.yaml"
    path.write_text(with_sections(variables=variables))
    code, out, err = run(capsys, "validate", "--config", str(path))
    assert (code, out) == (2, "")
    assert "variables.a6: renders to 10000000 characters" in one_line(err)


@pytest.mark.parametrize(
    ("flag", "value", "fragment"),
    [
        ("--cost-cap-usd", "inf", "--cost-cap-usd must be a finite number"),
        ("--cost-cap-usd", "nan", "--cost-cap-usd must be > 0, got nan"),
        ("--max-runtime-minutes", "99999999999999999999", "--max-runtime-minutes must be at most"),
    ],
)
def test_validate_budget_flags_out_of_range(
    home: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, fragment: str
) -> None:
    path = home / "proj" / "job.yaml"
    path.write_text(MINIMAL_YAML)
    code, out, err = run(capsys, "validate", "--config", str(path), flag, value)
    assert (code, out) == (2, "")
    assert fragment in one_line(err)


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_run_refuses_a_max_gpu_price_that_is_not_a_price(
    home: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    path = home / "proj" / "job.yaml"
    path.write_text(MINIMAL_YAML)
    code, out, err = run(capsys, "run", "--config", str(path), "--max-gpu-price", value)
    assert (code, out) == (2, "")
    assert "--max-gpu-price must be > 0 and finite" in one_line(err)


def test_config_dev_zero_is_bounded(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", "--config", "/dev/zero")
    assert (code, out) == (2, "")
    assert "/dev/zero: larger than 1 MiB" in one_line(err)


# --- other files a run reads: secrets and state pointers ---------------------------------------


def test_a_secret_file_that_never_ends_is_a_one_line_failure() -> None:
    from pegboard.app.runpod_deploy.phases import Redactor, secret_payload
    from pegboard.app.runpod_deploy.run_types import PhaseFailed
    from pegboard.app.runpod_deploy.seams import read_secret_file
    from pegboard.domain.gpujob.templates import RenderedSecret

    secret = RenderedSecret(name="k", destination="/root/k", env=(), file="/dev/zero", mode="0600")
    with pytest.raises(PhaseFailed, match="secret 'k': /dev/zero: larger than 16 MiB"):
        secret_payload(secret, environ={}, read_local_file=read_secret_file, redact=Redactor())


@pytest.mark.parametrize(
    "content", [b"[" * 100_000 + b"]" * 100_000, b'{"pod_id": ' + b"9" * 5000 + b"}", b"\xff"]
)
def test_a_hostile_state_file_is_ignored_with_a_warning(tmp_path: Path, content: bytes) -> None:
    from pegboard.app.runpod_deploy.pod_pointers import PodPointer

    path = tmp_path / "state.json"
    path.write_bytes(content)
    assert PodPointer(path).read() is None
    assert PodPointer(Path("/dev/zero")).read() is None
