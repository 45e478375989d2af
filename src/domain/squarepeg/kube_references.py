"""The container sees the command as typed, as with `docker run`, although Kubernetes expands it.

The kubelet expands `$(NAME)` references and `$$` in a container's `command`, `args` and env
`value`s (kubernetes third_party/forked/golang/expansion/expand.go): `sh -c 'kill -9 $$'` would
reach the shell as `kill -9 $`. squarepeg therefore writes what the user typed so that this
expansion gives it back: every `$` that the expansion would act on, the one before `$` or `(`, is
doubled. Any other `$` (`$HOME`, `${X}`, `$1`, a trailing `$`) is left as is, since the expansion
leaves it alone, so `--dry-run` shows only the `$` that needed it. `--kube-expand` (config
`kube_expand: true`) skips this, for a user who wants the kubelet's expansion on purpose.
"""

from __future__ import annotations

import re

# A `$` the kubelet's expansion reads as the start of `$$` or `$(`.
_ACTED_ON = re.compile(r"\$(?=[$(])")


def escape_references(text: str) -> str:
    """`text` written so that the kubelet's expansion, whatever is defined, yields `text`."""
    return _ACTED_ON.sub("$$", text)
