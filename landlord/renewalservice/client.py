"""A lease renewal service as its clients see it: :class:`RenewalSetClient` and
:class:`RenewalSetListener`.

::

    renewals = RenewalSetClient.create("PYRO:landlord.RenewalService@host:4162", 600)
    renewals.renew_for(lease, FOREVER)       # the service renews it from now on
    renewals.set_warning_listener(listener_uri, warn_before=60)
    # ... the process may exit; before the set's lease ends, the listener is warned,
    # and whoever holds renewals.lease renews it (or hands it to a LeaseRenewalManager).

Every call is a short connection of its own, so a client may be used from any
thread, and the set (its :attr:`~RenewalSetClient.set_id` and
:attr:`~RenewalSetClient.lease`) can be handed to another process, which makes
its own :class:`RenewalSetClient` from them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.server

from ..duration import ANY, FOREVER, check_duration
from ..holder.landlordlease import LandlordLease
from ..lease import Lease
from ..transport.proxies import wire_proxy

__all__ = ["RenewalSetClient", "RenewalSetListener", "CALL_TIMEOUT"]

log = logging.getLogger("landlord.renewalclient")  # its name before it moved into renewalservice/

CALL_TIMEOUT = 10.0  # seconds one call to the service may take


class RenewalSetClient:
    """One renewal set at a lease renewal service (:class:`~landlord.renewalservice.service.LeaseRenewalService`).

    Args:
        set_id: the set's id (what listeners are told).
        lease: the set's own lease: while it is renewed, the set's leases are.
        timeout: seconds each call to the service may take.
    """

    def __init__(self, set_id: str, lease: LandlordLease, *, timeout: float = CALL_TIMEOUT) -> None:
        if not isinstance(set_id, str) or not isinstance(lease, LandlordLease):
            raise TypeError("a renewal set is its id (a str) and its lease (a LandlordLease)")
        self.set_id = set_id
        self.lease = lease
        self._timeout = check_duration(timeout, name="timeout", allow_any=False)

    @classmethod
    def create(cls, service: str, duration: float = ANY, *, timeout: float = CALL_TIMEOUT) -> RenewalSetClient:
        """Make a new set at the service whose URI is ``service``, its lease asked for ``duration`` seconds.

        Raises:
            ValueError: an invalid duration.
            LeaseDeniedError: the service refused.
            Pyro5.errors.CommunicationError: the service cannot be reached.
        """
        duration = check_duration(duration)
        with _proxy(service, timeout) as proxy:
            set_id, lease = proxy.create_set(duration)
        return cls(set_id, lease, timeout=timeout)

    def renew_for(self, lease: Lease, duration: float = FOREVER, *, renew_duration: float | None = None) -> None:
        """Have the service keep ``lease`` alive for ``duration`` seconds from now (``FOREVER``:
        while the set lasts), asking for at most ``renew_duration`` each time (default: its own term).

        Raises:
            TypeError: ``lease`` is not a Lease.
            ValueError: an invalid duration, a full set, or a lease already in another set.
            UnknownLeaseError: the set has ended.
        """
        if not isinstance(lease, Lease):
            raise TypeError(f"expected a Lease, got {type(lease).__name__}")
        self._call("renew_for", lease, check_duration(duration, allow_any=False), renew_duration)

    def remove(self, lease: Lease) -> bool:
        """Stop the service renewing ``lease`` (not cancelled); ``False`` if the set did not hold it."""
        return bool(self._call("remove", lease))

    def leases(self) -> list[Lease]:
        """The leases the set renews."""
        return list(self._call("leases"))

    def set_failure_listener(self, listener: str | None) -> None:
        """Have ``renewal_failed(set_id, lease, reason)`` called on the Pyro5 object at ``listener``
        for each lease the set loses (``None``: no one)."""
        self._call("set_failure_listener", listener)

    def set_warning_listener(self, listener: str | None, warn_before: float = 0.0) -> None:
        """Have ``expiration_warning(set_id, lease, expiration)`` called on the Pyro5 object at
        ``listener`` ``warn_before`` seconds before the set's lease ends (``None``: no one); ``lease``
        is the set's own, which the listener may renew."""
        self._call("set_warning_listener", listener, warn_before)

    def _call(self, method: str, *args: Any) -> Any:
        with _proxy(self.lease.landlord_uri, self._timeout) as proxy:
            return getattr(proxy, method)(self.lease.cookie, *args)

    def __repr__(self) -> str:
        return f"<RenewalSetClient {self.set_id} at {self.lease.landlord_uri}>"


@Pyro5.server.expose
class RenewalSetListener:
    """A Pyro5 object a renewal service tells of its sets' events; register it with a daemon
    and give its URI to :meth:`RenewalSetClient.set_failure_listener` and
    :meth:`~RenewalSetClient.set_warning_listener`. The callbacks run on the daemon's threads.

    Args:
        on_failure: called with ``(set_id, lease, reason)`` for a lease a set lost.
        on_warning: called with ``(set_id, lease, expiration)``: the set's lease ``lease`` ends
            at ``expiration`` (wall clock) unless renewed.
    """

    def __init__(self, *, on_failure: Callable[[str, Lease, str], object] | None = None,
                 on_warning: Callable[[str, LandlordLease, float], object] | None = None) -> None:
        self._on_failure = on_failure
        self._on_warning = on_warning

    def renewal_failed(self, set_id: str, lease: Lease, reason: str) -> None:
        if self._on_failure is not None:
            self._on_failure(set_id, lease, reason)

    def expiration_warning(self, set_id: str, lease: LandlordLease, expiration: float) -> None:
        if self._on_warning is not None:
            self._on_warning(set_id, lease, expiration)


def _proxy(uri: str, timeout: float) -> Pyro5.api.Proxy:
    proxy: Pyro5.api.Proxy = wire_proxy(uri)
    proxy._pyroTimeout = timeout
    return proxy
