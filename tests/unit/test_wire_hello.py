"""parse_server_hello on server flights built byte by byte: new or resumed, TLS 1.3 and 1.2.
The integration test (tests/integration/test_wire.py) watches a real gateway; these pin the
cases a real gateway shows only now and then."""

from __future__ import annotations

from gatebench.local._wire import _HRR_RANDOM, parse_server_hello


def _record(kind: int, body: bytes) -> bytes:
    return bytes([kind, 3, 3]) + len(body).to_bytes(2, "big") + body


def _message(kind: int, body: bytes) -> bytes:
    return bytes([kind]) + len(body).to_bytes(3, "big") + body


def _hello(extensions: dict[int, bytes], random: bytes = b"\x11" * 32) -> bytes:
    ext = b"".join(
        k.to_bytes(2, "big") + len(v).to_bytes(2, "big") + v for k, v in extensions.items()
    )
    body = b"\x03\x03" + random + b"\x20" + b"\x22" * 32 + b"\xc0\x2f" + b"\x00"
    body += len(ext).to_bytes(2, "big") + ext
    return _message(2, body)


def test_tls13_new_and_resumed() -> None:
    new = _record(22, _hello({43: b"\x03\x04", 51: b"\x00\x1d" + b"\x00\x20" + b"k" * 32}))
    resumed = _record(22, _hello({43: b"\x03\x04", 41: b"\x00\x00"}))
    assert parse_server_hello(new) == (False, "TLSv1.3")
    assert parse_server_hello(resumed) == (True, "TLSv1.3")


def test_a_hello_retry_request_is_no_handshake_of_its_own() -> None:
    assert parse_server_hello(_record(22, _hello({43: b"\x03\x04"}, random=_HRR_RANDOM))) is None


def test_tls12_full_handshake_sends_its_certificate() -> None:
    flight = _record(22, _hello({})) + _record(22, _message(11, b"\x00" * 40))
    assert parse_server_hello(flight) == (False, "TLSv1.2")
    # ServerHello and Certificate in one record
    assert parse_server_hello(_record(22, _hello({}) + _message(11, b"\x00" * 40))) == (
        False,
        "TLSv1.2",
    )


def test_tls12_resumed_whatever_the_encrypted_finished_starts_with() -> None:
    """After ChangeCipherSpec the Finished record is ciphertext: one flight in 256 starts with
    the byte of a Certificate message, and it was counted as a new handshake."""
    for first in range(256):
        finished = bytes([first]) + b"\x00" * 39
        with_ticket = (
            _record(22, _hello({}))
            + _record(22, _message(4, b"\x00" * 20))
            + _record(20, b"\x01")
            + _record(22, finished)
        )
        without = _record(22, _hello({})) + _record(20, b"\x01") + _record(22, finished)
        assert parse_server_hello(with_ticket) == (True, "TLSv1.2"), first
        assert parse_server_hello(without) == (True, "TLSv1.2"), first


def test_tls12_flight_cut_after_the_hello_counts_as_new() -> None:
    assert parse_server_hello(_record(22, _hello({}))) == (False, "TLSv1.2")


def test_not_a_whole_server_hello() -> None:
    whole = _record(22, _hello({}))
    assert parse_server_hello(whole[:30]) is None
    assert parse_server_hello(_record(23, b"\x00" * 60)) is None
