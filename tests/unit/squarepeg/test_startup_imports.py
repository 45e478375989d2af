"""`squarepeg --help` and `squarepeg run --dry-run` never import kubernetes, runpod or paramiko."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("kubernetes", "runpod", "paramiko")

PROBE = """
import atexit, json, sys
target = sys.argv[1]
def dump():
    with open(target, "w") as out:
        json.dump(sorted(sys.modules), out)
atexit.register(dump)
sys.argv = ["squarepeg", *sys.argv[2:]]
from pegboard.app.squarepeg.cli import main
main()
"""


def imported_modules(tmp_path: Path, *argv: str) -> list[str]:
    dump = tmp_path / "modules.json"
    env = {"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(dump), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    modules: list[str] = json.loads(dump.read_text())
    return modules


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("run", "--help"),
        ("run", "--dry-run", "--cpus", "0.5", "-m", "512m", "alpine", "echo", "hi"),
        ("run", "--dry-run", "--mode", "job", "alpine"),
    ],
    ids=["help", "run-help", "dry-run", "dry-run-job"],
)
def test_no_heavy_imports(tmp_path: Path, argv: tuple[str, ...]) -> None:
    modules = imported_modules(tmp_path, *argv)
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    assert heavy == []


def test_help_does_not_import_the_config_pipeline_or_di(tmp_path: Path) -> None:
    modules = set(imported_modules(tmp_path, "--help"))
    assert "dependency_injector" not in modules
    assert "cattrs" not in modules
    assert "pegboard.app.squarepeg.cli.run_command" not in modules


@pytest.mark.parametrize(
    "argv",
    [("run", "--dry-run", "alpine"), ("config", "show")],
    ids=["dry-run", "config-show"],
)
def test_client_side_commands_do_not_import_dependency_injector(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    # It pulls in asyncio and pydantic (~100 ms): more than a whole dry run may take.
    modules = set(imported_modules(tmp_path, *argv))
    assert "dependency_injector" not in modules
    assert "pydantic" not in modules


def test_a_dry_run_without_config_files_does_not_import_cattrs(tmp_path: Path) -> None:
    # The built-in defaults need no validation; cattrs costs ~25 ms of a ~150 ms dry run.
    assert "cattrs" not in set(imported_modules(tmp_path, "run", "--dry-run", "alpine"))


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "--dry-run", "--cpus", "0.5", "-m", "512m", "alpine", "echo", "hi"),
        ("run", "--dry-run", "--mode", "job", "-e", "A=b", "-v", "/data", "python:3.12", "ls"),
    ],
    ids=["bench", "job"],
)
def test_a_dry_run_of_plain_words_prints_its_manifest_without_pyyaml(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    # adapters/yaml_dump.py writes it itself: PyYAML's dumping half costs ~4 ms to import.
    modules = set(imported_modules(tmp_path, *argv))
    assert {m for m in modules if m.split(".")[0] == "yaml"} == set()


def test_a_dry_run_that_needs_quoting_imports_only_yamls_dumping_half(tmp_path: Path) -> None:
    modules = set(imported_modules(tmp_path, "run", "--dry-run", "alpine", "echo", "a b", "yes"))
    assert "yaml.dumper" in modules
    assert {"yaml.reader", "yaml.constructor", "yaml.loader", "yaml.cyaml"} & modules == set()


def test_a_dry_run_with_a_config_file_validates_it(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("timeout: 60\n")
    argv = ("run", "--dry-run", "--config", str(config), "alpine")
    assert "cattrs" in set(imported_modules(tmp_path, *argv))


def test_a_dry_run_does_not_import_the_cluster_port(tmp_path: Path) -> None:
    # Its protocols and value classes (~1.5 ms); the config names kinds through
    # domain/kubernetes/kinds.py instead.
    modules = set(imported_modules(tmp_path, "run", "--dry-run", "--mode", "job", "alpine"))
    assert "pegboard.domain.ports.cluster" not in modules
    assert "pegboard.domain.kubernetes.kinds" in modules


ATTRS_REPR_PROBE = """
import atexit, json, sys
target = sys.argv[1]
def dump():
    import attrs
    from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
    generated = sorted(
        f"{name}.{value.__qualname__}"
        for name, module in list(sys.modules.items())
        if name.startswith("pegboard.")
        for value in list(vars(module).values())
        if isinstance(value, type) and attrs.has(value) and value.__module__ == name
        and (value.__repr__ is not attrs_repr or value.__eq__ is not attrs_eq
             or value.__hash__ not in (attrs_hash, None))
    )
    with open(target, "w") as out:
        json.dump(generated, out)
atexit.register(dump)
sys.argv = ["squarepeg", *sys.argv[2:]]
from pegboard.app.squarepeg.cli import main
main()
"""


def test_a_dry_run_compiles_no_attrs_methods(tmp_path: Path) -> None:
    # attrs compiles a __repr__, __eq__ and __hash__ per class at import (~14% of a dry run's
    # instructions); the classes a dry run loads share domain/attrs_methods.py's instead.
    dump = tmp_path / "generated.json"
    env = {"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"}
    argv = ("run", "--dry-run", "--mode", "job", "-e", "A=b", "-v", "/data", "alpine", "ls")
    result = subprocess.run(
        [sys.executable, "-c", ATTRS_REPR_PROBE, str(dump), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(dump.read_text()) == []
