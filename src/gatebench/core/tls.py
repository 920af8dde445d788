"""TLS for a run: a throwaway certificate authority and server certificate, the files every
gateway reads them from, and the one set of protocol and cipher settings they all get.

A run with ``tls:`` in its plan calls :func:`make_run_certificates` once; the CA signs one
server certificate (key type from the plan: ``ecdsa-p256`` or ``rsa-2048``) valid for the
hosts the targets listen on. :func:`write_tls_folder` writes the files into a private
temporary folder (mode 0700, outside the results folder) that the run deletes when it ends:
the private keys never reach the results, the store, the logs or the report. The run records
:func:`describe` (key type, the certificate's SHA-256 fingerprint, validity), nothing more.

Every gateway renders the same settings (:data:`PROTOCOLS`, :data:`TLS12_CIPHERS`): TLS 1.2
and 1.3, and for TLS 1.2 only ECDHE key exchange with AEAD ciphers (Mozilla's "intermediate"
list); TLS 1.3 keeps its three standard suites, which no gateway here lets one narrow
uniformly. Names are IANA's (Go, Java); :data:`OPENSSL_CIPHERS` has OpenSSL's (nginx,
HAProxy, Apache, Envoy's BoringSSL).
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gatebench.core.errors import Problem, RenderError, RunError

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

KeyType = Literal["ecdsa-p256", "rsa-2048"]
KEY_TYPES: tuple[KeyType, ...] = ("ecdsa-p256", "rsa-2048")

PROTOCOLS = ("TLSv1.2", "TLSv1.3")
"""The protocol versions every gateway accepts."""
TLS12_CIPHERS = (
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
)
"""TLS 1.2 cipher suites, IANA names, in preference order (the server's order applies)."""
TLS13_CIPHERS = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
"""TLS 1.3's standard suites: listed only where one cipher list covers both versions (Java's
JSSE, whose list would otherwise switch TLS 1.3 off)."""
CIPHER_CODES = {
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": 0xC02B,
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": 0xC02F,
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": 0xC02C,
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": 0xC030,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA9,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA8,
}
"""IANA code points of the suites (configurations that take numbers: KrakenD)."""
OPENSSL_CIPHERS = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
}

# The files of a TLS folder (one definition: renderers, the backend and the engine use these).
CA_CERT = "ca.crt"
"""The run's CA certificate (PEM): what the load engine trusts."""
SERVER_CERT = "server.crt"
"""The server certificate (PEM), followed by the CA's: the chain a gateway sends."""
SERVER_KEY = "server.key"
"""The server's private key (PEM, PKCS#8, unencrypted)."""
SERVER_PEM = "server.pem"
"""Chain and key in one PEM file (HAProxy's ``crt``)."""
SERVER_P12 = "server.p12"
"""Chain and key as a PKCS#12 key store (Tomcat: Zuul), password :data:`STORE_PASSWORD`."""
TRUST_P12 = "truststore.p12"
"""The CA certificate alone as a Java PKCS#12 trust store (Gatling)."""
STORE_PASSWORD = "gatebench"
"""The password of the PKCS#12 stores. It protects nothing: the stores live in the private
folder with the key in the clear beside them; Java needs one."""
FILES = (CA_CERT, SERVER_CERT, SERVER_KEY, SERVER_PEM, SERVER_P12, TRUST_P12)
PRIVATE_FILES = (SERVER_KEY, SERVER_PEM, SERVER_P12)
"""The files holding the private key: never copied out of the folder."""

VALIDITY = datetime.timedelta(days=7)
"""Long enough for any run (a plan's phases are bounded to a day), short enough to expire."""
DEFAULT_HOSTS = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class RunCertificates:
    """PEM bytes of one run's CA and server certificate and key (in memory only)."""

    key_type: KeyType
    ca_cert: bytes
    server_cert: bytes
    server_key: bytes
    hosts: tuple[str, ...]

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the server certificate (DER), hex: what a run records."""
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        der = x509.load_pem_x509_certificate(self.server_cert).public_bytes(Encoding.DER)
        return hashlib.sha256(der).hexdigest()


def _new_key(key_type: KeyType) -> ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if key_type == "rsa-2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError(f"unknown key type {key_type!r}; expected one of {', '.join(KEY_TYPES)}")


def _ca_name(label: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    # A name of its own per CA: a certificate from another CA is refused as from an unknown
    # issuer, not as one whose signature fails.
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gatebench"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"gatebench {label} {secrets.token_hex(4)}"),
        ]
    )


def _certificate_builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey,
    now: datetime.datetime,
    not_after: datetime.datetime,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What both certificates start with: a random serial, valid from five minutes before
    ``now``, and what the key may do (critical). A CA signs server certificates only (path
    length 0) and revocation lists; a server key signs its handshakes, and an RSA one also
    enciphers the key exchange's secret."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import rsa

    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=not ca and isinstance(key, rsa.RSAPrivateKey),
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    """A private key as unencrypted PKCS #8 PEM."""
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_ca(
    key_type: KeyType = "ecdsa-p256",
    *,
    validity: datetime.timedelta = VALIDITY,
    now: datetime.datetime | None = None,
    label: str = "run CA (throwaway)",
) -> tuple[bytes, bytes]:
    """A new certificate authority: (its private key, its self-signed certificate), PEM; the
    key of ``key_type``, the certificate valid for ``validity`` and for signing server
    certificates only (path length 0); its name ``gatebench LABEL`` and a random tag."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    now = now or datetime.datetime.now(datetime.UTC)
    ca_key = _new_key(key_type)
    name = _ca_name(label)
    ca_cert = (
        _certificate_builder(name, name, ca_key, now, now + validity, ca=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _private_pem(ca_key), ca_cert.public_bytes(serialization.Encoding.PEM)


def ca_certificate_problem(
    ca_cert: bytes, *, now: datetime.datetime | None = None, for_s: float = 0.0
) -> str | None:
    """Why ``ca_cert`` (PEM) cannot be a run's certificate authority (``is ...``), or None:
    it must parse, be a CA certificate allowed to sign certificates, and stay valid ``for_s``
    seconds from ``now``."""
    from cryptography import x509

    now = now or datetime.datetime.now(datetime.UTC)
    try:
        cert = x509.load_pem_x509_certificate(ca_cert)
    except ValueError as exc:
        return f"not a PEM certificate ({exc})"
    try:
        basic = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return "not a CA certificate (it lacks basicConstraints or keyUsage)"
    if not basic.ca or not usage.key_cert_sign:
        return "not a CA certificate (basicConstraints CA:TRUE and keyCertSign are needed)"
    if cert.not_valid_before_utc > now:
        return f"not valid before {cert.not_valid_before_utc.isoformat()}"
    until = now + datetime.timedelta(seconds=for_s)
    if cert.not_valid_after_utc < until:
        return f"valid only until {cert.not_valid_after_utc.isoformat()}, before the run can end"
    return None


def issue_server_certificate(
    ca_key: bytes,
    ca_cert: bytes,
    key_type: KeyType = "ecdsa-p256",
    hosts: Sequence[str] = DEFAULT_HOSTS,
    *,
    now: datetime.datetime | None = None,
) -> RunCertificates:
    """A new server key of ``key_type`` and a certificate for ``hosts`` (IP addresses and DNS
    names) signed by the CA (``ca_key``, ``ca_cert``: PEM), valid :data:`VALIDITY` or until
    the CA expires. :class:`~gatebench.core.errors.RunError` when the key is not the
    certificate's, or the certificate is not a usable CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = now or datetime.datetime.now(datetime.UTC)
    problem = ca_certificate_problem(ca_cert, now=now)
    if problem is not None:
        raise RunError(f"the CA certificate is {problem}")
    ca = x509.load_pem_x509_certificate(ca_cert)
    try:
        signer = serialization.load_pem_private_key(ca_key, password=None)
    except (ValueError, TypeError) as exc:
        raise RunError(f"the CA key is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(signer, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise RunError(f"the CA key is {type(signer).__name__}; expected an ECDSA or RSA key")
    public = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if signer.public_key().public_bytes(*public) != ca.public_key().public_bytes(*public):
        raise RunError("the CA key is not the CA certificate's (their public keys differ)")
    server_key = _new_key(key_type)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gatebench"),
            # A common name holds 64 characters; clients check the names below.
            x509.NameAttribute(
                NameOID.COMMON_NAME,
                hosts[0] if hosts and len(hosts[0]) <= 64 else "gatebench server",
            ),
        ]
    )
    not_after = min(now + VALIDITY, ca.not_valid_after_utc)
    server_cert = (
        _certificate_builder(subject, ca.subject, server_key, now, not_after, ca=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
            critical=False,
        )
        .sign(signer, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return RunCertificates(
        key_type=key_type,
        ca_cert=ca.public_bytes(pem),
        server_cert=server_cert.public_bytes(pem),
        server_key=_private_pem(server_key),
        hosts=tuple(hosts),
    )


def make_run_certificates(
    key_type: KeyType = "ecdsa-p256",
    hosts: Sequence[str] = DEFAULT_HOSTS,
    *,
    now: datetime.datetime | None = None,
) -> RunCertificates:
    """A new CA and a server certificate it signed, for ``hosts`` (IP addresses and DNS
    names); both keys of ``key_type``, signed with SHA-256. The CA's key is dropped: nothing
    else can be signed by it."""
    now = now or datetime.datetime.now(datetime.UTC)
    ca_key, ca_cert = make_ca(key_type, now=now)
    return issue_server_certificate(ca_key, ca_cert, key_type, hosts, now=now)


def tls_files(certs: RunCertificates) -> dict[str, bytes]:
    """Every file of a TLS folder (:data:`FILES`): name → bytes."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    chain = certs.server_cert + certs.ca_cert
    leaf = x509.load_pem_x509_certificate(certs.server_cert)
    ca = x509.load_pem_x509_certificate(certs.ca_cert)
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    key = serialization.load_pem_private_key(certs.server_key, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise TypeError(f"unexpected server key type {type(key).__name__}")
    password = STORE_PASSWORD.encode()
    keystore = pkcs12.serialize_key_and_certificates(
        b"gatebench",
        key,
        leaf,
        [ca],
        serialization.BestAvailableEncryption(password),
    )
    truststore = trust_store(certs.ca_cert)
    return {
        CA_CERT: certs.ca_cert,
        SERVER_CERT: chain,
        SERVER_KEY: certs.server_key,
        SERVER_PEM: chain + certs.server_key,
        SERVER_P12: keystore,
        TRUST_P12: truststore,
    }


def trust_store(ca_cert: bytes) -> bytes:
    """The CA certificate (PEM) alone as a Java PKCS#12 trust store (:data:`TRUST_P12`),
    password :data:`STORE_PASSWORD`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    ca = x509.load_pem_x509_certificate(ca_cert)
    return pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"gatebench-run-ca")],
        serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
    )


def write_tls_folder(certs: RunCertificates, parent: str | os.PathLike[str] | None = None) -> Path:
    """A new private folder (mode 0700; under ``parent``, else the system's temporary folder)
    holding :data:`FILES`, each mode 0600. Remove it with :func:`remove_tls_folder`."""
    folder = Path(tempfile.mkdtemp(prefix="gatebench-tls-", dir=parent))
    folder.chmod(0o700)
    for name, data in tls_files(certs).items():
        path = folder / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    return folder


def remove_tls_folder(folder: str | os.PathLike[str] | None) -> None:
    """Delete a folder made by :func:`write_tls_folder` (no error when it is gone)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def describe(certs: RunCertificates) -> dict[str, object]:
    """What a run records about its certificate: no key material."""
    from cryptography import x509

    leaf = x509.load_pem_x509_certificate(certs.server_cert)
    return {
        "key": certs.key_type,
        "sha256": certs.fingerprint,
        "hosts": list(certs.hosts),
        "not_after": leaf.not_valid_after_utc.isoformat(),
    }


@dataclass(frozen=True)
class GatewayTls:
    """TLS a gateway terminates (``RenderTarget.tls``): where the run's files are and what
    to offer. Renderers read file paths from :meth:`path` only."""

    folder: str
    """Absolute path of the TLS folder as the gateway sees it (a local private folder, or
    where the cloud path mounts it). Characters: ``A-Za-z0-9._+/-``."""
    key_type: KeyType = "ecdsa-p256"
    http2: bool = False
    """Offer ``h2`` by ALPN (else ``http/1.1`` only)."""
    resumption: bool = True
    """Session tickets and the session cache on (else off, where the gateway can)."""

    def __post_init__(self) -> None:
        import re

        if not re.fullmatch(r"/[A-Za-z0-9._+/-]*", self.folder) or "/../" in self.folder + "/":
            raise RenderError(
                [
                    Problem(
                        "",
                        "the TLS folder must be an absolute path of A-Za-z0-9._+/- characters; "
                        f"got {self.folder!r}",
                    )
                ]
            )
        if self.key_type not in KEY_TYPES:
            raise RenderError([Problem("", f"unknown TLS key type {self.key_type!r}")])

    def path(self, name: str) -> str:
        """The absolute path of one of :data:`FILES`."""
        if name not in FILES:
            raise ValueError(f"{name!r} is not a TLS folder file")
        return f"{self.folder.rstrip('/')}/{name}"

    @property
    def alpn(self) -> tuple[str, ...]:
        return ("h2", "http/1.1") if self.http2 else ("http/1.1",)


def openssl_ciphers(separator: str = ":") -> str:
    """:data:`TLS12_CIPHERS` in OpenSSL's names, joined."""
    return separator.join(OPENSSL_CIPHERS[name] for name in TLS12_CIPHERS)


__all__ = [
    "CA_CERT",
    "CIPHER_CODES",
    "DEFAULT_HOSTS",
    "FILES",
    "KEY_TYPES",
    "OPENSSL_CIPHERS",
    "PRIVATE_FILES",
    "PROTOCOLS",
    "SERVER_CERT",
    "SERVER_KEY",
    "SERVER_P12",
    "SERVER_PEM",
    "STORE_PASSWORD",
    "TLS12_CIPHERS",
    "TLS13_CIPHERS",
    "TRUST_P12",
    "VALIDITY",
    "GatewayTls",
    "KeyType",
    "RunCertificates",
    "ca_certificate_problem",
    "describe",
    "issue_server_certificate",
    "make_ca",
    "make_run_certificates",
    "openssl_ciphers",
    "remove_tls_folder",
    "tls_files",
    "trust_store",
    "write_tls_folder",
]
