"""Properties of squarepeg's client side over generated command lines and config layers.

- every manifest validates against the Kubernetes 1.31 schema (strict) and our own checks;
- every field the command line set survives any passthrough;
- generated names are RFC1123 labels of at most 63 characters;
- cpu and memory conversions round-trip exactly.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pegboard.adapters.kube_semantics.expansion import expand
from pegboard.adapters.sandboxes.kubernetes.kubelet import container_argv
from pegboard.domain.errors import ConfigError
from pegboard.domain.kubernetes import labels
from pegboard.domain.squarepeg.kube_references import escape_references
from pegboard.domain.squarepeg.naming import generate_name, is_rfc1123_label
from pegboard.domain.squarepeg.quantities import (
    bytes_to_k8s_memory,
    docker_cpus_to_k8s,
    docker_memory_to_bytes,
    docker_memory_to_k8s,
    parse_k8s_quantity,
)
from pegboard.domain.squarepeg.render import resolve_run
from pegboard.domain.squarepeg.request import RunRequest
from pegboard.domain.squarepeg.validation import manifest_problems, pod_spec_of

RUN_ID = "0b6f8f3e-9a5b-4b58-8c7e-1c2d3e4f5a6b"
label_part = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
env_key = st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True)
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
images = st.builds(
    lambda registry, repo, tag: f"{registry}{repo}{tag}",
    st.sampled_from(["", "ghcr.io/", "localhost:5000/", "registry.example.com:5000/team/"]),
    st.from_regex(r"[a-z0-9][a-z0-9._/-]{0,60}[a-z0-9]", fullmatch=True),
    st.sampled_from(["", ":1.0", ":latest", "@sha256:" + "a" * 64]),
)
cpus = st.decimals(min_value=Decimal("0.001"), max_value=Decimal(64), places=3).map(str)
memory = st.builds(
    lambda n, unit: f"{n}{unit}", st.integers(1, 4096), st.sampled_from(["m", "g", "k", "mb", ""])
)


@st.composite
def requests(draw: st.DrawFn) -> RunRequest:
    """Command lines with the fields that end up in the manifest."""
    volumes = draw(st.lists(st.from_regex(r"/[a-z][a-z0-9/_-]{0,20}", fullmatch=True),
                            max_size=3, unique_by=lambda p: p.rstrip("/")))  # fmt: skip
    return RunRequest(
        image=draw(images),
        command=tuple(draw(st.lists(text, max_size=4))),
        env=tuple(f"{k}={v}" for k, v in draw(st.dictionaries(env_key, text, max_size=3)).items()),
        volumes=tuple(v for v in volumes if v.rstrip("/") and "//" not in v),
        workdir=draw(st.none() | st.just("/work")),
        entrypoint=draw(st.none() | st.just("/bin/sh")),
        tty=draw(st.booleans()),
        interactive=draw(st.booleans()),
        pull=draw(st.none() | st.sampled_from(["always", "missing", "never"])),
        cpus=draw(st.none() | cpus),
        memory=draw(st.none() | memory),
        gpus=draw(st.none() | st.integers(0, 4).map(str)),
        name=draw(st.none() | label_part.map(lambda s: f"run-{s}")),
        namespace=draw(st.none() | label_part),
        mode=draw(st.none() | st.sampled_from(["pod", "job", "Job"])),
        keep=draw(st.booleans()),
        labels=tuple(
            f"x-{k}={v}"
            for k, v in draw(st.dictionaries(label_part, label_part, max_size=2)).items()
        ),
        user=draw(st.none() | st.just("1000:1000")),
        read_only=draw(st.booleans()),
        platform=draw(st.none() | st.sampled_from(["linux/amd64", "arm64"])),
    )


@st.composite
def passthrough_layers(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Config layers whose passthrough tries to change everything squarepeg or the CLI set."""
    main: dict[str, Any] = {"name": "main"}
    if draw(st.booleans()):
        main["image"] = "busybox:evil"
    if draw(st.booleans()):
        main["args"] = ["from-config"]
    if draw(st.booleans()):
        main["env"] = [{"name": k, "value": v} for k, v in
                       draw(st.dictionaries(env_key, st.integers() | text, max_size=3)).items()]  # fmt: skip
    if draw(st.booleans()):
        main["resources"] = {"limits": {"cpu": "7", "memory": "7Gi"}, "requests": {"cpu": "7"}}
    if draw(st.booleans()):
        main["imagePullPolicy"] = "Always"
    spec: dict[str, Any] = {"containers": [main]}
    if draw(st.booleans()):
        spec["restartPolicy"] = draw(st.sampled_from(["Always", "OnFailure"]))
    if draw(st.booleans()):
        spec["nodeSelector"] = {"pool": "gpu", "kubernetes.io/arch": "s390x"}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "k", "operator": "Exists"}]
    metadata: dict[str, Any] = {}
    if draw(st.booleans()):
        metadata["labels"] = {labels.MANAGED_BY: "helm", labels.CREATED_BY: "mallory",
                              labels.RUN_ID: "stolen", "team": "x"}  # fmt: skip
    if draw(st.booleans()):
        metadata["annotations"] = {"note": "hi"}
    layer: dict[str, Any] = {"kubernetes": {"spec": spec, "metadata": metadata}}
    if draw(st.booleans()):
        layer["defaults"] = {"env": {"FROM_DEFAULTS": 1}, "cpus": "0.25"}
    if draw(st.booleans()):
        layer["job"] = {"spec": {"ttlSecondsAfterFinished": 60}}
    return [layer]


def resolve(request: RunRequest, layers: list[dict[str, Any]]) -> dict[str, Any]:
    return resolve_run(
        request, layers, environ={}, user="jane doe", run_id=RUN_ID, random_hex="a1b2c3"
    ).manifest


def main_container(manifest: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = next(
        c for c in pod_spec_of(manifest)["containers"] if c["name"] == "main"
    )
    return container


def claimed_view(request: RunRequest, manifest: dict[str, Any]) -> dict[str, Any]:
    """The fields the command line (or squarepeg itself) claims, as they appear in `manifest`."""
    container = main_container(manifest)
    view: dict[str, Any] = {
        "image": container["image"],
        "restartPolicy": pod_spec_of(manifest)["restartPolicy"],
        "own labels": {k: manifest["metadata"]["labels"].get(k) for k in labels.OWN_LABEL_KEYS},
        "user labels": {
            k: manifest["metadata"]["labels"].get(k.split("=")[0]) for k in request.labels
        },
        "cli env": [
            e
            for e in container.get("env", [])
            if any(e["name"] == item.split("=")[0] for item in request.env)
        ],
    }
    resources = container.get("resources", {})
    if request.cpus is not None:
        view["cpu"] = (resources["requests"]["cpu"], resources["limits"]["cpu"])
    if request.memory is not None:
        view["memory"] = (resources["requests"]["memory"], resources["limits"]["memory"])
    if request.command:
        view["args"] = container["args"]
    if request.pull is not None:
        view["pull"] = container["imagePullPolicy"]
    if request.name is not None:
        view["name"] = manifest["metadata"]["name"]
    if request.namespace is not None:
        view["namespace"] = manifest["metadata"]["namespace"]
    if request.platform is not None:
        view["arch"] = pod_spec_of(manifest)["nodeSelector"]["kubernetes.io/arch"]
    return view


# Schema validation costs ~5-25 ms per manifest: half the profile's examples is plenty.
@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(requests(), passthrough_layers())
def test_manifests_validate_and_claims_hold(
    request: RunRequest, layers: list[dict[str, Any]]
) -> None:
    import kubernetes_validate  # lazily: it is slow to import

    bare = resolve(request, [])
    try:
        merged = resolve(request, layers)
    except ConfigError:
        return  # e.g. a passthrough namespace; rejected clearly, never silently merged
    assert manifest_problems(bare, container_name="main") == []
    assert manifest_problems(merged, container_name="main") == []
    kubernetes_validate.validate(merged, "1.31", strict=True)
    assert claimed_view(request, merged) == claimed_view(request, bare)
    assert all(isinstance(e.get("value", ""), str) for e in main_container(merged).get("env", []))


@given(images, st.from_regex(r"[0-9a-f]{6}", fullmatch=True))
def test_generated_names_are_labels(image: str, random_hex: str) -> None:
    name = generate_name(image, random_hex=random_hex)
    assert is_rfc1123_label(name) and len(name) <= 63


@given(st.text(max_size=200))
def test_any_image_text_gives_a_valid_name(image: str) -> None:
    assert is_rfc1123_label(generate_name(image, random_hex="abcdef"))


@given(st.text(max_size=100))
def test_sanitised_label_values_are_valid(raw: str) -> None:
    assert labels.is_label_value(labels.sanitize_label_value(raw))


@given(st.integers(min_value=0, max_value=2**62))
def test_memory_bytes_round_trip(size: int) -> None:
    assert parse_k8s_quantity(bytes_to_k8s_memory(size)) == size


@given(st.integers(1, 10**6), st.sampled_from(["", "k", "m", "g", "t"]))
def test_docker_memory_round_trip(number: int, unit: str) -> None:
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[unit]
    raw = f"{number}{unit}"
    assert docker_memory_to_bytes(raw) == number * factor
    assert parse_k8s_quantity(docker_memory_to_k8s(raw)) == number * factor


@given(st.integers(min_value=0, max_value=10**7))
def test_cpu_millicores_round_trip(millicores: int) -> None:
    cores = Decimal(millicores) / 1000
    assert parse_k8s_quantity(docker_cpus_to_k8s(str(cores))) == cores


@given(st.decimals(min_value=0, max_value=1000, allow_nan=False, places=6))
def test_cpu_is_never_rounded_down(cores: Decimal) -> None:
    converted = parse_k8s_quantity(docker_cpus_to_k8s(str(cores)))
    assert converted is not None and cores <= converted < cores + Decimal("0.001")


# -- the command reaches the container as typed (issue 17, item 5) -------------------------------

dollar_heavy = st.text(
    st.one_of(
        st.sampled_from("$()$$ A_."), st.characters(codec="utf-8", exclude_categories=("Cs",))
    ),
    max_size=40,
)


class EveryName(dict[str, str]):
    """A kubelet whose environment defines every name one could write."""

    def get(self, key: str, default: Any = None) -> str:  # type: ignore[override]
        return f"<{key}>"


@given(
    typed=dollar_heavy, defined=st.dictionaries(st.sampled_from(["A", "A_", "", "$", "x("]), text)
)
def test_escape_then_kubelet_expansion_is_the_identity(typed: str, defined: dict[str, str]) -> None:
    escaped = escape_references(typed)
    assert expand(escaped, defined) == typed
    assert expand(escaped, EveryName()) == typed
    assert expand(escaped, {}) == typed


@given(command=st.lists(dollar_heavy, min_size=1, max_size=4), value=dollar_heavy)
def test_the_manifest_carries_the_command_and_env_so_that_the_kubelet_gives_them_back(
    command: list[str], value: str
) -> None:
    request = RunRequest(image="alpine", command=tuple(command), env=(f"V={value}",))
    resolved = resolve_run(request, (), environ={}, user="u", run_id=RUN_ID, random_hex="abcdef")
    (container,) = resolved.manifest["spec"]["containers"]
    assert container_argv(container, {"V": value}) == command

    (env,) = container["env"]
    assert expand(env["value"], {}) == value
