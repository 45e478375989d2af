"""One exit-code module per app, and no code in it that means two things (issue 8)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from pegboard.app.runpod_deploy import exit_codes as runpod_deploy_codes
from pegboard.app.runpod_deploy.cli import EXIT_CODES as RUNPOD_DEPLOY_ERRORS
from pegboard.app.shared import console
from pegboard.app.squarepeg.cli import EXIT_CODES as SQUAREPEG_ERRORS
from pegboard.domain.squarepeg import exit_codes as squarepeg_codes


def _codes(module: ModuleType) -> dict[str, int]:
    return {
        name: value
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }


@pytest.mark.parametrize("module", [squarepeg_codes, runpod_deploy_codes], ids=lambda m: m.__name__)
def test_no_code_means_two_things(module: ModuleType) -> None:
    codes = _codes(module)
    assert len(codes) >= 4
    assert len(set(codes.values())) == len(codes), codes
    assert all(0 <= value <= 255 for value in codes.values())


@pytest.mark.parametrize(
    ("errors", "module"),
    [(SQUAREPEG_ERRORS, squarepeg_codes), (RUNPOD_DEPLOY_ERRORS, runpod_deploy_codes)],
    ids=["squarepeg", "runpod-deploy"],
)
def test_the_cli_maps_errors_to_codes_of_its_own_module(
    errors: console.ErrorExitCodes, module: ModuleType
) -> None:
    given = {code for code in errors if code is not None}  # None: the failure code stands in
    assert given <= set(_codes(module).values())


def test_the_shared_console_defines_no_code_of_its_own() -> None:
    assert _codes(console) == {}


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("module", "doc"),
    [
        (squarepeg_codes, "docs/squarepeg/cli-reference.md"),
        (runpod_deploy_codes, "docs/runpod-deploy/cli-reference.md"),
    ],
    ids=["squarepeg", "runpod-deploy"],
)
def test_the_cli_reference_lists_every_exit_code(module: ModuleType, doc: str) -> None:
    text = (REPO / doc).read_text()
    table = text.split("## Exit codes", 1)[1].split("\n\n", 2)[1]  # the table after the heading
    documented = {
        int(cell) for row in table.splitlines() if (cell := row.split("|")[1].strip()).isdigit()
    }
    codes = set(_codes(module).values()) - {0}  # squarepeg's 0 is the container's
    assert codes <= documented, f"{doc} lacks {sorted(codes - documented)}"
