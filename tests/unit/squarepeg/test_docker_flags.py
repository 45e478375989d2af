"""docker flags mapped onto Kubernetes fields, and the rejected-flag table."""

from __future__ import annotations

import pytest

from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.docker_flags import (
    REJECTED_FLAGS,
    parse_add_hosts,
    parse_capabilities,
    parse_env,
    parse_env_files,
    parse_hostname,
    parse_platform,
    parse_user,
    rejected_flag_message,
)
from pegboard.domain.squarepeg.request import EnvFile


def test_env_forms() -> None:
    assert parse_env(["A=1", "B=", "C=x=y", "HOME"], environ={"HOME": "/h"}) == {
        "A": "1",
        "B": "",
        "C": "x=y",
        "HOME": "/h",
    }


def test_env_repeated_key_keeps_the_last_value() -> None:
    assert parse_env(["A=1", "A=2"], environ={}) == {"A": "2"}


@pytest.mark.parametrize(("raw", "message"), [("=x", "expected KEY"), ("UNSET", "not set")])
def test_env_errors(raw: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_env([raw], environ={})


def test_env_file_like_docker() -> None:
    env_file = EnvFile(
        path="app.env",
        lines=("# comment", "", "A=1", "B = spaced", 'QUOTED="kept"', "FROM_ENV", "MISSING"),
    )
    with pytest.raises(UsageError, match=r"--env-file app.env:4"):
        parse_env_files([env_file], environ={})
    ok = EnvFile(path="ok.env", lines=("# c", "A=1", 'Q="kept"', "FROM_ENV", "MISSING", "  "))
    assert parse_env_files([ok], environ={"FROM_ENV": "v"}) == {
        "A": "1",
        "Q": '"kept"',
        "FROM_ENV": "v",
    }


@pytest.mark.parametrize(
    ("raw", "context"),
    [("1000", {"runAsUser": 1000}), ("1000:2000", {"runAsUser": 1000, "runAsGroup": 2000}),
     ("0", {"runAsUser": 0})],
)  # fmt: skip
def test_user(raw: str, context: dict[str, int]) -> None:
    assert parse_user(raw) == context


@pytest.mark.parametrize("raw", ["bob", "1000:staff", "bob:1000", "", "-1", "1000:"])
def test_user_names_cannot_be_resolved(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--user .*numeric"):
        parse_user(raw)


def test_capabilities_are_normalised() -> None:
    assert parse_capabilities(
        ["NET_ADMIN", "cap_sys_time", "ALL", "net_admin"], flag="--cap-add"
    ) == [
        "NET_ADMIN",
        "SYS_TIME",
        "ALL",
    ]
    with pytest.raises(UsageError, match=r"^--cap-drop"):
        parse_capabilities(["not a cap"], flag="--cap-drop")


def test_add_hosts_group_by_ip() -> None:
    assert parse_add_hosts(["db:10.0.0.1", "cache:10.0.0.1", "v6:::1", "x=10.0.0.2"]) == [
        {"ip": "10.0.0.1", "hostnames": ["db", "cache"]},
        {"ip": "::1", "hostnames": ["v6"]},
        {"ip": "10.0.0.2", "hostnames": ["x"]},
    ]


@pytest.mark.parametrize("raw", ["nocolon", "h:host-gateway", ":1.2.3.4", "h:not-an-ip"])
def test_bad_add_host(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--add-host"):
        parse_add_hosts([raw])


def test_platform() -> None:
    assert parse_platform("linux/arm64") == {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
    }
    assert parse_platform("amd64") == {"kubernetes.io/arch": "amd64"}
    with pytest.raises(UsageError, match=r"variants"):
        parse_platform("linux/arm/v7")
    with pytest.raises(UsageError, match=r"^--platform"):
        parse_platform("plan9/amd64")


def test_hostname() -> None:
    assert parse_hostname("box") == "box"
    with pytest.raises(UsageError, match=r"^--hostname"):
        parse_hostname("Not_Valid")


def test_rejected_flags_table_is_consistent() -> None:
    seen: set[str] = set()
    for flag in REJECTED_FLAGS:
        for alias in flag.aliases:
            assert alias not in seen
            seen.add(alias)
        assert flag.hint
    for must in ("--network", "-p", "--publish", "-d", "--detach", "--restart", "--mount",
                 "--link", "--init"):  # fmt: skip
        assert must in seen
    for supported in ("-u", "--user", "--env-file", "-l", "--label", "--privileged", "--platform"):
        assert supported not in seen
    message = rejected_flag_message(REJECTED_FLAGS[0], as_typed="--net")
    assert message.startswith("--net is not supported") and "\n" not in message
