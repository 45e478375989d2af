"""dump_yaml writes what yaml.dump writes: manifests without importing PyYAML, anything else with
only PyYAML's dumping half."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pegboard.adapters.yaml_dump import dump_yaml

SAMPLES: list[Any] = [
    {},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a/b": "c"}}},
    {"args": ["echo", "hi there", "", "yes", "no", "1.5", "0x1f", "~", "null", "- x", "a: b"]},
    {"script": "line one\nline two\n", "tab": "a\tb", "cr": "a\rb", "nul": "a\x00b"},
    {"unicode": "héllo wörld ✓ 日本", "emoji": "🙂", "nbsp": "a\u00a0b", "bom": "\ufeffx"},
    {"numbers": [0, -1, 3.25, 10**30, True, False, None]},
    {"tuple": ("a", ("b", "c")), "long": "x" * 200, "spaces": "  padded  "},
    ["top", "level", {"list": []}],
    {"k" * 122: "v"},  # the longest simple key
    {"k" * 123: "v"},  # written as `? kkk...`
]


MANIFEST = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "squarepeg-alpine-fba654",
        "labels": {
            "app.kubernetes.io/managed-by": "squarepeg",
            "squarepeg.io/run-id": "50b9ca24-f0f8-49f8-b64f-8216d4f4bbb4",
        },
    },
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "python:3.12",
                "args": ["echo", "hi"],
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                "volumeMounts": [{"name": "scratch-0", "mountPath": "/scratch"}],
                "securityContext": {"runAsUser": 1000, "readOnlyRootFilesystem": True},
            }
        ],
        "volumes": [{"name": "scratch-0", "emptyDir": {}}],
    },
}


def _yaml_dump(data: Any) -> str:
    class Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    Plain.add_representer(tuple, lambda dumper, value: dumper.represent_list(list(value)))
    return yaml.dump(
        data, Dumper=Plain, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


@pytest.mark.parametrize("data", [*SAMPLES, MANIFEST])
def test_the_same_text_as_yaml_dump(data: Any) -> None:
    assert dump_yaml(data) == _yaml_dump(data)


# Strings near the fast path's edges: PyYAML's bool/null/number/date spellings, and strings made
# of the fast path's own characters, which it must sort into plain and quoted as PyYAML does.
_EDGE_WORDS = [
    "yes",
    "No",
    "TRUE",
    "off",
    "On",
    "oN",
    "null",
    "NULL",
    "~",
    "y",
    "n",
    "e1",
    "1e3",
    "1e+3",
    "1.5e-3",
    ".inf",
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "0755",
    "09",
    "00",
    "1:20",
    "1:20.5",
    "12:30",
    "1:5x",
    "2001-12-14",
    "2001-1-1t1:00:00Z",
    "2001-1-1T1:00:00",
    "0.",
    "500m",
    "512Mi",
    "2",
    "x-",
    "python:3.12",
    "a:",
    "a:b",
    "a::b",
    "-x",
    "/data",
    "_x",
    "alpine@sha256:00ff",
    "50b9ca24-f0f8",
    "squarepeg.io/run-id",
    "50b9ca24-f0f8-49f8-b64f-8216d4f4bbb4",
    "50b9ca24f0f849f8",
    "1234-5",
    "1234-ab",
    "12345-1",
    "0X1F",
    "1e5",
    "0_1",
    "1.5-3",
    "2001-12-14x",
]
_plain_strings = st.one_of(
    st.sampled_from(_EDGE_WORDS), st.text("aeynotfxbzTZEMi0123456789_./:@-", max_size=10)
)
# ...and ones it leaves to PyYAML (space, `#`, quotes, indicators, tabs, newlines, unicode).
_other_strings = st.text("ab1 #'\"-:~!&*?,[]{}%|>\t\né", max_size=6)


def _data(strings: st.SearchStrategy[str], scalars: st.SearchStrategy[Any]) -> Any:
    return st.dictionaries(
        strings,
        st.recursive(
            st.one_of(strings, scalars),
            lambda inner: st.one_of(
                st.lists(inner, max_size=3),
                st.tuples(inner, inner),
                st.dictionaries(strings, inner, max_size=3),
            ),
            max_leaves=12,
        ),
        min_size=1,
        max_size=4,
    )


_plain_scalars = st.one_of(st.integers(), st.booleans(), st.none())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_data(_plain_strings, _plain_scalars))
def test_manifest_like_data_dumps_as_yaml_dump_writes_it(data: dict[str, Any]) -> None:
    """Data the fast path mostly takes (mappings, lists, ints, bools, None, short words)."""
    assert dump_yaml(data) == _yaml_dump(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_data(st.one_of(_plain_strings, _other_strings), st.one_of(_plain_scalars, st.floats())))
def test_any_data_dumps_as_yaml_dump_writes_it(data: dict[str, Any]) -> None:
    assert dump_yaml(data) == _yaml_dump(data)


def _run(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_dump_loads_no_part_of_the_loading_half() -> None:
    out = _run(
        """
        import sys
        from pegboard.adapters.yaml_dump import dump_yaml
        print(dump_yaml({"a": [1, "b"]}), end="")
        loading = ["yaml.reader", "yaml.scanner", "yaml.parser", "yaml.composer",
                   "yaml.constructor", "yaml.loader", "yaml.cyaml", "yaml._yaml"]
        print(sorted(name for name in loading if name in sys.modules))
        """
    )
    assert out == ["a:", "- 1", "- b", "[]"]


def test_a_manifest_is_dumped_without_importing_pyyaml() -> None:
    out = _run(
        f"""
        import sys
        from pegboard.adapters.yaml_dump import dump_yaml
        text = dump_yaml({MANIFEST!r})
        print(sorted(name for name in sys.modules if name.split(".")[0] == "yaml"))
        """
    )
    assert out == ["[]"]


def test_yaml_is_whole_for_whoever_uses_it_after_a_dump() -> None:
    out = _run(
        """
        from pegboard.adapters.yaml_dump import dump_yaml
        dump_yaml({"a": 1})
        import yaml
        print(yaml.safe_load("b: [1, 2]"), yaml.__with_libyaml__ in (True, False))
        from yaml import CSafeLoader, YAMLError
        from pegboard.adapters.yaml_documents import parse_yaml_document
        print(parse_yaml_document("c: 3\\n", source="x.yaml").data)
        """
    )
    assert out == ["{'b': [1, 2]} True", "{'c': 3}"]
