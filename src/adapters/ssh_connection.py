"""SshConnection: the one SSH connection of a run, shared by every command, probe and follow.

One TCP connection (TCP_NODELAY, kernel and SSH keepalives), one paramiko Transport; each
command, probe, telemetry sample, log follow and the SFTP session is a channel of it, so a run
pays one handshake (sshd's log shows one "Accepted publickey" line a run). The host key is
checked against the pod's pin (PinnedHostKeys) before we authenticate.

`warm_up()` starts the dial (paramiko's import, TCP, key exchange, the host key check against
the pin, authentication) and the SFTP session on a daemon thread, so a run pays for them while
it still loads and checks its job: the first `connect()` waits for that dial and raises its
error, the very one a dial of its own would have raised; a host key seen for the first time is
pinned then, by the caller's thread (a run that stops before it uses the connection leaves no
pin). `close()` abandons a dial still under way: its thread closes what it opened.

When the connection drops, `reconnect()` dials again with bounded exponential backoff (the
same host key is required); callers decide what is safe to repeat (see SshShell). Auth refused
and a changed host key are not retried.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.adapters.ssh_errors import describe_error, describe_target, map_connect_error
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_keys import load_keys
from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import PortError, Transient, Unauthorized


class SftpUnavailable(PortError):
    """The host's sftp subsystem does not speak SFTP (a ForceCommand wrapper, no sftp-server);
    retrying cannot help, the shell still works."""


if TYPE_CHECKING:  # paramiko costs ~0.1 s to import: only a real connection loads it
    from paramiko.channel import Channel
    from paramiko.pkey import PKey
    from paramiko.sftp_client import SFTPClient
    from paramiko.transport import Transport

logger = logging.getLogger(__name__)

KEEPALIVE_SEC = 15  # SSH-level keepalive: keeps NAT state and lets the kernel see a dead peer


@attrs.frozen
class SshTarget:
    """Where to connect and as whom. `pod` names the machine in messages."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    host: str
    port: int = 22
    user: str = "root"
    key_path: str | None = None
    use_agent: bool = False
    pod: str = ""

    def __str__(self) -> str:
        return describe_target(self.user, self.host, self.port)


@attrs.frozen
class Backoff:
    """Reconnect schedule: delays double from `first` up to `cap`, for at most `budget` s."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    first: float = 0.1
    cap: float = 5.0
    budget: float = 120.0

    def delays(self) -> list[float]:
        out: list[float] = []
        delay, total = self.first, 0.0
        while total + delay <= self.budget:
            out.append(delay)
            total += delay
            delay = min(delay * 2, self.cap)
        return out


DEFAULT_BACKOFF = Backoff()


class SshConnection:
    """One authenticated transport to one pod, reopened on demand after a drop."""

    def __init__(
        self,
        target: SshTarget,
        *,
        pins: PinnedHostKeys,
        connect_timeout: float = 10.0,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.target = target
        self.pins = pins
        self.connect_timeout = connect_timeout
        self._backoff = backoff
        self._sleep = sleep
        self._lock = threading.RLock()
        self._transport: Transport | None = None
        self._sftp: SFTPClient | None = None
        # Why SFTP does not work on this host (None: it does, or was not tried yet).
        self.sftp_unavailable: str | None = None
        self._keys: list[PKey] | None = None
        self._closed = False
        # Held around each SFTP operation: the one SFTPClient is shared by every thread (the
        # monitor, telemetry), and its synchronous calls must not interleave.
        self.sftp_lock = threading.RLock()
        self.connections_made = 0  # handshakes so far (1 per run unless the network dropped)
        self._early: _EarlyDial | None = None  # warm_up's dial, until connect() takes it
        self._early_sftp: _EarlyDial | None = None  # the SFTP session it opens beside

    def warm_up(self, *, sftp: bool = True) -> None:
        """Start dialling (and, with `sftp`, opening the SFTP session) in the background;
        a no-op once a transport exists or a dial is under way."""
        with self._lock:
            if self._closed or self._early is not None or self.alive:
                return
            self._early = self._prestarted(sftp=sftp) or _EarlyDial(self, sftp=sftp)

    def _prestarted(self, *, sftp: bool) -> _EarlyDial | None:
        """prestart's dial of this very target and timeout, taken as this connection's early
        dial while no pin is on file for the host (the dial checked no pin before logging in):
        with a pin, or another SFTP wish, it is closed and this connection dials itself."""
        early = _take_prestarted(self.target, self.connect_timeout)
        if early is None:
            return None
        try:
            unpinned = self.pins.pinned(self.target.host, self.target.port) is None
        except Exception:  # an unreadable pin file: the connection's own dial says so
            unpinned = False
        if unpinned and early.wants_sftp == sftp:
            return early
        early.abandon()
        return None

    # --- the transport -------------------------------------------------------------------

    def connect(self) -> Transport:
        """The live transport, dialling once if there is none (no retries: see reconnect)."""
        with self._lock:
            if self._closed:
                raise PortError(f"ssh to {self.target}: the connection is closed")
            if self._transport is not None and self._transport.is_active():
                return self._transport
            self._drop()
            early, self._early = self._early, None
            transport = self._take(early) if early is not None else None
            if transport is None:
                transport = self._dial()
            self._transport = transport
            self.connections_made += 1
            return transport

    def _take(self, early: _EarlyDial) -> Transport | None:
        """The early dial's transport, its host key pinned now if this is the first contact;
        None if it died meanwhile (the caller dials again). Raises the dial's error."""
        try:
            transport = early.transport_or_raise()
        except BaseException:
            early.abandon()  # Ctrl-C while waiting: its thread closes what it makes
            raise
        if not transport.is_active():
            transport.close()
            return None
        try:
            self.pins.check_or_learn(
                self.target.host, self.target.port, transport.get_remote_server_key()
            )
        except BaseException:
            transport.close()
            raise
        self._early_sftp = early if early.wants_sftp else None
        return transport

    @property
    def alive(self) -> bool:
        transport = self._transport
        return transport is not None and transport.is_active()

    def reconnect(self, *, after: Transport | None = None) -> Transport:
        """Dial again with bounded backoff; a no-op if someone already replaced `after`."""
        with self._lock:
            current = self._transport
            if current is not None and current is not after and current.is_active():
                return current
            self._drop()
            last: PortError | None = None
            for delay in [0.0, *self._backoff.delays()]:
                if delay:
                    self._sleep(delay)
                try:
                    transport = self.connect()
                except PortError as exc:
                    if not isinstance(exc, Transient):
                        raise  # refused key, changed host key: retrying cannot help
                    last = exc
                    continue
                logger.info("ssh to %s: reconnected", self.target)
                return transport
            assert last is not None
            raise last

    def open_session(self) -> tuple[Transport, Channel]:
        """A new session channel on the live transport (one reconnect if it is dead)."""
        transport = self.connect()
        try:
            return transport, transport.open_session(timeout=self.connect_timeout)
        except Exception as exc:  # any failure here means the transport broke
            logger.info("ssh to %s: cannot open a channel (%s); reconnecting", self.target, exc)
        transport = self.reconnect(after=transport)
        try:
            return transport, transport.open_session(timeout=self.connect_timeout)
        except Exception as exc:
            raise map_connect_error(
                exc, target=str(self.target), timeout=self.connect_timeout
            ) from None

    def sftp(self) -> SFTPClient:
        """The SFTP session (a channel of the same transport), reopened after a reconnect.

        Raises SftpUnavailable, at once and for the rest of the connection's life, when the
        host answers the sftp subsystem with anything but SFTP while its shell works."""
        with self._lock:
            if self.sftp_unavailable is not None:
                raise SftpUnavailable(self.sftp_unavailable)
            transport = self.connect()
            # Only now: an early dial may still be importing paramiko until connect() returns.
            from paramiko.sftp_client import SFTPClient

            if self._sftp is None or self._sftp.get_channel() is None or self._sftp_dead():
                early, self._early_sftp = self._early_sftp, None
                try:
                    client = None
                    if early is not None and early.transport is transport:
                        client = early.sftp_or_raise()  # opened beside the first commands
                    if client is None or client.get_channel() is None:
                        client = SFTPClient.from_transport(transport)
                except Exception as exc:  # SSHException "EOF during negotiation", EOFError
                    if not transport.is_active():
                        raise map_connect_error(
                            exc, target=str(self.target), timeout=self.connect_timeout
                        ) from None
                    self.sftp_unavailable = (
                        f"ssh to {self.target}: SFTP does not work on this host "
                        f"({describe_error(exc)}): a ForceCommand wrapper that does not run the "
                        "sftp subsystem, or no sftp-server (fix: let the wrapper run "
                        '"$SSH_ORIGINAL_COMMAND", or install openssh-sftp-server / set '
                        "Subsystem sftp internal-sftp)"
                    )
                    logger.warning(
                        "%s; small files go over the shell instead", self.sftp_unavailable
                    )
                    raise SftpUnavailable(self.sftp_unavailable) from None
                if client is None:
                    raise Transient(f"ssh to {self.target}: cannot open an SFTP session")
                self._sftp = client
            return self._sftp

    def close(self) -> None:
        with self._lock:
            self._closed = True
            early, self._early, self._early_sftp = self._early, None, None
            if early is not None:
                early.abandon()
            self._drop()

    # --- internals -----------------------------------------------------------------------

    def _sftp_dead(self) -> bool:
        assert self._sftp is not None
        channel = self._sftp.get_channel()
        return channel is None or channel.closed or channel.get_transport() is not self._transport

    def _drop(self) -> None:
        if self._sftp is not None:
            try:
                self._sftp.close()
            except Exception:  # closing a broken session
                pass
            self._sftp = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def _dial(self, *, pin: bool = True) -> Transport:
        """Connect and authenticate. pin=False (the early dial): the host key is checked
        against the pin before authenticating, but a first contact's key is not written
        (connect() pins it when it takes the transport)."""
        load_paramiko()
        host, port, timeout = self.target.host, self.target.port, self.connect_timeout
        target = str(self.target)
        transport: Transport | None = None
        try:
            transport = _key_exchange(host, port, timeout, self.pins.key_types)
            offered = transport.get_remote_server_key()
            # Before any credential is offered: an impostor learns nothing.
            if pin:
                self.pins.check_or_learn(host, port, offered)
            else:
                self.pins.check(host, port, offered)
            self._authenticate(transport)
            transport.set_keepalive(KEEPALIVE_SEC)
            return transport
        except BaseException as exc:
            if transport is not None:
                transport.close()
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            error = map_connect_error(exc, target=target, timeout=timeout)
            if key_types_mismatch(exc):
                error = self._key_type_changed()
            raise error from None

    def _key_type_changed(self) -> PortError:
        from pegboard.domain.ports.remote_shell import HostKeyRejected

        pinned = self.pins.pinned(self.target.host, self.target.port)
        kind = pinned.get_name() if pinned is not None else "?"
        return HostKeyRejected(
            f"host key of pod {self.pins.pod} ({self.target.host}:{self.target.port}) changed: "
            f"the pinned {kind} key is no longer offered; refusing to connect (if the machine "
            f"was really reinstalled, delete {self.pins.path})"
        )

    def _authenticate(self, transport: Transport) -> None:
        import paramiko

        target = str(self.target)
        keys = self._load_keys()
        if not keys:
            raise Unauthorized(
                f"ssh to {target}: no key to offer (set ssh.key_path, or ssh.use_agent: true "
                "with keys in the agent)"
            )
        for key in keys:
            try:
                transport.auth_publickey(self.target.user, key)
            except paramiko.AuthenticationException:
                continue
            if transport.is_authenticated():
                return
        raise Unauthorized(
            f"ssh to {target}: authentication refused for "
            + (f"key {self.target.key_path}" if self.target.key_path else "the agent's keys")
        )

    def _load_keys(self) -> list[PKey]:
        if self._keys is None:
            self._keys = load_keys(
                self.target.key_path, use_agent=self.target.use_agent, target=str(self.target)
            )
        return self._keys


class _BackgroundTransport:
    """A transport made on a daemon thread (`_make`), then `_after` on that thread. The caller
    waits for it (transport_or_raise) and gets its error as it was raised. Abandoned (the
    connection was closed first, or the caller was interrupted): the thread closes the
    transport it made, now or when it is made. Subclasses set their own fields first."""

    def __init__(self, name: str) -> None:
        self.transport: Transport | None = None
        self._error: BaseException | None = None
        self._dialled = threading.Event()
        self._lock = threading.Lock()
        self._abandoned = False
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _make(self) -> Transport:
        raise NotImplementedError

    def _after(self, transport: Transport | None) -> None:
        """On the thread, once the caller may have the transport (None: failed or abandoned)."""

    def _run(self) -> None:
        try:
            transport = self._make()
        except BaseException as exc:  # handed to the caller's thread as it is
            self._error = exc
            self._dialled.set()
            self._after(None)
            return
        with self._lock:
            abandoned = self._abandoned
            if not abandoned:
                self.transport = transport
        self._dialled.set()
        if abandoned:
            transport.close()
        self._after(None if abandoned else transport)

    def transport_or_raise(self) -> Transport:
        self._dialled.wait()
        if self._error is not None:
            raise self._error
        assert self.transport is not None
        return self.transport

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            transport, self.transport = self.transport, None
        if transport is not None:
            transport.close()


class _EarlyDial(_BackgroundTransport):
    """SshConnection.warm_up's dial on a daemon thread, then the SFTP session beside it.

    The caller waits for the transport (transport_or_raise) and, separately, for the SFTP
    session (sftp_or_raise), so its first commands run while SFTP is still being opened."""

    def __init__(self, connection: SshConnection, *, sftp: bool) -> None:
        self.wants_sftp = sftp
        self._connection = connection
        self._sftp: SFTPClient | None = None
        self._sftp_error: Exception | None = None
        self._sftp_done = threading.Event()
        super().__init__("pegboard-ssh-dial")

    def _make(self) -> Transport:
        return self._connection._dial(pin=False)

    def _after(self, transport: Transport | None) -> None:
        if transport is not None and self.wants_sftp:
            from paramiko.sftp_client import SFTPClient

            try:
                self._sftp = SFTPClient.from_transport(transport)
            except Exception as exc:  # sftp() handles it as if it had failed there
                self._sftp_error = exc
        self._sftp_done.set()

    def sftp_or_raise(self) -> SFTPClient | None:
        self._sftp_done.wait()
        if self._sftp_error is not None:
            raise self._sftp_error
        return self._sftp


def _key_exchange(
    host: str, port: int, timeout: float, key_types: Callable[[str, int], list[str] | None]
) -> Transport:
    """TCP to host:port and the SSH key exchange, nothing authenticated yet; `key_types` (of
    host, port) restricts the host key algorithms. Raises what socket and paramiko raise."""
    from paramiko.transport import Transport

    # paramiko logs a dropped socket from its reader thread at ERROR; we report drops
    # ourselves, as one line, where they matter.
    logging.getLogger("paramiko.transport").setLevel(logging.CRITICAL)
    sock = socket.create_connection((host, port), timeout=timeout)
    transport: Transport | None = None
    try:
        _tune_socket(sock)
        transport = Transport(sock)
        transport.banner_timeout = timeout
        transport.auth_timeout = timeout
        restricted = key_types(host, port)
        if restricted:
            transport.get_security_options().key_types = restricted
        transport.start_client(timeout=timeout)
        return transport
    except BaseException:
        if transport is not None:
            transport.close()
        else:
            sock.close()
        raise


def prestart(target: SshTarget, timeout: float) -> None:
    """Begin the whole dial to `target` (TCP, key exchange, login, then the SFTP session) on a
    daemon thread, before the SshConnection that will use it exists: a run's config names its
    machine long before the run has loaded. The first connection to this very target with
    this connect timeout that warms up while no pin is on file for the host takes it as its
    own background dial (warm_up): its first use pins the host key, its errors are the ones its
    own dial raises. A run's pin file is its own, new one, so the pin such a dial checks before
    logging in is never there; with a pin on file the prestarted dial is closed unused. Nothing
    is written here: a run that stops before it dials leaves at most a login closed at exit (or
    by discard_prestarted). paramiko is imported on the calling thread."""
    load_paramiko()
    key = (target, timeout)
    with _PRESTARTED_LOCK:
        if key not in _PRESTARTED:
            first_contact = _FirstContact(Path(os.devnull), pod=target.pod or target.host)
            dialler = SshConnection(target, pins=first_contact, connect_timeout=timeout)
            _PRESTARTED[key] = _EarlyDial(dialler, sftp=True)


def discard_prestarted() -> None:
    """Close every prestarted dial no connection took."""
    with _PRESTARTED_LOCK:
        dials = list(_PRESTARTED.values())
        _PRESTARTED.clear()
    for dial in dials:
        dial.abandon()


def _take_prestarted(target: SshTarget, timeout: float) -> _EarlyDial | None:
    with _PRESTARTED_LOCK:
        return _PRESTARTED.pop((target, timeout), None)


class _FirstContact(PinnedHostKeys):
    """The pins of a prestarted dial: none (the connection that takes it checks its own)."""

    def pinned(self, host: str, port: int) -> PKey | None:
        return None


_PRESTARTED: dict[tuple[SshTarget, float], _EarlyDial] = {}
_PRESTARTED_LOCK = threading.Lock()


def load_paramiko() -> None:
    """Import paramiko without `invoke`, which its `config` module imports only to run the
    `Match exec` lines of ssh config files; pegboard never reads one (rsync's ssh runs with
    `-F /dev/null`). Saves ~20 ms of every run. Hidden for this import only: a program that
    imports invoke later gets it as usual.

    paramiko's `__init__` also asks importlib.metadata for its own version, which imports
    importlib.metadata and the email parser and scans every sys.path directory for
    distributions (~20-30 ms in a venv with many packages). For that import it gets
    _OwnVersionMetadata: paramiko's version from the one `paramiko-VERSION.dist-info` directory
    beside the package (the name importlib.metadata reads too), every other question answered
    by the real module. Without exactly one such directory the real module is used."""
    with _PARAMIKO_IMPORT:  # an early dial's thread and the caller's may both get here
        _load_paramiko()


_PARAMIKO_IMPORT = threading.Lock()


def _load_paramiko() -> None:
    if "paramiko" in sys.modules:
        return
    stand_ins: dict[str, types.ModuleType | None] = {}
    if "invoke" not in sys.modules:
        stand_ins["invoke"] = None  # `import invoke` -> ImportError
    version = _installed_version("paramiko")
    if version is not None and "importlib.metadata" not in sys.modules:
        stand_ins["importlib.metadata"] = _OwnVersionMetadata("paramiko", version)
    sys.modules.update(stand_ins)  # type: ignore[arg-type]  # None: the import fails
    try:
        import paramiko  # noqa: F401
    finally:
        for name, stand_in in stand_ins.items():
            if name in sys.modules and sys.modules[name] is stand_in:
                del sys.modules[name]


def _installed_version(distribution: str) -> str | None:
    """The version in the name of the one `NAME-VERSION.dist-info` beside the package."""
    for entry in sys.path:
        base = Path(entry or ".")
        if (base / distribution / "__init__.py").is_file():
            found = list(base.glob(f"{distribution}-*.dist-info"))
            if len(found) != 1:
                return None
            return found[0].name[len(distribution) + 1 : -len(".dist-info")]
    return None


class _OwnVersionMetadata(types.ModuleType):
    """importlib.metadata while one distribution loads: its own version answered from its
    dist-info directory's name; anything else (another distribution's version, any other
    name) from the real module, imported at that moment. The loaded package keeps this object
    as its `metadata`, so later calls through it reach the real module too."""

    def __init__(self, distribution: str, version: str) -> None:
        super().__init__("importlib.metadata", "pegboard: one version known, the rest real")
        self._distribution = distribution
        self._version = version

    def version(self, name: str) -> str:
        if name == self._distribution:
            return self._version
        return str(self._real().version(name))

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(self._real(), attribute)

    def _real(self) -> types.ModuleType:
        if sys.modules.get("importlib.metadata") is self:
            del sys.modules["importlib.metadata"]  # the real module takes its place from now on
        return importlib.import_module("importlib.metadata")


def key_types_mismatch(exc: BaseException) -> bool:
    """Whether the handshake failed because the pinned host key type is no longer offered."""
    return "(no acceptable host key)" in str(exc)  # paramiko: "Incompatible ssh peer/server"


def _tune_socket(sock: socket.socket) -> None:
    """No Nagle (each exec costs ~40 ms more without it) and kernel keepalive on the socket."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 15), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 4)):
        option = getattr(socket, name, None)
        if option is not None:
            sock.setsockopt(socket.IPPROTO_TCP, option, value)
    sock.settimeout(None)
