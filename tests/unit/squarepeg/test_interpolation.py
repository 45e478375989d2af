"""`${VAR}` interpolation: the 0.4.1 syntax, error locations, and what is never touched."""

from __future__ import annotations

import pytest

from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.interpolation import interpolate_document, interpolate_string

ENV = {"NAME": "value", "EMPTY": "", "PATHY": "/a:b"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${NAME}", "value"),
        ("pre-${NAME}-post", "pre-value-post"),
        ("${NAME}${NAME}", "valuevalue"),
        ("${EMPTY}", ""),
        ("${EMPTY:-fallback}", "fallback"),
        ("${UNSET:-fallback}", "fallback"),
        ("${NAME:-fallback}", "value"),
        ("${UNSET:-}", ""),
        ("${UNSET:-a: b/c d}", "a: b/c d"),
        ("${UNSET:-${NAME}", "${NAME"),  # the default is literal, never rescanned
        ("$$", "$"),
        ("$${NAME}", "${NAME}"),
        ("$$$${NAME}", "$${NAME}"),
        ("$$${NAME}", "$value"),
        ("$NAME and $ alone", "$NAME and $ alone"),
        ("cost: 5$", "cost: 5$"),
        ("${PATHY}", "/a:b"),
        ("no dollars", "no dollars"),
    ],
)
def test_supported_forms(text: str, expected: str) -> None:
    assert interpolate_string(text, ENV) == expected


def test_substituted_values_are_not_re_expanded() -> None:
    assert interpolate_string("${A}", {"A": "${B}", "B": "x"}) == "${B}"
    assert interpolate_string("${A}", {"A": "$$"}) == "$$"


@pytest.mark.parametrize(
    "text", ["${}", "${1BAD}", "${A B}", "${VAR:=x}", "${VAR-x}", "${VAR", "x ${VAR:-y", "${-}"]
)
def test_malformed_references(text: str) -> None:
    with pytest.raises(ConfigError, match="malformed reference"):
        interpolate_string(text, ENV)


def test_unset_variable_names_variable_path_file_line_and_suggests_a_default() -> None:
    doc = SourceDocument(
        source="/home/u/c.yaml",
        data={"profiles": {"unused": {"namespace": "${NOPE}"}}},
        lines={("profiles", "unused", "namespace"): 7},
    )
    with pytest.raises(ConfigError) as exc:
        interpolate_document(doc, ENV)
    (problem,) = exc.value.problems
    assert problem.source == "/home/u/c.yaml"
    assert problem.line == 7
    assert problem.path == "profiles.unused.namespace"
    assert "NOPE" in problem.message
    assert "${NOPE:-default}" in problem.message
    assert str(problem).startswith("/home/u/c.yaml:7: profiles.unused.namespace: ")


def test_list_indices_appear_in_the_path() -> None:
    doc = SourceDocument(source="c.yaml", data={"a": {"b": [{"c": "${NOPE}"}]}})
    with pytest.raises(ConfigError) as exc:
        interpolate_document(doc, {})
    assert exc.value.problems[0].path == "a.b[0].c"


def test_every_problem_of_a_document_is_reported_at_once() -> None:
    doc = SourceDocument(
        source="c.yaml",
        data={"x": "${A} ${B}", "y": ["${}"], "kubernetes": {"spec": {"z": "${C}"}}},
    )
    with pytest.raises(ConfigError) as exc:
        interpolate_document(doc, {})
    assert [p.path for p in exc.value.problems] == ["x", "x", "y[0]", "kubernetes.spec.z"]


def test_keys_and_non_strings_are_never_touched() -> None:
    doc = SourceDocument(
        source="c.yaml",
        data={"${KEY}": {"n": 3, "b": True, "none": None, "f": 1.5, "s": "${NAME}"}},
    )
    result = interpolate_document(doc, ENV)
    assert result.data == {"${KEY}": {"n": 3, "b": True, "none": None, "f": 1.5, "s": "value"}}
    assert result.source == doc.source and result.lines == doc.lines


def test_results_are_strings_even_when_they_look_like_numbers() -> None:
    doc = SourceDocument(source="c.yaml", data={"job": {"spec": {"backoffLimit": "${N}"}}})
    assert interpolate_document(doc, {"N": "3"}).data == {"job": {"spec": {"backoffLimit": "3"}}}


def test_the_input_document_is_not_mutated() -> None:
    data = {"a": ["${NAME}"]}
    doc = SourceDocument(source="c.yaml", data=data)
    result = interpolate_document(doc, ENV)
    assert data == {"a": ["${NAME}"]}
    assert result.data["a"] is not data["a"]
