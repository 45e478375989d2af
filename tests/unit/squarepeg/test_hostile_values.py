"""squarepeg values that used to reach the apiserver, overflow or lose precision (issue 7,
items 12 and 14): refused locally by the flag parsers and the config validators."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.squarepeg_cli import run_cli
from pegboard.adapters.yaml_documents import parse_yaml_document
from pegboard.domain.errors import ConfigError, UsageError
from pegboard.domain.squarepeg.config_validation import validate_document
from pegboard.domain.squarepeg.docker_flags import (
    parse_add_hosts,
    parse_env,
    parse_env_files,
    parse_user,
)
from pegboard.domain.squarepeg.quantities import (
    docker_cpus_to_k8s,
    docker_gpus_to_count,
    docker_memory_to_bytes,
    k8s_memory_quantity,
    parse_k8s_quantity,
)
from pegboard.domain.squarepeg.request import EnvFile
from pegboard.domain.squarepeg.validation import manifest_problems


@pytest.mark.parametrize("name", ["A B", "A\nB", "A\tB", "Ä", "A\x7f"])
def test_env_names_with_spaces_newlines_or_non_ascii_are_refused(name: str) -> None:
    with pytest.raises(UsageError, match="expected KEY=VALUE or KEY"):
        parse_env([f"{name}=1"], environ={})
    with pytest.raises(UsageError, match="expected KEY=VALUE or KEY"):
        parse_env_files([EnvFile(path="e.env", lines=(f"{name}=1",))], environ={})


def test_ordinary_env_names_still_work() -> None:
    assert parse_env(["A_B.c-1=x=y"], environ={}) == {"A_B.c-1": "x=y"}


@pytest.mark.parametrize("name", ["A B", "A\\nB"])
def test_defaults_env_names_follow_the_same_rule(name: str) -> None:
    doc = parse_yaml_document(f'defaults:\n  env:\n    "{name}": "1"\n', source="c.yaml")
    with pytest.raises(ConfigError, match="printable ASCII without '=' or spaces"):
        validate_document(doc)


@pytest.mark.parametrize("raw", ["99999999999999999999", "1000:99999999999999999999", "2147483648"])
def test_user_ids_past_int32_are_refused(raw: str) -> None:
    with pytest.raises(UsageError, match="ids must be at most 2147483647"):
        parse_user(raw)


def test_user_ids_up_to_int32_are_kept() -> None:
    assert parse_user("2147483647:0") == {"runAsUser": 2147483647, "runAsGroup": 0}


@pytest.mark.parametrize("raw", ["h:999.1.1.1", "h:1.2.3", "h:1:2:3", "h:::::", "h:1.2.3.4.5"])
def test_add_host_needs_a_real_ip_address(raw: str) -> None:
    with pytest.raises(UsageError, match="is not an IP address"):
        parse_add_hosts([raw])


def test_add_host_ipv4_and_ipv6_still_work() -> None:
    assert parse_add_hosts(["a:10.0.0.1", "b=[::1]"]) == [
        {"ip": "10.0.0.1", "hostnames": ["a"]},
        {"ip": "::1", "hostnames": ["b"]},
    ]


def test_memory_sizes_are_exact_past_28_digits_of_precision() -> None:
    # Decimal's default 28 digits rounded this up to 2**62 bytes.
    assert docker_memory_to_bytes("4294967295.9999999999999999999999g") == 2**62 - 1


@pytest.mark.parametrize(
    ("call", "raw"),
    [
        (docker_memory_to_bytes, "99999999999999999999999999999b"),
        (docker_memory_to_bytes, "9" * 5000),
        (docker_cpus_to_k8s, "1e30"),
        (docker_gpus_to_count, "9" * 5000),
        (docker_gpus_to_count, "99999999999999999999"),
    ],
)
def test_quantities_past_int64_are_refused(call: object, raw: str) -> None:
    with pytest.raises(UsageError):
        call(raw, flag="--x")  # type: ignore[operator]


def test_kubernetes_quantities_with_huge_exponents_are_not_quantities() -> None:
    assert parse_k8s_quantity("1e999999999") is None  # was decimal.Overflow (a traceback)
    with pytest.raises(UsageError):
        k8s_memory_quantity("1e999999999", flag="--memory")
    with pytest.raises(UsageError, match="too large"):
        k8s_memory_quantity("100Ei", flag="--memory")


def test_a_nan_quantity_in_the_manifest_is_a_problem_not_a_crash() -> None:
    manifest = {
        "metadata": {"name": "x"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": float("nan")}, "limits": {}}}
            ],
        },
    }
    problems = manifest_problems(manifest, container_name="main")
    assert any("requests.cpu nan is not a quantity" in p for p in problems)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("timeout: '" + "9" * 5000 + "'\n", "integer with more than 64 digits"),
        ("timeout: 10000000000000\n", "must be at most 1,000,000,000,000"),
        ("orphan_sweep_min_age: '99999999999999999999'\n", "must be at most"),
    ],
)
def test_integer_settings_are_bounded(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        validate_document(parse_yaml_document(text, source="c.yaml"))


# --- through the CLI: one line, exit 2 --------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--env-file", "/dev/zero"], "--env-file /dev/zero: larger than 1 MiB"),
        (["--config", "/dev/zero"], "/dev/zero: larger than 1 MiB"),
        (["-u", "99999999999999999999"], "ids must be at most"),
        (["--add-host", "h:999.1.1.1"], "is not an IP address"),
        (["-e", "A\nB=1"], "expected KEY=VALUE or KEY"),
        (["--timeout", "99999999999999999999"], "--timeout 99999999999999999999: must be"),
    ],
)
def test_refused_on_the_command_line(argv: list[str], fragment: str, tmp_path: Path) -> None:
    args = ["run", "--no-default-config", "--dry-run", *argv, "alpine", "true"]
    result = run_cli(args, home=tmp_path)
    assert result.code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and fragment in result.stderr, result.stderr


def test_env_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    env_file = tmp_path / "e.env"
    env_file.write_bytes(b"A=\xff\n")
    result = run_cli(
        ["run", "--no-default-config", "--dry-run", "--env-file", str(env_file), "alpine", "true"],
        home=tmp_path,
    )
    assert result.code == 2 and "not valid UTF-8 text" in result.stderr


# --- ${VAR} interpolation is bounded (a sibling of runpod-deploy's variable bomb) --------------


def test_one_string_that_expands_past_the_limit_is_refused() -> None:
    from pegboard.domain.squarepeg.interpolation import interpolate_document

    doc = parse_yaml_document('a: "' + "${X}" * 2000 + '"\n', source="c.yaml")
    with pytest.raises(ConfigError, match=r"c\.yaml:1: a: expands to more than 1000000 characters"):
        interpolate_document(doc, {"X": "x" * 1000})


def test_a_document_that_expands_past_the_total_is_refused_once() -> None:
    from pegboard.domain.squarepeg.interpolation import interpolate_document

    text = "".join(f'k{i}: "' + "${X}" * 9 + '"\n' for i in range(1000))
    with pytest.raises(ConfigError) as caught:
        interpolate_document(parse_yaml_document(text, source="c.yaml"), {"X": "x" * 1000})
    [problem] = caught.value.problems
    assert "the file expands to more than 8000000 characters" in str(problem)


def test_ordinary_interpolation_is_untouched() -> None:
    from pegboard.domain.squarepeg.interpolation import interpolate_document

    doc = parse_yaml_document('a: "${X}-$${Y}"\nb: [1, "${X:-d}"]\n', source="c.yaml")
    assert interpolate_document(doc, {"X": "v"}).data == {"a": "v-${Y}", "b": [1, "v"]}


@pytest.mark.parametrize("literal", [".inf", "-.inf", ".nan", "1.0e+400"])
def test_passthrough_numbers_json_cannot_carry_are_refused(literal: str) -> None:
    text = f"kubernetes:\n  spec:\n    activeDeadlineSeconds: {literal}\n"
    with pytest.raises(ConfigError, match="is not a JSON number"):
        validate_document(parse_yaml_document(text, source="c.yaml"))
