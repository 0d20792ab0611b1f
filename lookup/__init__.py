"""lookup: a Jini-style lookup service built on landlord's leases.

Services register a :class:`ServiceItem` (a proxy or URI, type names, and
:class:`Entry` attributes); clients find them with a :class:`ServiceTemplate`.
Every registration is a lease, so a service that dies vanishes on its own.

Importing this package imports landlord and registers the converters that let
entries (a user's own :class:`Entry` subclasses too), service items,
templates and matches cross the wire as themselves. It loads what a client
needs (the values, :mod:`lookup.client`, :mod:`lookup.discovery`) and no
service module, none of landlord's grantor and no extra: the lookup service
(``LookupService``) and its replicated form (``ReplicatedLookupService``, over
etcd) load on first use of their names, and the server (``python -m lookup
serve``, :mod:`lookup.service.server`) only when imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import landlord as _landlord  # noqa: F401  (registers landlord's converters)
from landlord.lazy import lazy_names

from . import wire as _wire  # noqa: F401  (registers the serializer converters)
from .client.cache import LookupCache
from .client.join import JoinManager
from .discovery.multicast import DiscoveredLookup, LookupDiscovery, discover
from .discovery.unicast import LOOKUP_OBJECT_ID, LookupGroup, LookupServiceNotFoundError, locate
from .entry import (
    Comment,
    Entry,
    Location,
    Name,
    PyroMetadata,
    ServiceInfo,
    Status,
    UnknownEntry,
    entry_class,
    entry_class_name,
    entry_fields,
    entry_lineage,
    entry_matches,
    qualified_name,
)
from .events import (
    ALL_TRANSITIONS,
    TRANSITION_MATCH_MATCH,
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    EventRegistration,
    ServiceEvent,
)
from .item import Expiry, ServiceItem, ServiceMatches, ServiceTemplate, matches, type_names
from .ownership import NotOwnerError
from .registration import ServiceRegistration

if TYPE_CHECKING:  # at run time: loaded on first use, so that a client process loads no service module
    from .service.lookupservice import LookupService
    from .service.replicated import ReplicatedLookupService

_LAZY = {"LookupService": "service.lookupservice", "ReplicatedLookupService": "service.replicated"}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "Entry", "UnknownEntry", "Name", "PyroMetadata", "Location", "Comment", "ServiceInfo", "Status",
    "entry_class", "entry_class_name", "entry_lineage", "entry_fields", "entry_matches", "qualified_name",
    "ServiceItem", "ServiceTemplate", "ServiceMatches", "Expiry", "matches", "type_names",
    "ServiceEvent", "EventRegistration", "ServiceRegistration", "LookupService", "JoinManager", "LookupCache",
    "discover", "LookupDiscovery", "DiscoveredLookup",
    "locate", "LookupGroup", "LookupServiceNotFoundError", "LOOKUP_OBJECT_ID", "ReplicatedLookupService",
    "NotOwnerError",
    "TRANSITION_MATCH_NOMATCH", "TRANSITION_NOMATCH_MATCH", "TRANSITION_MATCH_MATCH", "ALL_TRANSITIONS",
]
