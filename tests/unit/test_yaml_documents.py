"""YAML documents: line numbers per key path, strictness, and alias-free dumping."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pegboard.adapters.yaml_documents import parse_yaml_document, read_yaml_document
from pegboard.adapters.yaml_dump import dump_yaml
from pegboard.domain.documents import SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError


def _problem(exc: pytest.ExceptionInfo[ConfigError]) -> tuple[str, int | None, str]:
    (problem,) = exc.value.problems
    return problem.source, problem.line, problem.message


def test_records_the_line_of_every_key_path_and_list_index(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "# comment\nnamespace: ns\ndefaults:\n  env:\n    FOO: bar\nitems:\n  - a\n  - name: b\n"
    )
    doc = read_yaml_document(path)
    assert doc.source == str(path)
    assert doc.data == {
        "namespace": "ns",
        "defaults": {"env": {"FOO": "bar"}},
        "items": ["a", {"name": "b"}],
    }
    assert doc.lines[("namespace",)] == 2
    assert doc.lines[("defaults", "env", "FOO")] == 5
    assert doc.lines[("items", 0)] == 7
    assert doc.lines[("items", 1, "name")] == 8


def test_line_of_falls_back_to_the_nearest_ancestor() -> None:
    doc = parse_yaml_document("a:\n  b:\n    c: 1\n", source="x.yaml")
    assert doc.line_of(("a", "b", "nope", 3)) == 2
    assert SourceDocument(source="<defaults>", data={}).line_of(("a",)) is None


def test_empty_file_is_an_empty_mapping(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# only a comment\n")
    assert read_yaml_document(path).data == {}


def test_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        read_yaml_document(tmp_path / "nope.yaml")
    assert _problem(exc) == (str(tmp_path / "nope.yaml"), None, "no such file")


def test_a_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        read_yaml_document(tmp_path)


def test_duplicate_keys_are_rejected_with_line_and_key_path() -> None:
    text = "defaults:\n  env:\n    FOO: 1\n    BAR: 2\n    FOO: 3\n"
    with pytest.raises(ConfigError) as exc:
        parse_yaml_document(text, source="c.yaml")
    source, line, message = _problem(exc)
    assert (source, line) == ("c.yaml", 5)
    assert "duplicate key 'defaults.env.FOO'" in message
    assert "line 3" in message
    assert str(exc.value).startswith("c.yaml:5: ")


def test_duplicate_keys_in_flow_mappings_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"duplicate key 'a\.b'"):
        parse_yaml_document("a: {b: 1, b: 2}\n", source="c.yaml")


def test_merge_keys_may_be_overridden_without_counting_as_duplicates() -> None:
    doc = parse_yaml_document("base: &b\n  x: 1\n  y: 1\nd:\n  <<: *b\n  y: 2\n", source="c")
    assert doc.data["d"] == {"x": 1, "y": 2}
    assert doc.lines[("d", "y")] == 6
    assert doc.lines[("d", "x")] == 2


@pytest.mark.parametrize("text", ["- 1\n- 2\n", "just a string\n", "42\n"])
def test_top_level_must_be_a_mapping(text: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_yaml_document(text, source="c.yaml")
    source, line, message = _problem(exc)
    assert (source, line) == ("c.yaml", 1)
    assert "top level must be a mapping" in message


def test_malformed_yaml_names_file_and_line() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_yaml_document("a: 1\nb: [1, 2\nc: 3\n", source="c.yaml")
    source, line, message = _problem(exc)
    assert source == "c.yaml"
    assert line is not None and line >= 2
    assert message.startswith("malformed YAML")


def test_several_documents_in_one_file_are_rejected() -> None:
    with pytest.raises(ConfigError, match="malformed YAML"):
        parse_yaml_document("a: 1\n---\nb: 2\n", source="c.yaml")


def test_recursive_anchor_is_refused_not_built() -> None:
    # A self-containing value would send every later walk (interpolation, merge) into a loop.
    with pytest.raises(ConfigError, match=r"c.yaml:1: an anchor is used inside itself"):
        parse_yaml_document("r: &r [*r]\n", source="c.yaml")


def test_dump_never_writes_anchors_for_shared_objects() -> None:
    shared = {"labels": {"a": "b"}}
    text = dump_yaml({"metadata": shared, "template": {"metadata": shared}})
    assert "&" not in text and "*" not in text
    assert yaml.safe_load(text) == {"metadata": shared, "template": {"metadata": shared}}


def test_dump_keeps_insertion_order_block_style_and_unicode() -> None:
    text = dump_yaml({"z": 1, "a": ["x"], "u": "héllo"})
    assert text == "z: 1\na:\n- x\nu: héllo\n"


def test_format_key_path() -> None:
    assert format_key_path(("a", "b", 0, "c")) == "a.b[0].c"
    assert format_key_path(()) == ""
    assert format_key_path((0,)) == "[0]"


# --- hostile input (issue 7, items 10, 12, 13) -----------------------------------------------


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """~300 bytes that PyYAML would expand to width**levels values."""
    lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded() -> None:
    with pytest.raises(ConfigError, match=r"c.yaml:\d+: more than 20000 values once aliases"):
        parse_yaml_document(alias_bomb(), source="c.yaml")


def test_a_chain_of_aliases_deeper_than_the_limit_is_refused() -> None:
    text = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 200))
    with pytest.raises(ConfigError, match="nested more than 64 levels deep once aliases"):
        parse_yaml_document(text, source="c.yaml")


def test_ordinary_anchors_and_merge_keys_still_work() -> None:
    text = "base: &b {x: 1, y: [1, 2]}\nuse: *b\nmerged:\n  <<: *b\n  x: 2\n"
    doc = parse_yaml_document(text, source="c.yaml")
    assert doc.data["use"] == {"x": 1, "y": [1, 2]}
    assert doc.data["merged"] == {"x": 2, "y": [1, 2]}


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ("{a: ", "}")])
def test_deep_nesting_is_one_line_not_a_recursion_error(opener: str, closer: str) -> None:
    depth = 5000  # PyYAML's composer recursed once per level: RecursionError
    text = "a: " + opener * depth + "1" + closer * depth + "\n"
    # Our composer's limit, or libyaml's own (1,000 flow levels), whichever its lookahead meets
    with pytest.raises(ConfigError, match=r"c.yaml:1: .*nest") as caught:
        parse_yaml_document(text, source="c.yaml")
    assert "\n" not in str(caught.value)


def test_block_nesting_past_the_limit_is_refused() -> None:
    text = "".join("  " * i + f"k{i}:\n" for i in range(100)) + "  " * 100 + "leaf: 1\n"
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        parse_yaml_document(text, source="c.yaml")


def test_an_integer_with_thousands_of_digits_is_refused_with_its_line() -> None:
    with pytest.raises(ConfigError, match=r"c.yaml:2: integer with more than 64 digits"):
        parse_yaml_document("a: 1\nb: " + "9" * 5000 + "\n", source="c.yaml")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"a: \xff\n", r"c.yaml: not valid UTF-8 text \(byte 0xff on line 1\)"),
        (b"a: 1\nb: \x00\n", "c.yaml: contains a NUL byte on line 2"),
        (b"a: \x01\n", "c.yaml: .*unacceptable character #x0001"),
    ],
)
def test_bytes_that_are_not_yaml_text_are_one_line(raw: bytes, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_yaml_document(raw, source="c.yaml")
    assert "\n" not in str(caught.value)


def test_reading_dev_zero_is_bounded() -> None:
    with pytest.raises(ConfigError, match=r"/dev/zero: larger than 1 MiB"):
        read_yaml_document(Path("/dev/zero"))


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("a: '" + "x" * (1024 * 1024) + "'\n")
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        read_yaml_document(path)
