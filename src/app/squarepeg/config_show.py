"""The `squarepeg config show` use case: the merged, interpolated config on stdout (profile
applied, `profiles` removed) as YAML or JSON, and one `[squarepeg] <path> (<origin>)` line per
file on stderr."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from pegboard.app.squarepeg.config_loading import LoadedConfig, load_config_layers
from pegboard.app.squarepeg.status import write_stdout_text

if TYPE_CHECKING:
    from pegboard.app.squarepeg.seams import Seams


def show_config(
    seams: Seams,
    *,
    config_paths: tuple[str, ...],
    no_default_config: bool,
    profile: str | None,
    output: str = "yaml",
) -> int:
    """Showing config never leaves this machine: the seams are plain ones (no DI import)."""
    loaded = load_config_layers(
        config_paths=config_paths,
        no_default_config=no_default_config,
        profile=profile,
        environ=seams.environ,
        home=seams.home,
        read_document=seams.read_document,
    )
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed (`2>&-`)
        for line in source_lines(loaded):
            seams.stderr.write(line + "\n")
        seams.stderr.flush()
    # A refusing stdout is 122 with one line (141 for a reader that left), like --dry-run.
    data = loaded.merged.data
    if output == "json":
        import json

        text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    else:
        text = seams.dump_yaml(data)
    return write_stdout_text(seams.stdout, text, seams.stderr)


def source_lines(loaded: LoadedConfig) -> list[str]:
    """The stderr lines naming every config file, in the order they were merged."""
    if not loaded.files:
        return ["[squarepeg] no config files loaded"]
    return [f"[squarepeg] {file.path} ({file.origin})" for file in loaded.files]
