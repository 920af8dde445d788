"""The run's throwaway CA and server certificate (gatebench.core.tls): what they are valid for, that
a real TLS handshake trusts them through the CA alone, and that the private folder stays
private."""

from __future__ import annotations

import datetime
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key, pkcs12
from cryptography.x509.verification import PolicyBuilder, Store

from gatebench.core.errors import RenderError
from gatebench.core.tls import (
    CA_CERT,
    FILES,
    SERVER_CERT,
    SERVER_KEY,
    SERVER_P12,
    STORE_PASSWORD,
    TRUST_P12,
    GatewayTls,
    describe,
    make_run_certificates,
    openssl_ciphers,
    remove_tls_folder,
    tls_files,
    write_tls_folder,
)


@pytest.mark.parametrize(
    ("key_type", "key_class"),
    [("ecdsa-p256", ec.EllipticCurvePrivateKey), ("rsa-2048", rsa.RSAPrivateKey)],
)
def test_the_server_certificate_verifies_through_the_ca_only(
    key_type: str, key_class: type
) -> None:
    certs = make_run_certificates(key_type, ["127.0.0.1", "localhost", "gw.internal"])  # type: ignore[arg-type]
    key = load_pem_private_key(certs.server_key, password=None)
    assert isinstance(key, key_class)
    if isinstance(key, rsa.RSAPrivateKey):
        assert key.key_size == 2048
    ca = x509.load_pem_x509_certificate(certs.ca_cert)
    leaf = x509.load_pem_x509_certificate(certs.server_cert)
    store = Store([ca])
    for name in (x509.DNSName("localhost"), x509.DNSName("gw.internal")):
        chain = PolicyBuilder().store(store).build_server_verifier(name).verify(leaf, [])
        assert chain[-1] == ca
    with pytest.raises(x509.verification.VerificationError):
        PolicyBuilder().store(store).build_server_verifier(x509.DNSName("example.com")).verify(
            leaf, []
        )
    other = x509.load_pem_x509_certificate(make_run_certificates(key_type).ca_cert)  # type: ignore[arg-type]
    with pytest.raises(x509.verification.VerificationError):
        PolicyBuilder().store(Store([other])).build_server_verifier(
            x509.DNSName("localhost")
        ).verify(leaf, [])


def test_every_run_gets_new_keys() -> None:
    a, b = make_run_certificates(), make_run_certificates()
    assert a.server_key != b.server_key
    assert a.fingerprint != b.fingerprint


def test_validity_is_bounded() -> None:
    now = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    leaf = x509.load_pem_x509_certificate(make_run_certificates(now=now).server_cert)
    assert leaf.not_valid_before_utc < now < leaf.not_valid_after_utc
    assert leaf.not_valid_after_utc - now == datetime.timedelta(days=7)


def test_describe_holds_no_key_material() -> None:
    certs = make_run_certificates("rsa-2048")
    info = describe(certs)
    assert info["key"] == "rsa-2048"
    assert info["sha256"] == certs.fingerprint
    text = repr(info)
    assert "PRIVATE" not in text
    assert "BEGIN" not in text


def test_the_stores_open_with_their_password() -> None:
    files = tls_files(make_run_certificates())
    key, cert, extra = pkcs12.load_key_and_certificates(files[SERVER_P12], STORE_PASSWORD.encode())
    assert key is not None
    assert cert is not None
    assert len(extra) == 1
    trust = pkcs12.load_pkcs12(files[TRUST_P12], STORE_PASSWORD.encode())
    assert trust.key is None
    assert [c.certificate for c in trust.additional_certs] == [
        x509.load_pem_x509_certificate(files[CA_CERT])
    ]


def test_the_folder_is_private_and_removable(tmp_path: Path) -> None:
    folder = write_tls_folder(make_run_certificates(), tmp_path)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    remove_tls_folder(folder)
    assert not folder.exists()
    remove_tls_folder(folder)  # twice is fine


@pytest.mark.parametrize("key_type", ["ecdsa-p256", "rsa-2048"])
def test_a_real_handshake_with_the_settings(tmp_path: Path, key_type: str) -> None:
    """Python's OpenSSL as server with the TLS 1.2 cipher list every gateway gets, a client
    trusting the CA file alone: the handshake succeeds, over TLS 1.2 too."""
    folder = write_tls_folder(make_run_certificates(key_type), tmp_path)  # type: ignore[arg-type]
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(folder / SERVER_CERT, folder / SERVER_KEY)
    server.set_ciphers(openssl_ciphers())
    server.set_alpn_protocols(["h2", "http/1.1"])
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        client = ssl.create_default_context(cafile=str(folder / CA_CERT))
        client.maximum_version = version
        client.set_alpn_protocols(["h2"])
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        accepted: list[str | None] = []

        def serve(
            listener: socket.socket = listener, accepted: list[str | None] = accepted
        ) -> None:
            conn, _ = listener.accept()
            with server.wrap_socket(conn, server_side=True) as tls:
                accepted.append(tls.selected_alpn_protocol())

        thread = threading.Thread(target=serve)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            client.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            assert tls.version() == {"TLSv1_2": "TLSv1.2", "TLSv1_3": "TLSv1.3"}[version.name]
            assert tls.selected_alpn_protocol() == "h2"
            cipher = tls.cipher()
            assert cipher is not None
            if version == ssl.TLSVersion.TLSv1_2:
                assert cipher[0] in openssl_ciphers().split(":")
        thread.join(5)
        listener.close()
        assert accepted == ["h2"]


def test_gateway_tls_checks_its_folder() -> None:
    tls = GatewayTls(folder="/tmp/gatebench-tls-abc", http2=True)
    assert tls.path("server.crt") == "/tmp/gatebench-tls-abc/server.crt"
    assert tls.alpn == ("h2", "http/1.1")
    assert GatewayTls(folder="/x").alpn == ("http/1.1",)
    with pytest.raises(ValueError, match="not a TLS folder file"):
        tls.path("../etc/passwd")
    for bad in ("relative", "/a b", "/x/../y", "/x;rm"):
        with pytest.raises(RenderError):
            GatewayTls(folder=bad)
