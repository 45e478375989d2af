"""domain/config_problems.py: one cattrs-error-to-ConfigProblem walk for both validators."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.runpod_configs import spec_from, with_sections
from pegboard.domain.config_problems import did_you_mean, unknown_key_message
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.config_validation import validate_document

POD = {"image": "i", "datacenters": ["d"], "gpu_order": ["g"]}


def test_runpod_spec_suggests_the_key_meant() -> None:
    with pytest.raises(ConfigError) as caught:
        spec_from(with_sections(pod={**POD, "gpu_ordr": ["x"]}))
    (problem,) = [p for p in caught.value.problems if p.path == "pod.gpu_ordr"]
    assert problem.message.startswith("unknown key 'gpu_ordr'; expected one of: ")
    assert problem.message.endswith("(did you mean 'gpu_order'?)")


def test_squarepeg_config_suggests_the_key_meant() -> None:
    doc = SourceDocument(source="c.yaml", data={"namespce": "x"})
    with pytest.raises(ConfigError) as caught:
        validate_document(doc)
    assert [p.message for p in caught.value.problems] == [
        "unknown key 'namespce' (did you mean 'namespace'?)"
    ]


def test_no_suggestion_when_nothing_is_close() -> None:
    assert unknown_key_message("zzz", ["namespace"]) == "unknown key 'zzz'"
    assert unknown_key_message(3, ["namespace"], list_known=True) == (
        "unknown key 3; expected one of: namespace"
    )


@given(st.sampled_from(["namespace", "image", "labels"]), st.integers(0, 8))
def test_a_one_letter_typo_finds_its_key(key: str, at: int) -> None:
    typo = key[: at % len(key)] + key[at % len(key) + 1 :]
    assert did_you_mean(typo, ["namespace", "image", "labels", "context"]) == key
