"""The renewal service: renewal sets kept alive for processes that come and go (Jini's Norm).

- :mod:`~landlord.renewalservice.service`: :class:`~landlord.LeaseRenewalService`,
  the remote object (``python -m landlord renewal-service``), its per-client limits
  and the rule for the landlords it renews with.
- :mod:`~landlord.renewalservice.ledger`: what the service holds, as one record
  (its sets, the set each lease is in, what each client holds against its limits),
  written through to the store.
- :mod:`~landlord.renewalservice.sets`: the sets in memory, and their SQLite store.
- :mod:`~landlord.renewalservice.client`: what its clients use
  (:class:`~landlord.RenewalSetClient`, :class:`~landlord.RenewalSetListener`).

It may import the grantor (the service is a landlord of its sets), the holder
side (its renewal manager), the transport and the basics, never serving or
replication; inside, the service imports its ledger, which imports the sets,
and the clients import neither. ``import landlord`` loads none of it: its names
load on first use.
Loggers keep the names the modules had before they moved here
(``landlord.renewalservice``, ``landlord.renewalsets``, ``landlord.renewalclient``).
"""
