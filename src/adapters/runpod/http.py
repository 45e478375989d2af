"""RunPodHttp: the RunPod adapter's own thin HTTP client, on the standard library's http.client.

Why our own client and not the `runpod` SDK: docs/runpod-api-client.md (figures: the SDK 1.12
speaks GraphQL only and costs ~1.5-2 s to import; the SDK 2.0 release candidate pulls ~100
packages, has no Retry-After handling, and keeps its key in a module global).

What every request gets here:
- a timeout on the connect and on every read (`timeout_sec`);
- the key as a bearer token (RunPod's `bearerAuth` scheme, api-reference-v2/openapi.json);
- 429: a wait for `Retry-After` (integer seconds on this API, per the createPod sample in
  openapi.json), said in one line, when it is within `max_retry_after_sec`; then the same request
  again, at most `attempts` times;
- 5xx and transport failures: bounded retries with exponential backoff, for requests that are
  safe to repeat (`retry=True`); a create is sent once (the caller looks the pod up by name);
- one keep-alive connection, reused; an idempotent request that fails on a reused connection
  before any answer is sent once more on a fresh one (the server may have closed it idle);
- HTTPS through the proxy named by https_proxy/HTTPS_PROXY (CONNECT), unless no_proxy says not.

The answer is the parsed JSON body; an error status becomes a PortError (problems.py).
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from pegboard.domain.errors import PortError, Transient, Unreachable

from .problems import error_for_status

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.runpod.io"
DEFAULT_TIMEOUT_SEC = 30.0
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF_SEC = 0.5
MAX_BACKOFF_SEC = 8.0
DEFAULT_MAX_RETRY_AFTER_SEC = 60.0
_MAX_BODY = 16 << 20  # a pod list of thousands of pods is a few MB
USER_AGENT = "pegboard-runpod/2"


class RateLimited(Transient):
    """HTTP 429 beyond what we wait for (attempts spent, or Retry-After too long)."""


class NotSent(Unreachable):
    """The request never reached the server (connect failed): nothing can have happened."""


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Retry-After as seconds: an integer (RunPod's form) or an HTTP-date (RFC 9110 §10.2.3)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    import email.utils  # only for the rare HTTP-date form

    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class RunPodHttp:
    """HTTP/1.1 to one RunPod API base URL with one key; not thread-safe (one per adapter)."""

    def __init__(
        self,
        base_url: str,
        api_key: Callable[[], str],
        *,
        timeout_sec: float = DEFAULT_TIMEOUT_SEC,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_sec: float = DEFAULT_BACKOFF_SEC,
        max_retry_after_sec: float = DEFAULT_MAX_RETRY_AFTER_SEC,
        sleep: Callable[[float], None] = time.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url.rstrip("/"))
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise PortError(f"RUNPOD_API_BASE_URL {base_url!r} is not an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self._prefix = parsed.path.rstrip("/")
        self._api_key = api_key
        self.timeout_sec = timeout_sec
        self.attempts = max(1, attempts)
        self.backoff_sec = backoff_sec
        self.max_retry_after_sec = max_retry_after_sec
        self._sleep = sleep
        self._proxy = _proxy_for(self._scheme, self._host, environ)
        self._connection: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # --- the one entry point ----------------------------------------------------------------
    def request(
        self,
        what: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        retry: bool = True,
    ) -> Any:
        """The parsed JSON answer (None for 204 or an empty body); a PortError naming `what`.

        `retry=False` (a create): a 5xx or a transport failure after the request left is
        raised at once as Transient (the outcome is unknown); a 429 is still waited for, since
        RunPod did not act on a throttled request.
        """
        target = self._prefix + path
        if params:
            target += "?" + urllib.parse.urlencode(params)
        payload = None if body is None else json.dumps(body).encode()
        delay = self.backoff_sec
        for attempt in range(1, self.attempts + 1):
            last = attempt == self.attempts
            try:
                status, headers, raw = self._exchange(method, target, payload, fresh=not retry)
            except Transient:
                if not retry or last:
                    raise
            else:
                if status == 429:
                    wait = retry_after_seconds(headers.get("retry-after"))
                    wait = delay if wait is None else wait
                    if last or wait > self.max_retry_after_sec:
                        raise RateLimited(
                            f"{what}: RunPod rate limit (HTTP 429, Retry-After "
                            f"{headers.get('retry-after') or 'not given'}); try again later",
                            status=429,
                        )
                    logger.warning(
                        "[runpod] %s: rate limited (HTTP 429); waiting %.0f s as Retry-After says",
                        what,
                        wait,
                    )
                    self._sleep(wait)
                    continue
                answer = _decoded(raw, headers)
                if 200 <= status < 300:
                    if raw and answer is _NOT_JSON:
                        raise Transient(
                            f"{what}: RunPod answered HTTP {status} with a non-JSON body"
                        )
                    return None if answer is _NOT_JSON else answer
                error = error_for_status(status, answer if isinstance(answer, dict) else None, what)
                if not (isinstance(error, Transient) and retry and not last):
                    raise error
            self._sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_SEC)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- one exchange -----------------------------------------------------------------------
    def _exchange(
        self, method: str, target: str, payload: bytes | None, *, fresh: bool
    ) -> tuple[int, dict[str, str], bytes]:
        reused = self._connection is not None and not fresh
        if fresh:
            self.close()
        try:
            return self._send(method, target, payload)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.close()
            if not reused or method not in {"GET", "PUT", "DELETE"}:
                raise Transient(
                    f"{method} {target}: the RunPod API closed the connection"
                ) from None
        return self._send(method, target, payload)  # once more, on a fresh connection

    def _send(
        self, method: str, target: str, payload: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = self._connection or self._connect()
        headers = {
            "Authorization": f"Bearer {self._api_key()}",
            "Accept": "application/json, application/problem+json",
            "User-Agent": USER_AGENT,
        }
        if payload is not None:
            headers["Content-Type"] = "application/json"
        url = target if self._proxy is None or self._scheme == "https" else self.base_url + target
        try:
            connection.request(method, url, body=payload, headers=headers)
        except (ConnectionRefusedError, socket.gaierror, ConnectionAbortedError) as exc:
            self.close()
            raise NotSent(f"cannot reach the RunPod API at {self.base_url} ({exc})") from None
        except TimeoutError:
            self.close()
            raise NotSent(
                f"cannot reach the RunPod API at {self.base_url} (connect timed out)"
            ) from None
        except OSError as exc:
            if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                raise
            self.close()
            raise NotSent(f"cannot reach the RunPod API at {self.base_url} ({exc})") from None
        try:
            response = connection.getresponse()
            raw = response.read(_MAX_BODY + 1)
        except http.client.RemoteDisconnected:
            raise
        except TimeoutError:
            self.close()
            raise Transient(
                f"{method} {target}: the RunPod API did not answer within {self.timeout_sec:g} s"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                raise
            raise Transient(
                f"{method} {target}: connection to the RunPod API failed ({exc})"
            ) from None
        if len(raw) > _MAX_BODY:
            self.close()
            raise Transient(f"{method} {target}: the RunPod API answer is over {_MAX_BODY} bytes")
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
        if response.will_close:
            self.close()
        else:
            self._connection = connection
        return response.status, answer_headers, raw

    def _connect(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection
        if self._proxy is not None:
            host, port = self._proxy
            if self._scheme == "https":
                connection = http.client.HTTPSConnection(host, port, timeout=self.timeout_sec)
                connection.set_tunnel(self._host, self._port)
            else:
                connection = http.client.HTTPConnection(host, port, timeout=self.timeout_sec)
        elif self._scheme == "https":
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout_sec
            )
        else:
            connection = http.client.HTTPConnection(
                self._host, self._port, timeout=self.timeout_sec
            )
        self._connection = connection
        return connection


_NOT_JSON: Any = object()


def _decoded(raw: bytes, headers: Mapping[str, str]) -> Any:
    if not raw:
        return _NOT_JSON
    try:
        return json.loads(raw)
    except ValueError:
        return _NOT_JSON


def _proxy_for(scheme: str, host: str, environ: Mapping[str, str] | None) -> tuple[str, int] | None:
    """The (host, port) of the proxy the environment names for `scheme`, if `host` needs one."""
    env = {k.lower(): v for k, v in (environ or {}).items()}
    proxy = env.get(f"{scheme}_proxy")
    if not proxy:
        return None
    no_proxy = env.get("no_proxy", "")
    if no_proxy and _bypassed(host, no_proxy):
        return None
    parsed = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if not parsed.hostname:
        return None
    return parsed.hostname, parsed.port or 80


def _bypassed(host: str, no_proxy: str) -> bool:
    """no_proxy as curl and requests read it: `*`, or hosts and domain suffixes, comma-separated."""
    host = host.lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        entry = entry.split(":", 1)[0] if entry.count(":") == 1 else entry
        if entry == "*" or (
            entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))
        ):
            return True
    return False
