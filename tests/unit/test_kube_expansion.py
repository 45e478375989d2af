"""The kubelet's `$(VAR)` expansion as ported in kube_semantics.expansion, checked case by case
against the behaviour kubernetes' own table pins (third_party/forked/golang/expansion/
expand_test.go, doExpansionTest), and squarepeg's escape that undoes it (issue 17, item 5)."""

from __future__ import annotations

import pytest

from pegboard.adapters.kube_semantics.expansion import expand
from pegboard.adapters.sandboxes.kubernetes.kubelet import container_argv
from pegboard.domain.squarepeg.kube_references import escape_references

DEFINED = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}

# (input, what the kubelet makes of it): the cases of expand_test.go, by what they show.
UPSTREAM = [
    ("$(VAR_A)", "A"),
    ("$(VAR_A)-$(VAR_A)", "A-A"),
    ("___$(VAR_B)___", "___B___"),
    ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
    ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
    ("f000-$$VAR_A", "f000-$VAR_A"),
    ("foo\\$(VAR_C)bar", "foo\\Cbar"),
    ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
    ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
    ("$(VAR_REF)", "$(VAR_A)"),  # a value is never expanded again
    ("foo$(VAR_EMPTY)bar", "foobar"),
    ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
    ("$?_boo_$!", "$?_boo_$!"),
    ("$VAR_A", "$VAR_A"),
    ("$(VAR_DNE)", "$(VAR_DNE)"),
    ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
    ("$$$$$$(VAR_A)", "$$$(VAR_A)"),
    ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
    ("$$$$$$$(VAR_A)", "$$$A"),
    ("$VAR_A)", "$VAR_A)"),
    ("${VAR_A}", "${VAR_A}"),
    ("$(VAR_B)_______$(A", "B_______$(A"),
    ("$(VAR_C)_______$(", "C_______$("),
    ("$(VAR_A)foobarzab$", "Afoobarzab$"),
    ("--$($($($($--", "--$($($($($--"),
    ("$($($($($--foo$(", "$($($($($--foo$("),
    ("$(foo$$var)", "$(foo$$var)"),
    ("\n", "\n"),
    ("$é$$", "$é$"),  # the rune after a `$` is decoded, never split
]


@pytest.mark.parametrize(("text", "expanded"), UPSTREAM)
def test_expansion_matches_kubernetes(text: str, expanded: str) -> None:
    assert expand(text, DEFINED) == expanded


@pytest.mark.parametrize(
    "typed",
    ["kill -9 $$", "echo $(hostname) $(VAR_A)", "$$$(", "a$", "$", "$(", "$$(VAR_A)", "${X} $HOME"],
)
def test_escaped_text_expands_back_to_what_was_typed(typed: str) -> None:
    assert expand(escape_references(typed), DEFINED) == typed


def test_the_escape_touches_only_what_the_kubelet_acts_on() -> None:
    assert escape_references("kill -9 $$") == "kill -9 $$$"
    assert escape_references("echo $(date) $HOME ${X} $1 $") == "echo $$(date) $HOME ${X} $1 $"


def test_the_sandbox_kubelet_expands_command_and_args_with_its_own_variables_only() -> None:
    container = {"command": ["sh", "-c"], "args": ["echo $(GREETING) $(HOME) $(PATH) $$"]}
    env = {"GREETING": "hi", "HOME": "/root", "PATH": "/bin", "HOSTNAME": "p"}
    # HOME, PATH and HOSTNAME come from the runtime and the image: the kubelet does not know them.
    assert container_argv(container, env) == ["sh", "-c", "echo hi $(HOME) $(PATH) $"]
