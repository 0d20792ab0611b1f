"""Finding lookup services: by address, or by group over the network (Jini's discovery).

:mod:`~lookup.discovery.unicast` reaches a lookup service (or a replicated
group) at a known address (:func:`~lookup.locate`);
:mod:`~lookup.discovery.multicast` hears of lookup services by group
(:func:`~lookup.discover`, :class:`~lookup.LookupDiscovery`) and
:mod:`~lookup.discovery.announcer` is the service's side: announcements and
answers to requests. Both speak :mod:`~lookup.discovery.packets` (parsed
strictly) over :mod:`~lookup.discovery.network` (multicast, or broadcast, per
interface), within :mod:`~lookup.discovery.ratelimit`.

May import: landlord's public modules only; nothing else of lookup's.
"""
