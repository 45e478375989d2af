"""Plain data -> block-style YAML, with only PyYAML's dumping half imported.

`import yaml` runs the package's `__init__`, which loads the loading half too: the reader (it
compiles one large Unicode regular expression), scanner, parser, composer, constructor and the
libyaml binding, ~8 ms of a `squarepeg run --dry-run` that only prints a manifest. So the
package is entered with its `__init__` deferred (deferred_packages.py; anything else that uses
`yaml` later gets the whole package on first use) and `yaml.dumper` is imported alone; the
dump is what `yaml.dump` does with a Dumper.
"""

from __future__ import annotations

import io
from typing import Any

from .deferred_packages import enter_deferred

enter_deferred("yaml")

from yaml.dumper import SafeDumper  # noqa: E402  (after the package entry above)


class _PlainDumper(SafeDumper):
    """SafeDumper that never writes anchors/aliases, even for an object that appears twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_PlainDumper.add_representer(tuple, lambda dumper, data: dumper.represent_list(list(data)))


def dump_yaml(obj: Any) -> str:
    """Block-style YAML in insertion order, unicode kept, no anchors/aliases."""
    stream = io.StringIO()
    # yaml.dump(obj, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False,
    # allow_unicode=True), as PyYAML's dump_all runs it
    dumper = _PlainDumper(stream, sort_keys=False, default_flow_style=False, allow_unicode=True)
    try:
        dumper.open()
        dumper.represent(obj)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()
