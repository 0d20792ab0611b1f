"""The grantor: who grants leases, keeps them in order, and frees their resources when they end.

- :mod:`~landlord.grantor.landlord`: :class:`~landlord.Landlord`, the Pyro5-exposed
  grantor (``renew``, ``cancel``, their batches), and :class:`~landlord.RenewResults`;
- :mod:`~landlord.grantor.manager`: :class:`~landlord.LeaseManager`, which owns the
  leased resources, over :mod:`~landlord.grantor.leasetable` (by cookie, and a lazy
  calendar by expiration);
- :mod:`~landlord.grantor.policy` and :mod:`~landlord.grantor.adaptive`: how long a
  lease is granted; :mod:`~landlord.grantor.reapers`: when ended leases are freed;
  :mod:`~landlord.grantor.freeing`: how (the callbacks, then the store's rows: free first, forget after);
  :mod:`~landlord.grantor.killpoints`: where a test may have the process SIGKILL itself as
  leases end (armed by ``LANDLORD_KILL_POINT`` in its environment; not an API);
  :mod:`~landlord.grantor.store`: the SQLite store (leases survive kill -9);
  :mod:`~landlord.grantor.hooks`: what a landlord tells of its leases;
  :mod:`~landlord.grantor.revocations`: the landlord's half of revocation, a thread
  telling listeners (the holder's half is :mod:`landlord.holder.revocations`);
  :mod:`~landlord.grantor.resource`: a leased resource as the manager holds it;
  :mod:`~landlord.grantor.names`: named leases (locks, semaphores), their waiters,
  lock-delays and fencing tokens, a clock-free table; :mod:`~landlord.grantor.claims`
  ties it to the landlord's leases (``Landlord.acquire``: grants pushed to waiters,
  tokens kept in the store, a thread for timeouts); :mod:`~landlord.grantor.watches`:
  watches of a name's holders (``Landlord.watch_name``: every change pushed, coalesced,
  bounded, from a thread of its own).

It may import the holder side (what it grants is a holder's
:class:`~landlord.LandlordLease`), the transport and the basics; never serving,
replication or the renewal service, which are built on it. Loggers keep the
names the modules had before they moved here (``landlord.grantor``,
``landlord.manager``, ...).
"""
