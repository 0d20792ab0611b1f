"""A lease holder in its own process: receives a lease over Pyro5, renews, cancels, passes it on.

Prints ``URI: <uri>`` once serving.
"""

from __future__ import annotations

import threading

import Pyro5.api

import landlord
from landlord.transport import proxies


@Pyro5.api.expose
class Holder:
    def __init__(self) -> None:
        self.lease: landlord.LandlordLease | None = None

    def hold(self, lease: landlord.LandlordLease) -> float:
        assert isinstance(lease, landlord.LandlordLease), type(lease)
        self.lease = lease
        return lease.remaining

    def remaining(self) -> float:
        assert self.lease is not None
        return self.lease.remaining

    def renew(self, duration: float) -> float:
        assert self.lease is not None
        return self.lease.renew(duration)

    def cancel(self) -> None:
        assert self.lease is not None
        self.lease.cancel()

    def pass_on(self, holder_uri: str) -> float:
        with Pyro5.api.Proxy(holder_uri) as other:
            return other.hold(self.lease)  # type: ignore[no-any-return]

    def renew_from_threads(self, count: int, duration: float) -> list[int]:
        """Renew from ``count`` new threads; return each thread's number of cached proxies."""
        assert self.lease is not None
        lease, counts = self.lease, []

        def renew() -> None:
            lease.renew(duration)
            counts.append(len(proxies._cache()))

        threads = [threading.Thread(target=renew) for _ in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return counts


def main() -> None:
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    print("URI:", daemon.register(Holder()), flush=True)
    daemon.requestLoop()


if __name__ == "__main__":
    main()
