"""Pyro5's name server protocol, answered by the lookup service (``lookup serve --pyro-ns``).

:mod:`~lookup.service.pyrons.bridge` serves :mod:`~lookup.service.pyrons.face`'s
:class:`~lookup.service.pyrons.face.NameServerFace` (Pyro5's ``NameServer``
interface over the lookup service's registrations: a name is a ``Name``
attribute, a metadata string a ``PyroMetadata`` one) on a guarded daemon of
its own, and :mod:`~lookup.service.pyrons.broadcast` answers Pyro5's
broadcast discovery of it; :mod:`~lookup.service.pyrons.pinger` pings the daemons of the names
registered through it, as :mod:`~lookup.service.pyrons.liveness` (pure,
clock-free) says, so that a dead one's names go;
:mod:`~lookup.service.pyrons.patterns` refuses regular expressions that could
backtrack for long; :mod:`~lookup.service.pyrons.replica` answers on a replica
of a replicated lookup service, from the face of the term it leads.

May import: landlord's public modules, lookup's values (entry, item) and
:mod:`lookup.service.lookupservice`; never :mod:`lookup.service.server`,
:mod:`lookup.service.replicated` (a replica is reached through a protocol) nor
:mod:`lookup.client`.
"""
