"""The lookup service itself: what ``python -m lookup serve`` runs.

:mod:`~lookup.service.lookupservice` holds :class:`~lookup.LookupService`, the
Pyro5 facade (one lock) over :mod:`~lookup.service.registry` (items and their
leases), :mod:`~lookup.service.index` (candidates by type and attribute) and
:mod:`~lookup.service.fanout` (event registrations), whose events
:mod:`~lookup.service.mailer` delivers, as :mod:`~lookup.service.outbox` (queues
per listener; pure) says; :mod:`~lookup.service.quotas`
bounds what one client may hold. :mod:`~lookup.service.server` serves it on a
guarded daemon with announcements, and with ``--pyro-ns``
:mod:`lookup.service.pyrons` (a room: Pyro5's name server protocol over the
same registrations) beside it; :mod:`~lookup.service.replicated` is one
replica of a group replicated through etcd.

May import: landlord's public modules, lookup's values (entry, item,
registration, events, ownership, packed, wire) and :mod:`lookup.discovery`;
never :mod:`lookup.client`.
"""
