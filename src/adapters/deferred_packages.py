"""A package entered with its `__init__` deferred: its submodules import as usual, and the first
access to anything else on the package runs the real `__init__` into the same module object
(PEP 562 `__getattr__`), so code that uses the package whole still works.

For libraries whose `__init__` loads much more than a command uses (the kubernetes client's
config/dynamic/stream/watch, PyYAML's loading half when only dumping): see kubernetes_imports.py
and yaml_dump.py.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

_lock = threading.RLock()


def enter_deferred(name: str) -> None:
    """Put package `name` in sys.modules without running its `__init__` (once; no-op if it is
    already imported)."""
    with _lock:
        if name in sys.modules:
            return
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            raise ImportError(f"No module named {name!r}", name=name)
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader

        def complete(attribute: str) -> Any:
            # First use of something the deferred `__init__` would have defined: run it now.
            with _lock:
                if "__getattr__" in module.__dict__:
                    del module.__dict__["__getattr__"]
                    loader.exec_module(module)
            try:
                return module.__dict__[attribute]
            except KeyError:
                raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

        module.__dict__["__getattr__"] = complete
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
