"""check_callback_uri: the one rule for URIs a server calls back (landlords' listeners, lookup events)."""

from __future__ import annotations

import pytest

from landlord import FakeClock, Landlord, LeaseRenewalService, check_callback_hosts, check_callback_uri
from landlord.transport.callbacks import MAX_CALLBACK_URI


@pytest.mark.parametrize("uri", ["PYRO:obj@127.0.0.1:9", "PYRO:obj@listener.example.org:4160", "PYRO:obj@[::1]:7"])
def test_a_pyro_uri_with_host_and_port_is_taken_as_it_is(uri: str) -> None:
    assert check_callback_uri(uri) == uri


@pytest.mark.parametrize("uri, words", [
    ("PYRONAME:listener", "no name server"),
    ("PYRONAME:listener@127.0.0.1:9090", "no name server"),
    ("PYROMETA:a.tag", "no name server"),
    ("PYRO:obj@./u:/tmp/listener.sock", "host and a port"),
    ("not a uri", "PYRO: URI"),
    ("", "PYRO: URI"),
    ("PYRO:obj@h:1" + "x" * MAX_CALLBACK_URI, "at most"),
])
def test_anything_else_is_a_value_error_that_says_why(uri: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        check_callback_uri(uri)


@pytest.mark.parametrize("uri", [42, None, b"PYRO:obj@h:1", ["PYRO:obj@h:1"]])
def test_a_non_str_is_a_type_error(uri: object) -> None:
    with pytest.raises(TypeError):
        check_callback_uri(uri)


def test_an_allow_list_admits_its_hosts_only_whatever_their_case_or_brackets() -> None:
    allowed = check_callback_hosts(["Listener.Example.org", "[::1]", "10.0.0.5"])
    for uri in ["PYRO:o@listener.example.org:1", "PYRO:o@LISTENER.example.ORG:2", "PYRO:o@[::1]:3",
                "PYRO:o@10.0.0.5:4"]:
        assert check_callback_uri(uri, allowed_hosts=allowed) == uri
    for uri in ["PYRO:o@10.0.0.6:4", "PYRO:o@127.0.0.1:1", "PYRO:o@example.org:1"]:
        with pytest.raises(ValueError, match="not allowed"):
            check_callback_uri(uri, allowed_hosts=allowed)
    with pytest.raises(ValueError, match="not allowed"):
        check_callback_uri("PYRO:o@127.0.0.1:1", allowed_hosts=check_callback_hosts([]))  # an empty list: none


@pytest.mark.parametrize("hosts, error", [("127.0.0.1", TypeError), ([42], TypeError), ([""], ValueError),
                                          (["[]"], ValueError)])
def test_a_bad_allow_list_is_refused(hosts: object, error: type) -> None:
    with pytest.raises(error):
        check_callback_hosts(hosts)  # type: ignore[arg-type]
    with pytest.raises(error):
        Landlord(callback_hosts=hosts, reaper="lazy")  # type: ignore[arg-type]


def test_a_landlord_listens_only_to_allowed_hosts_and_a_refusal_changes_nothing(clock: FakeClock) -> None:
    landlord = Landlord(clock=clock, reaper="lazy", callback_hosts=["10.0.0.5"])
    lease = landlord.new_lease("room", 60)
    for refused in ["PYRO:x@127.0.0.1:9", "PYRONAME:x"]:
        with pytest.raises(ValueError):
            landlord.listen(lease.cookie, refused)
    leased = landlord.manager.get(lease.cookie)
    assert leased is not None and leased.extra is None  # no listener was set
    landlord.listen(lease.cookie, "PYRO:x@10.0.0.5:9")
    leased = landlord.manager.get(lease.cookie)
    assert leased is not None and leased.extra is not None and leased.extra.listener == "PYRO:x@10.0.0.5:9"


def test_a_renewal_service_holds_its_listeners_to_the_same_rule(clock: FakeClock) -> None:
    service = LeaseRenewalService(clock=clock, reaper="lazy", callback_hosts=["10.0.0.5"])
    try:
        set_id, lease = service.create_set(60)
        for refused in ["PYRO:x@127.0.0.1:9", "PYRONAME:x", "PYRO:x@./u:/tmp/s"]:
            with pytest.raises(ValueError):
                service.set_failure_listener(lease.cookie, refused)
            with pytest.raises(ValueError):
                service.set_warning_listener(lease.cookie, refused, 5)
        service.set_failure_listener(lease.cookie, "PYRO:x@10.0.0.5:9")
    finally:
        service.close()
