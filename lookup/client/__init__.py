"""The clients of lookup services: they keep registrations and follow what is registered.

:class:`~lookup.JoinManager` (:mod:`~lookup.client.join`) keeps a service
registered with every lookup service it knows of, one
:mod:`~lookup.client.joinpeer` per lookup service; :class:`~lookup.LookupCache`
(:mod:`~lookup.client.cache`) mirrors what matches a template, one
:mod:`~lookup.client.cachepeer` per lookup service, merged by the pure
:mod:`~lookup.client.view` and fed by events through
:mod:`~lookup.client.callbacks`. Both keep their peers in a
:class:`~lookup.client.peerset.PeerSet` (lookup services added, removed,
discovered; errors; closing), and both peers run on
:class:`~lookup.client.peer.PeerThread`: one lookup service on a thread of its
own, retried with backoff.

May import: landlord's public modules, lookup's values (entry, item,
registration, events, ownership) and :mod:`lookup.discovery`; never
:mod:`lookup.service` (the limits both sides need live with the values).
"""
