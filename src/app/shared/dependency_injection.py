"""dependency-injector, imported without the web frameworks it supports optionally.

Its `containers` module imports `wiring`, which imports FastAPI, fast_depends, Starlette and
Werkzeug when they are installed, and `providers` imports pydantic-settings, only to recognise
their markers when wiring functions. pegboard never wires functions, and the `runpod` extra
installs FastAPI and pydantic-settings: importing them cost every `squarepeg run` and
`runpod-deploy run` about 250 ms. They are hidden for the length of this import only; a program
that imports them later gets them as usual.

Without pydantic-settings, `providers` falls back to `import pydantic` to look for pydantic 1's
`BaseSettings` (~18 ms of every run, with pydantic-core). A `None` placeholder does not work
there (its compiled import returns the placeholder and reads `.VERSION` from it), so for the
same import pydantic is a stand-in module whose VERSION says "not 1.x": `providers` then keeps
its pydantic support off, as with pydantic 2 and no pydantic-settings (`Configuration.from_pydantic`,
which pegboard never calls, then says pydantic-settings is missing).

asyncio (with ssl, ~10-18 ms of every run) is imported by `providers` and `containers` only for
their async mode: they bind `Future`, `ensure_future` and `gather` (called only when a provider
returns an awaitable, which pegboard's never do) and read `asyncio.coroutines._COROUTINE_TYPES`
(which results count as awaitables). For the same import asyncio is a stand-in: those three
import the real asyncio when first called and hand it the call, and `_COROUTINE_TYPES` is
CPython's own tuple for this version, so a provider's result is judged as before. The one
difference: without `asyncio.coroutines._is_coroutine`, `providers` marks its Coroutine providers
with `True` (its own fallback), so `asyncio.iscoroutinefunction` (deprecated) no longer says True
of such a provider; pegboard has none.

Kept on purpose (issue 18 item 3 asked whether the one composition root could do without it):
in the dev install, where the extras bring FastAPI and pydantic-settings, a process that
imports this module took 0.19-0.34 s, one that imports dependency-injector plainly 0.62-0.77 s
(load 2.9 on 2 cores; 0.58 vs 2.65 s at load 6.5, medians of 9 alternating runs). Every
`runpod-deploy run` (`--offline-dry-run` included) and `squarepeg run` would pay that.
"""

from __future__ import annotations

import collections.abc
import sys
import types
from typing import Any

_OPTIONAL_INTEGRATIONS = ("fastapi", "fast_depends", "starlette", "werkzeug", "pydantic_settings")

_hidden = [name for name in _OPTIONAL_INTEGRATIONS if name not in sys.modules]
for _name in _hidden:
    sys.modules[_name] = None  # type: ignore[assignment]  # `import name` raises ImportError
_pydantic_stand_in: types.ModuleType | None = None
if "pydantic" not in sys.modules:
    _pydantic_stand_in = types.ModuleType(
        "pydantic", "pegboard: hidden while dependency-injector loads"
    )
    _pydantic_stand_in.VERSION = "hidden"  # type: ignore[attr-defined]  # not "1.": no v1 fallback
    sys.modules["pydantic"] = _pydantic_stand_in


def _real_asyncio(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        import asyncio

        return getattr(asyncio, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


_asyncio_stand_ins: dict[str, types.ModuleType] = {}
if "asyncio" not in sys.modules:
    _asyncio = types.ModuleType("asyncio", "pegboard: hidden while dependency-injector loads")
    for _attr in ("Future", "ensure_future", "gather"):
        setattr(_asyncio, _attr, _real_asyncio(_attr))
    _coroutines = types.ModuleType("asyncio.coroutines", _asyncio.__doc__)
    # CPython's asyncio/coroutines.py: generators count until 3.12 (gh-102748)
    _coroutines._COROUTINE_TYPES = (  # type: ignore[attr-defined]
        (types.CoroutineType, types.GeneratorType, collections.abc.Coroutine)
        if sys.version_info < (3, 12)
        else (types.CoroutineType, collections.abc.Coroutine)
    )
    _asyncio.coroutines = _coroutines  # type: ignore[attr-defined]
    _asyncio_stand_ins = {"asyncio": _asyncio, "asyncio.coroutines": _coroutines}
    sys.modules.update(_asyncio_stand_ins)
try:
    from dependency_injector import containers, providers
finally:
    for _name, _stand_in in _asyncio_stand_ins.items():
        if sys.modules.get(_name) is _stand_in:
            del sys.modules[_name]
    for _name in _hidden:
        if sys.modules.get(_name, sys) is None:
            del sys.modules[_name]
    if _pydantic_stand_in is not None and sys.modules.get("pydantic") is _pydantic_stand_in:
        del sys.modules["pydantic"]

__all__ = ["containers", "providers"]
