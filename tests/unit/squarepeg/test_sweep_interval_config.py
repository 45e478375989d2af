"""`orphan_sweep_interval`: validated like the other int keys, and carried to the resolved run."""

from __future__ import annotations

import pytest

from helpers.squarepeg_requests import resolve
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.config_validation import validate_document
from pegboard.domain.squarepeg.layers import built_in_defaults


def test_default_and_values() -> None:
    assert resolve().sweep.interval_seconds == 60
    assert resolve(layers=[{"orphan_sweep_interval": 0}]).sweep.interval_seconds == 0
    assert resolve(layers=[{"orphan_sweep_interval": "600"}]).sweep.interval_seconds == 600
    assert built_in_defaults().data["orphan_sweep_interval"] == 60


@pytest.mark.parametrize("value", [-1, "-5", 1.5, "soon", True])
def test_bad_values_name_the_key(value: object) -> None:
    with pytest.raises(ConfigError, match="orphan_sweep_interval"):
        validate_document(SourceDocument(source="c.yaml", data={"orphan_sweep_interval": value}))
