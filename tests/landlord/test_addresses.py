"""landlord.transport.addresses: what a server advertises, and this host's own address."""

from __future__ import annotations

import ipaddress
import logging
import re
import socket

import pytest

from landlord.transport import addresses
from landlord.transport.addresses import (
    WILDCARD_HOSTS,
    advertised_host,
    check_advertise,
    check_host,
    is_loopback,
    own_address,
    uri_host,
)

NOT_OURS = "203.0.113.77"  # a documentation address (RFC 5737): no host has it


def test_advertised_host_is_what_is_advertised_else_the_host_else_this_hosts_address() -> None:
    assert advertised_host("127.0.0.1") == "127.0.0.1"
    assert advertised_host("localhost") == "localhost"
    assert advertised_host("0.0.0.0", "h1.example.org") == "h1.example.org"
    assert advertised_host("127.0.0.1", "10.1.2.3") == "10.1.2.3"
    assert advertised_host("::", "[fd00::2]") == "fd00::2"  # bare: the caller brackets it in a URI
    for wildcard in sorted(WILDCARD_HOSTS):
        chosen = advertised_host(wildcard)
        assert chosen not in WILDCARD_HOSTS and not ipaddress.ip_address(chosen).is_unspecified
    assert advertised_host("0.0.0.0") == own_address()


@pytest.mark.parametrize(("bad", "reason"), [
    ("", "empty"), (" h1", "spaces"), ("h1 h2", "spaces"), ("h1:4160", "without a port"),
    ("[::1]:4160", "without a port"), ("PYRO:landlord.x@h1:4160", "not a URI"), ("http://h1", "not a URI"),
    ("user@h1", "not a URI"), ("h1/x", "not a URI"), ("4160", "a port?"), ("0.0.0.0", "wildcard"),
    ("::", "wildcard"), ("[::]", "wildcard"), ("1.2.3", "not a valid IPv4"), ("256.1.1.1", "not a valid IPv4"),
    ("h1:x", "':' belongs only in an IPv6"), ("[h1]", "brackets"), ("a..b", "not a host name"),
    ("-h1", "not a host name"), ("h" * 64, "not a host name"), ("é.example.org", "not a host name"),
])
def test_an_address_to_advertise_must_be_a_host_name_or_an_ip_address(bad: str, reason: str) -> None:
    with pytest.raises(ValueError, match=f"cannot advertise {re.escape(repr(bad))}: .*{re.escape(reason)}"):
        check_advertise(bad)
    with pytest.raises(ValueError, match="cannot advertise"):
        advertised_host("0.0.0.0", bad)


def test_good_addresses_to_advertise_are_kept() -> None:
    for good in ("h1", "h1.example.org", "h1.example.org.", "lookup_1", "10.0.0.5", "fd00::2", "localhost"):
        assert check_advertise(good) == good
    assert check_advertise("[fd00::2]") == "fd00::2"
    with pytest.raises(TypeError, match="str"):
        check_advertise(b"h1")  # type: ignore[arg-type]


def test_a_host_to_listen_on_or_connect_to_is_a_name_an_address_or_the_wildcard() -> None:
    for good in ("h1", "h1.example.org", "localhost", "10.0.0.5", "fd00::2", "0.0.0.0", "::"):
        assert check_host(good) == good
    assert check_host("[::1]") == "::1"  # bare: the caller brackets it in a URI
    for bad, reason in [("", "empty"), ("h1:4160", "without a port"), ("h1 h2", "no spaces"),
                        ("PYRO:x@h1:4160", "not a URI"), ("1.2.3", "IPv4")]:
        with pytest.raises(ValueError, match=f"not a host: {re.escape(repr(bad))}: .*{reason}"):
            check_host(bad)
    with pytest.raises(TypeError, match="str"):
        check_host(None)  # type: ignore[arg-type]


def test_own_address_is_one_of_this_hosts_and_not_loopback_when_it_has_another() -> None:
    chosen = own_address()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((chosen, 0))  # only this host's own addresses can be bound
    others = [a for a in addresses._interface_addresses(socket.AF_INET)
              if not ipaddress.ip_address(a).is_loopback]
    if others:  # found by another way (the interfaces): then loopback was never the answer
        assert not ipaddress.ip_address(chosen).is_loopback, (chosen, others)


def test_own_address_passes_over_what_is_not_this_hosts_or_reaches_no_other_host(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    real = own_address()
    if ipaddress.ip_address(real).is_loopback:
        pytest.skip("this host has no address but loopback")
    unusable = ["127.0.0.1", "0.0.0.0", "169.254.7.7", "224.0.0.1", NOT_OURS, "not-an-address", "fd00::2"]
    offered: dict[socket.AddressFamily, list[str]] = {socket.AF_INET: unusable + [real]}
    monkeypatch.setattr(addresses, "_candidate_addresses", lambda family: iter(offered.get(family, [])))
    assert own_address() == real
    assert own_address(ipv6=True) == real  # no IPv6 address: an IPv4 one (a socket on "::" takes both)

    offered[socket.AF_INET] = unusable
    with caplog.at_level(logging.WARNING, logger="landlord.serving"):
        assert own_address() == "127.0.0.1"
        assert own_address(ipv6=True) == "::1"
    assert "no address but loopback" in caplog.text


def test_uri_host_brackets_an_ipv6_address_once_and_nothing_else() -> None:
    assert uri_host("fd00::2") == "[fd00::2]" and uri_host("[fd00::2]") == "[fd00::2]"
    assert uri_host("10.1.2.3") == "10.1.2.3" and uri_host("lookup.example.org") == "lookup.example.org"


def test_is_loopback_names_only_addresses_this_machine_alone_reaches() -> None:
    assert all(map(is_loopback, ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LocalHost")))
    assert not any(map(is_loopback, ("0.0.0.0", "::", "192.0.2.2", "lookup.example", "", "localhost.example")))
