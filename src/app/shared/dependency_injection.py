"""dependency-injector, imported without the web frameworks it supports optionally.

Its `containers` module imports `wiring`, which imports FastAPI, fast_depends, Starlette and
Werkzeug when they are installed, and `providers` imports pydantic-settings, only to recognise
their markers when wiring functions. pegboard never wires functions, and the `runpod` extra
installs FastAPI and pydantic-settings: importing them cost every `squarepeg run` and
`runpod-deploy run` about 250 ms. They are hidden for the length of this import only; a program
that imports them later gets them as usual.
"""

from __future__ import annotations

import sys

_OPTIONAL_INTEGRATIONS = ("fastapi", "fast_depends", "starlette", "werkzeug", "pydantic_settings")

_hidden = [name for name in _OPTIONAL_INTEGRATIONS if name not in sys.modules]
for _name in _hidden:
    sys.modules[_name] = None  # type: ignore[assignment]  # `import name` raises ImportError
try:
    from dependency_injector import containers, providers
finally:
    for _name in _hidden:
        if sys.modules.get(_name, sys) is None:
            del sys.modules[_name]

__all__ = ["containers", "providers"]
