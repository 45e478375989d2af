"""Providers as plugins (issue 18 item 1): one registry lists them, each declares its name, its
typed locator, its config sections and its capabilities, and the core asks it, never a name.

A toy provider, declared here only, shows that a plugin is all a new provider needs: the job
spec takes its `pod.provider` and its section, the run builds its ports through it and records
its locator in the pointers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from helpers.gpujob_run import RunHarness
from helpers.runpod_configs import MINIMAL_YAML, document, with_sections
from helpers.runpod_container import KEEP
from pegboard.adapters.fakes import (
    FakeClock,
    FakeFileSync,
    FakeGpuCloud,
    FakeHost,
    FakeJob,
    FakeShell,
)
from pegboard.adapters.providers import discover_registry, provider_names
from pegboard.adapters.providers.local import LocalLocator
from pegboard.adapters.providers.runpod.locator import RunPodLocator
from pegboard.adapters.providers.ssh.locator import SshLocator
from pegboard.app.runpod_deploy.provider_locators import recorded_locator
from pegboard.domain.errors import ConfigError, UsageError
from pegboard.domain.gpujob.provider_plugin import (
    BuildContext,
    ConfigSection,
    LocatorContext,
    ProviderPlugin,
    structure_locator,
    unstructure_locator,
)
from pegboard.domain.gpujob.spec import JobSpec, NonEmptyStr
from pegboard.domain.gpujob.spec_validation import parse_job_spec
from pegboard.domain.ports.backend import Backend


def test_the_registry_lists_the_provider_packages_default_first() -> None:
    registry = discover_registry()
    names = registry.names()
    assert names == provider_names() and {"runpod", "local", "ssh"} <= set(names)
    assert names[0] == "runpod" and list(names[1:]) == sorted(names[1:])
    assert all(registry[name].name == name for name in registry)
    assert registry["ssh"].sections == registry["runpod"].sections  # ssh: read by runpod too
    assert registry.sections["ssh"] is registry["ssh"].sections[0]


def test_an_unknown_provider_is_one_usage_line_naming_the_registered_ones() -> None:
    with pytest.raises(UsageError, match=r"^pod.provider: unknown provider 'nope' \(runpod or"):
        discover_registry().plugin("nope")
    with pytest.raises(ConfigError) as caught:
        parse_job_spec(document(with_sections(pod=_pod(provider="nope"))), discover_registry())
    (problem,) = caught.value.problems
    assert problem.path == "pod.provider"
    assert problem.message == f"must be one of {', '.join(discover_registry())}, got 'nope'"


def test_capabilities_replace_the_provider_name_checks() -> None:
    registry = discover_registry()
    mine = ("runpod", "local", "ssh")
    assert [registry[n].billed for n in mine] == [True, False, False]
    assert [registry[n].gpu_catalog for n in mine] == [True, False, False]
    assert [registry[n].live_stock for n in mine] == [True, False, False]
    assert registry["ssh"].pod_defaults and not registry["local"].pod_defaults
    # a cloud no plugin declares (a test's "fake") gets the defaults, not an error
    assert registry.billed("fake") and registry.has_gpu_catalog("fake")


@pytest.mark.parametrize(
    "locator",
    [
        LocalLocator(pods_root="/p"),
        SshLocator(host="h", known_hosts="/s/r.known_hosts", port=2222, user="me", key_path=None),
        RunPodLocator(key_path="/k", use_agent=True, known_hosts=None),
    ],
    ids=["local", "ssh", "runpod"],
)
def test_a_locator_round_trips_through_the_json_a_pointer_records(locator: Any) -> None:
    raw = json.loads(json.dumps(unstructure_locator(locator)))
    assert structure_locator(type(locator), raw, provider="x") == locator
    assert "connect_timeout" not in raw and "pod_id" not in raw  # per process, not recorded


def test_pointers_of_older_releases_still_load() -> None:
    registry = discover_registry()
    # 0.8.x local pointers kept the pods root at the top level, and no locator
    legacy = recorded_locator(
        {"pod_id": "local-1", "provider": "local", "pods_root": "/p"}, registry
    )
    assert registry["local"].load_locator(legacy) == LocalLocator(pods_root="/p")
    # an ssh locator with fewer keys than today's, and one with a key from a newer release
    older = {"host": "h", "known_hosts": "/k", "port": 22}
    assert registry["ssh"].load_locator(older) == SshLocator(host="h", known_hosts="/k")
    newer = {**older, "jump_host": "bastion"}
    assert registry["ssh"].load_locator(newer) == SshLocator(host="h", known_hosts="/k")
    # a runpod pointer without a locator: the defaults (the user's default key)
    assert recorded_locator({"pod_id": "x", "provider": "runpod"}, registry) == {}


def test_a_locator_edited_into_nonsense_is_one_usage_line() -> None:
    with pytest.raises(UsageError, match=r"^the recorded ssh locator .* does not load"):
        discover_registry()["ssh"].load_locator({"host": "h", "port": "twenty-two"})


# --- a toy provider: one plugin, nothing else ------------------------------------------------


@attrs.frozen
class ToySection:
    flavour: NonEmptyStr = attrs.field(default=NonEmptyStr("vanilla"))


def _toy_rules(section: ToySection, provider: str) -> list[tuple[tuple[str | int, ...], str]]:
    if provider != "toy" and section != ToySection():
        return [(("flavour",), f"only used with pod.provider: toy, not {provider}")]
    return []


@attrs.frozen
class ToyLocator:
    shelf: str = "default"


def _toy_plugin(
    backend: Backend | None = None, built: list[ToyLocator | None] | None = None
) -> ProviderPlugin[ToyLocator]:
    def build(context: BuildContext, locator: ToyLocator | None) -> Backend:
        if built is not None:
            built.append(locator)
        assert backend is not None
        return attrs.evolve(backend, locator=locator or ToyLocator())

    def from_config(spec: JobSpec, context: LocatorContext) -> ToyLocator:
        return ToyLocator(shelf=spec.section("toy").flavour)

    return ProviderPlugin(
        name="toy",
        summary="a provider declared by a test",
        locator_type=ToyLocator,
        build=build,
        locator_from_config=from_config,
        sections=(ConfigSection(key="toy", type=ToySection, rules=_toy_rules),),
        pod_defaults={"image": "toy", "datacenters": ["shelf"], "gpu_order": ["TOY"]},
        billed=False,
    )


def _pod(**changes: Any) -> dict[str, Any]:
    pod: dict[str, Any] = yaml.safe_load(MINIMAL_YAML)["pod"]
    return {**pod, **changes}


def test_a_plugins_provider_and_section_are_part_of_the_job_spec() -> None:
    registry = discover_registry().with_plugin(_toy_plugin())
    text = with_sections(pod={"provider": "toy"}, toy={"flavour": "mint"})
    spec = parse_job_spec(document(text), registry)
    assert spec.pod.provider == "toy" and spec.pod.gpu_order == ("TOY",)  # its pod defaults
    assert spec.section("toy") == ToySection(flavour="mint")
    assert spec.section("ssh").host is None  # the others' sections: their defaults
    with pytest.raises(ConfigError) as caught:  # strict like every section
        parse_job_spec(document(with_sections(toy={"flavour": "mint", "x": 1})), registry)
    assert [p.path for p in caught.value.problems] == ["toy.x"]
    with pytest.raises(ConfigError) as caught:  # its rules know the chosen provider
        parse_job_spec(document(with_sections(toy={"flavour": "mint"})), registry)
    (problem,) = caught.value.problems
    assert problem.path == "toy.flavour" and problem.message.startswith("only used with")
    with pytest.raises(ConfigError, match="toy"):  # without the plugin: an unknown key
        parse_job_spec(document(text), discover_registry())


def test_a_run_on_a_plugin_builds_its_ports_and_records_its_locator(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"pod": {"provider": "toy"}, "toy": {"flavour": "mint"}})
    h.host.script_job(FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0))
    h.host.put("/workspace/out/result.json", b"{}")
    cloud = FakeGpuCloud(h.clock, host=h.host, provider="toy")
    backend = Backend(cloud=cloud, open_shell=h.open_shell, open_sync=lambda s: h.sync)
    built: list[ToyLocator | None] = []
    plugin = _toy_plugin(backend, built)
    registry = discover_registry().with_plugin(plugin)
    result = h.run(deps={"providers": registry, "backend_for": KEEP})  # the container's own
    assert result.exit_code == 0, h.manifest(result)
    assert built == [ToyLocator(shelf="mint")]
    assert h.manifest(result)["provider"] == "toy"
    assert [c[0] for c in cloud.calls].count("create_pod") == 1


def test_the_container_asks_the_registry_a_test_overrides(tmp_path: Path) -> None:
    from helpers.runpod_container import container_with

    clock = FakeClock()
    host = FakeHost(clock=clock)
    backend = Backend(
        cloud=FakeGpuCloud(clock, host=host, provider="toy"),
        open_shell=lambda s: FakeShell(host),
        open_sync=lambda s: FakeFileSync(host),
    )
    plugin = _toy_plugin(backend)
    container = container_with(provider_registry=discover_registry().with_plugin(plugin))
    built = container.backend_at()("toy", {"shelf": "top"})
    assert built.locator == ToyLocator(shelf="top")  # the pointer's mapping, structured
    assert container.backend_for()("toy").locator == ToyLocator()


@pytest.mark.parametrize("argv", [["ls-stale"], ["cleanup", "--all-stopped"], ["gpu-prices"]])
def test_the_provider_flags_offer_the_registered_providers(argv: list[str]) -> None:
    from pegboard.testing import RunpodDeploy

    done = RunpodDeploy().cli(*argv, "--provider", "nope")
    assert done.exit_code == 2 and "Traceback" not in done.stderr
    assert all(repr(name) in done.stderr for name in discover_registry()), done.stderr


def test_no_provider_package_imports_another() -> None:
    """What two providers share (the ssh: section, the SSH transport) lives beside them, so a
    provider package can be added or removed alone."""
    import grimp

    graph = grimp.build_graph("pegboard", include_external_packages=False)
    packages = [f"pegboard.adapters.providers.{name}" for name in discover_registry()]
    for package in packages:
        for other in packages:
            if other != package:
                chains = graph.find_shortest_chains(importer=package, imported=other)
                assert not chains, f"{package} imports {other}: {sorted(chains)}"
