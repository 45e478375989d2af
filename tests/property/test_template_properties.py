"""For ANY value, a placeholder in a shell template yields exactly that value, as data."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.gpujob.template_syntax import TemplateError, render_shell, render_text

# Bash cannot carry NUL bytes in arguments; everything else is fair game.
values = st.text(
    st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=40
)
shell_metachars = st.text(alphabet="'\"$`\\(){};|&<>*?[]#~! \t\nabcEOF", max_size=30)
any_value = st.one_of(values, shell_metachars)

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")


@given(value=any_value)
def test_unquoted_placeholder_is_one_shlex_word(value: str) -> None:
    assert shlex.split(render_shell("cmd {v} end", {"v": value})) == ["cmd", value, "end"]


@given(value=any_value)
def test_embedded_placeholder_stays_inside_its_word(value: str) -> None:
    rendered = render_shell("cmd --out=/x/{v}/y end", {"v": value})
    assert shlex.split(rendered) == ["cmd", f"--out=/x/{value}/y", "end"]


@needs_bash
@given(value=any_value)
def test_bash_sees_exactly_one_literal_argument(value: str) -> None:
    script = render_shell(
        'printf "%s\\0" {v}; printf "%s" "{v}"; printf "%s" \'{v}\'', {"v": value}
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, check=True)
    assert done.stdout.decode() == f"{value}\0{value}{value}"  # bytes: keep \r as is


@given(value=any_value)
def test_text_rendering_is_verbatim(value: str) -> None:
    assert render_text("a{v}b", {"v": value}) == f"a{value}b"


@needs_bash
@given(value=any_value)
def test_nested_and_here_document_contexts_carry_the_value(value: str) -> None:
    template = (
        'printf "%s|" "$(printf "%s" {v})"\n'
        "printf '%s|' $'{v}'\n"
        "cat <<EOF\n{v}|\nEOF\n"
        "cat <<'EOF'\n{v}\nEOF\n"
    )
    try:
        script = render_shell(template, {"v": value})
    except TemplateError:
        # Refused only when the value itself would end the here-document early.
        assert "EOF" in value.split("\n")
        return
    done = subprocess.run(["bash", "-c", script], capture_output=True, check=True)
    # $(...) drops trailing newlines: bash semantics, not a quoting matter.
    expected = f"{value.rstrip(chr(10))}|{value}|{value}|\n{value}\n"
    assert done.stdout.decode() == expected
