"""The RunPod API key: RUNPOD_API_KEY, else `api_key` under [default] in ~/.runpod/config.toml.

The SDK itself only reads the config file, once, at import, and ignores RUNPOD_API_KEY; we
read both ourselves and hand the key to every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pegboard.domain.errors import Unauthorized

CONFIG_RELATIVE = Path(".runpod") / "config.toml"
NO_KEY = (
    "no RunPod API key: set RUNPOD_API_KEY, or put api_key under [default] in "
    "~/.runpod/config.toml (what `runpod config` writes)"
)
REJECTED_KEY = (
    "RunPod rejected the API key (HTTP 401): check RUNPOD_API_KEY or the api_key in "
    "~/.runpod/config.toml"
)


def api_key(environ: Mapping[str, str], home: Path) -> str:
    """The key to use; Unauthorized with one line when there is none."""
    from_env = environ.get("RUNPOD_API_KEY", "").strip()
    if from_env:
        return from_env
    import tomllib  # only when the key is not in the environment

    path = home / CONFIG_RELATIVE
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise Unauthorized(NO_KEY) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise Unauthorized(f"cannot read the RunPod API key from {path}: {exc}") from None
    profile = data.get("default")
    key = profile.get("api_key") if isinstance(profile, dict) else None
    if not isinstance(key, str) or not key.strip():
        raise Unauthorized(f"{path}: no api_key under [default]; {NO_KEY}")
    return key.strip()
