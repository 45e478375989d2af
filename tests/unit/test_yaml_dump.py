"""dump_yaml writes what yaml.dump writes, importing only PyYAML's dumping half."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
import yaml

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
]


@pytest.mark.parametrize("data", SAMPLES)
def test_the_same_text_as_yaml_dump(data: Any) -> None:
    class Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    Plain.add_representer(tuple, lambda dumper, value: dumper.represent_list(list(value)))
    expected = yaml.dump(
        data, Dumper=Plain, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    assert dump_yaml(data) == expected


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
