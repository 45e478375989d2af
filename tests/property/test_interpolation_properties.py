"""Interpolation laws: references are consumed, `$$` escapes round-trip, nothing is re-expanded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.interpolation import escape, interpolate_string

NAMES = st.sampled_from(["A", "B", "_x", "VAR_1", "UNSET"])
ENVS = st.dictionaries(
    st.sampled_from(["A", "B", "_x", "VAR_1"]), st.text(alphabet="ab ${}:-/", max_size=6)
)
DOLLAR_FREE_ENVS = st.dictionaries(
    st.sampled_from(["A", "B", "_x", "VAR_1"]), st.text(alphabet="ab {}:-/", max_size=6)
)
LITERAL = st.text(alphabet="ab {}:-/_1", max_size=6)
DEFAULT = st.text(alphabet="ab {:-/_1", max_size=6)  # anything but `}` and `$`


@st.composite
def token_lists(draw: st.DrawFn) -> list[tuple[str, str, str | None]]:
    """(kind, payload, default) tokens whose concatenation is a well-formed config string."""
    kinds = draw(st.lists(st.sampled_from(["lit", "esc", "ref", "def", "bare"]), max_size=8))
    tokens: list[tuple[str, str, str | None]] = []
    for kind in kinds:
        if kind == "lit":
            tokens.append((kind, draw(LITERAL), None))
        elif kind == "esc":
            tokens.append((kind, "", None))
        elif kind == "ref":
            tokens.append((kind, draw(NAMES.filter(lambda n: n != "UNSET")), None))
        elif kind == "def":
            tokens.append((kind, draw(NAMES), draw(DEFAULT)))
        else:
            tokens.append((kind, draw(NAMES), None))
    return tokens


def _render(tokens: list[tuple[str, str, str | None]]) -> str:
    out = []
    for kind, payload, default in tokens:
        if kind == "lit":
            out.append(payload)
        elif kind == "esc":
            out.append("$$")
        elif kind == "ref":
            out.append("${" + payload + "}")
        elif kind == "def":
            out.append("${" + payload + ":-" + str(default) + "}")
        else:
            out.append("$" + payload)
    return "".join(out)


def _expected(tokens: list[tuple[str, str, str | None]], env: dict[str, str]) -> str:
    out = []
    for kind, payload, default in tokens:
        if kind == "lit":
            out.append(payload)
        elif kind == "esc":
            out.append("$")
        elif kind == "ref":
            out.append(env[payload])
        elif kind == "def":
            out.append(env.get(payload) or str(default))
        else:
            out.append("$" + payload)
    return "".join(out)


@given(token_lists(), DOLLAR_FREE_ENVS)
def test_well_formed_strings_interpolate_like_the_model(
    tokens: list[tuple[str, str, str | None]], env: dict[str, str]
) -> None:
    env = {**env, **{p: env.get(p, "set") for k, p, _ in tokens if k == "ref"}}
    result = interpolate_string(_render(tokens), env)
    assert result == _expected(tokens, env)
    if not any(kind == "esc" for kind, _, _ in tokens):
        assert "${" not in result  # every reference was consumed


@given(st.text(alphabet="ab${}:-_1 ", max_size=20), ENVS)
def test_any_text_is_accepted_or_rejected_with_a_config_error(
    text: str, env: dict[str, str]
) -> None:
    safe_env = {k: v.replace("$", "") for k, v in env.items()}
    try:
        result = interpolate_string(text, safe_env)
    except ConfigError:
        return
    if "$$" not in text and not any("${" in v for v in safe_env.values()):
        # An accepted string without escapes keeps no `${` of its own (defaults are literal,
        # so a default may spell one: that is the user's own text, not a reference).
        assert "${" not in result or ":-" in text


@given(st.text(max_size=30), ENVS)
def test_escaping_round_trips(text: str, env: dict[str, str]) -> None:
    assert interpolate_string(escape(text), env) == text


@given(st.text(max_size=12))
def test_substituted_values_are_never_re_expanded(value: str) -> None:
    assert interpolate_string("${A}", {"A": value, "B": "expanded"}) == value
