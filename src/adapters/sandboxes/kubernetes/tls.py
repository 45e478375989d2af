"""TLS for the loopback API: a CA made on start, and a server certificate for 127.0.0.1 it signs.

client-go (kubectl) never sends a bearer token over plain HTTP, so the sandbox serves HTTPS and
writes its CA into the kubeconfig as `certificate-authority-data`. Keys are ECDSA P-256, made
fresh for every sandbox and never reused; the CA signs one certificate and is then forgotten.

The `cryptography` package is not a new dependency: paramiko, which pegboard requires, requires
it. (The `openssl` CLI would do the same in three subprocesses and is not on every machine.)
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LoopbackTls:
    """The CA certificate clients trust, and the server's certificate and key files."""

    ca_pem: bytes
    cert_path: Path
    key_path: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_path, self.key_path)
        # HTTP/1.1 only: Go clients would otherwise try HTTP/2, which this server does not speak.
        context.set_alpn_protocols(["http/1.1"])
        prefer_go_cipher_suites(context)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A context that trusts this sandbox's CA only (for raw HTTPS requests in tests)."""
        return ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))


# The suites the apiserver (Go's crypto/tls) picks, in its order: src/crypto/tls/defaults.go
# (cipher_suites.go before Go 1.22), defaultCipherSuitesTLS13 and, for TLS 1.2, the AEAD head of
# cipherSuitesPreferenceOrder (ECDSA only: the sandbox's key is ECDSA). handshake_server_tls13.go,
# processClientHello, takes them in the server's order, AES-GCM first on hardware with AES-GCM
# support unless the client lists ChaCha20 first (aesgcmPreferred): OpenSSL's server preference
# with OP_PRIORITIZE_CHACHA is that rule. OpenSSL's own TLS 1.3 order puts AES-256-GCM first, and
# its TLS 1.2 one too (Python's server contexts already prefer the server's order).
GO_TLS13_SUITES = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
GO_TLS12_SUITES = (
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"
)
_OP_PRIORITIZE_CHACHA = 1 << 21  # SSL_OP_PRIORITIZE_CHACHA (OpenSSL >= 1.1.1); not in ssl.Options


def prefer_go_cipher_suites(context: ssl.SSLContext) -> bool:
    """Make a server context choose cipher suites as Go's crypto/tls does (above). False when
    the TLS 1.3 order could not be set (then OpenSSL's own order, AES-256-GCM first, stays)."""
    context.set_ciphers(GO_TLS12_SUITES)
    context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE | ssl.Options(_OP_PRIORITIZE_CHACHA)
    return _set_tls13_suites(context, GO_TLS13_SUITES)


def _set_tls13_suites(context: ssl.SSLContext, suites: str) -> bool:
    """SSL_CTX_set_ciphersuites on the context's own SSL_CTX: the ssl module sets TLS 1.3 suites
    nowhere (set_ciphers covers TLS <= 1.2 only). CPython keeps the SSL_CTX pointer right after
    the object header (Modules/_ssl.c, PySSLContext); the functions are looked up through the
    _ssl module itself, so they are those of the libssl it uses, and the pointer must read back
    the context's own options before anything is set through it."""
    import sys

    if sys.implementation.name != "cpython":
        return False
    try:
        import _ssl
        import ctypes

        library = ctypes.CDLL(getattr(_ssl, "__file__", None))
        get_options, set_suites = library.SSL_CTX_get_options, library.SSL_CTX_set_ciphersuites
    except (OSError, AttributeError):  # a static build or an older OpenSSL
        return False
    get_options.argtypes, get_options.restype = [ctypes.c_void_p], ctypes.c_uint64
    set_suites.argtypes, set_suites.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_int
    pointer = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
    if not pointer or get_options(pointer) != int(context.options):
        return False
    return bool(set_suites(pointer, suites.encode("ascii")))


def make_loopback_tls(directory: Path, *, days: int = 30) -> LoopbackTls:
    """Generate a CA and a 127.0.0.1/localhost server certificate; key file mode 0600."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pegboard-sandbox-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.DNSName("localhost"),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_bytes)
    return LoopbackTls(ca_cert.public_bytes(serialization.Encoding.PEM), cert_path, key_path)
