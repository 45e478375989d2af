"""Client-side runpod-deploy commands (read-only ones, `run --offline-dry-run`) import neither
the heavy SDKs nor pydantic; the read-only ones not even dependency-injector. `run
--offline-dry-run` gets its RunDeps from the one composition root, like every run (issue 18
item 3: no second hand-built copy), so it loads dependency-injector, with its optional web
integrations and pydantic hidden (app/shared/dependency_injection.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.ssh_keys import install_ssh_key

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import atexit, json, sys
target = sys.argv[1]
atexit.register(lambda: json.dump(sorted(sys.modules), open(target, "w")))
sys.argv = ["runpod-deploy", *sys.argv[2:]]
from pegboard.app.runpod_deploy.cli import main
main()
"""


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("validate", "--config", str(REPO / "examples" / "runpod" / "hello.yaml")),
        ("ls-runs", "--project-root", "."),
        ("run", "--help"),
        # records go next to the config: a copy in tmp_path (made below), never examples/
        ("run", "--offline-dry-run", "--config", "project/hello.yaml"),
        ("manifest-summary", "--root", "project"),
        ("events-query", "--root", "project"),
        ("capture-env", "--project-root", "project"),
    ],
    ids=[
        "help",
        "validate",
        "ls-runs",
        "run-help",
        "offline-dry-run",
        "manifest-summary",
        "events-query",
        "capture-env",
    ],
)
def test_client_side_commands_stay_light(tmp_path: Path, argv: tuple[str, ...]) -> None:
    modules = set(_probe(tmp_path, PROBE, argv))
    heavy = sorted(m for m in modules if m.split(".")[0] in {"runpod", "paramiko", "kubernetes"})
    assert heavy == []
    assert "pydantic" not in modules and "fastapi" not in modules
    # the kubernetes provider's locator and config section, which every run loads, take their
    # defaults from gpu_labels, not from the pod manifests (pod_objects, domain.kubernetes)
    assert "pegboard.adapters.providers.kubernetes.pod_objects" not in modules
    assert "pegboard.domain.kubernetes.pod_start" not in modules
    if "--offline-dry-run" not in argv:
        assert "dependency_injector" not in modules


def test_the_pod_commands_load_no_config_loader_unless_given_a_config(tmp_path: Path) -> None:
    # cleanup --state-file / --pod-id and ls-stale read pointers, not a job config: the YAML
    # config loader (job_loading: spec validation, cattrs) and `logs`' log_tail are left out
    # (~20-35 ms of such a command's ~0.15 s of CPU).
    modules = set(_probe(tmp_path, PROBE, ("ls-stale", "--provider", "local")))
    assert "pegboard.app.runpod_deploy.pod_access" in modules
    assert "pegboard.app.runpod_deploy.job_loading" not in modules
    assert "pegboard.app.runpod_deploy.log_tail" not in modules


ATTRS_REPR_PROBE = """
import atexit, json, sys
target = sys.argv[1]
def dump():
    import attrs
    from pegboard.domain.attrs_methods import attrs_eq, attrs_repr
    generated = sorted(
        f"{name}.{value.__qualname__}"
        for name, module in list(sys.modules.items())
        if name.startswith("pegboard.")
        for value in list(vars(module).values())
        if isinstance(value, type) and attrs.has(value) and value.__module__ == name
        and (value.__repr__ is not attrs_repr or value.__eq__ is not attrs_eq)
    )
    with open(target, "w") as out:
        json.dump(generated, out)
atexit.register(dump)
sys.argv = ["runpod-deploy", *sys.argv[2:]]
from pegboard.app.runpod_deploy.cli import main
main()
"""


def test_a_run_compiles_no_attrs_repr_or_eq_of_its_own_classes(tmp_path: Path) -> None:
    # attrs compiles a __repr__, __eq__ and __hash__ per class at import (~16% of the
    # instructions of a run's imports); the classes a run loads share domain/attrs_methods.py's.
    argv = ("run", "--offline-dry-run", "--config", "project/hello.yaml")
    assert _probe(tmp_path, ATTRS_REPR_PROBE, argv) == []


def _probe(tmp_path: Path, probe: str, argv: tuple[str, ...]) -> list[str]:
    """What `probe` dumped (as JSON) after running runpod-deploy with `argv` from a HOME with
    an ssh key and examples/runpod/hello.yaml in project/."""
    (tmp_path / "project").mkdir()  # not HOME itself: a project root there is refused
    install_ssh_key(tmp_path)  # validate checks the key the config names
    shutil.copy(REPO / "examples" / "runpod" / "hello.yaml", tmp_path / "project" / "hello.yaml")
    dump = tmp_path / "probe.json"
    result = subprocess.run(
        [sys.executable, "-c", probe, str(dump), *argv],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(dump.read_text())
    return loaded
