"""`-v` for adapters that do not report their own calls: a proxy around a port that tells the
call trace (call_trace.py) about every public method call, with its duration and outcome:

    runpod-deploy: local.shell.run('true', timeout=15.0) -> exit 0 in 5 ms
    runpod-deploy: runpod.cloud.get_pod('pod-1') -> NotFound in 214 ms

Only plain values are shown, shortened: strings, numbers, tuples of them. Bytes show as their
size (a secret reaches a pod as the bytes of a file written through the shell, never in a
command line), any other object as its type (a PodRequest may carry keys). A method that
returns a generator (a log stream) is timed until it returns the generator. Composition roots
wrap a port only while the trace is on (`traced(port, name)` returns the port itself when off).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pegboard.app.shared import call_trace

T = TypeVar("T")
MAX_ARGUMENT_CHARS = 60


def traced(port: T, name: str) -> T:
    """`port` with each public method call reported as `<name>.<method>(...)`, while -v is on."""
    observer = call_trace.observer()
    if observer is None or isinstance(port, _Traced):
        return port
    return cast(T, _Traced(port, name, observer))


class _Traced:
    """Forwards attributes to the wrapped port; wraps its public methods."""

    def __init__(self, port: Any, name: str, observer: call_trace.CallObserver) -> None:
        self._port = port
        self._name = name
        self._observer = observer

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._port, attribute)
        if attribute.startswith("_") or not callable(value):
            return value
        return _timed(value, f"{self._name}.{attribute}", self._observer)

    def __repr__(self) -> str:
        return f"traced({self._port!r})"


def _timed(
    method: Callable[..., Any], label: str, observer: call_trace.CallObserver
) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        shown = [_shown(a) for a in args] + [f"{k}={_shown(v)}" for k, v in kwargs.items()]
        what = f"{label}({', '.join(shown)})"
        started = time.perf_counter()
        try:
            result = method(*args, **kwargs)
        except BaseException as exc:
            observer(what, time.perf_counter() - started, type(exc).__name__)
            raise
        observer(what, time.perf_counter() - started, _outcome(result))
        return result

    return call


def _outcome(result: Any) -> str:
    """`exit N` for a command's result, else `ok`."""
    exit_code = getattr(result, "exit_code", None)
    return f"exit {exit_code}" if isinstance(exit_code, int) else "ok"


def _shown(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, float):
        return f"{value:.1f}"
    if value is None or isinstance(value, str | int | bool):
        return _short(repr(value))
    if isinstance(value, tuple | list) and all(isinstance(v, str | int) for v in value):
        return _short(repr(value))
    if callable(value):
        return f"<{getattr(value, '__name__', type(value).__name__)}>"
    return f"<{type(value).__name__}>"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ARGUMENT_CHARS else text[: MAX_ARGUMENT_CHARS - 3] + "..."
