"""landlord: Jini-style leasing over Pyro5.

A landlord grants time-bounded leases on resources; holders renew them while
they care; a lease that is not renewed expires and its resource is freed.

Importing this package registers the converters that let leases, batch
results and lease errors cross the wire as themselves.

``import landlord`` loads the holder's core alone: leases, the renewal
manager, the wire and TLS, and the resource's side of fencing (:class:`Fence`,
:mod:`landlord.fence`, which imports nothing more). Everything else loads on
first use of its name (:data:`_LAZY`, PEP 562): the grantor (``Landlord``, its
manager, policies, reapers, the SQLite store), so that a holder process loads
none of it; and the extras: serving (``serve_landlord``, ``serve_replica``:
the guarded server, admin, metrics beside), replication
(``ReplicatedLandlord``: election, the etcd store), the renewal service and
its client, the revocation receiver, and the fence served to other processes
(``RemoteFence``, :mod:`landlord.remotefence`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import wire as _wire  # noqa: F401  (registers the serializer converters)
from .clock import SYSTEM_CLOCK, Clock, FakeClock, SystemClock
from .duration import ANY, FOREVER, check_duration
from .errors import LeaseDeniedError, LeaseError, LeaseMapError, NotLeaderError, StaleTokenError, UnknownLeaseError
from .fence import Fence
from .holder.landlordlease import LandlordLease, call_group, known_leader, replica_uris
from .holder.renewal import LeaseRenewalEvent, LeaseRenewalManager, LeaseWarningEvent, renewal_time
from .lazy import lazy_names
from .lease import AbstractLease, BatchableLease, Lease, LeaseMap
from .results import RenewResults
from .tls import TLSConfig, apply_tls, tls_settings
from .transport.backoff import Backoff, OutageLog, PeerErrors
from .transport.callbacks import check_callback_hosts, check_callback_uri
from .transport.clients import IN_PROCESS as IN_PROCESS_CLIENT
from .transport.clients import client_of_call
from .transport.framing import FrameLimits
from .transport.lanes import Lanes
from .transport.proxies import discard as discard_proxy
from .transport.proxies import get_call_timeout, proxy_for, set_call_timeout, timeout_within, wire_proxy
from .wire import register_exception

if TYPE_CHECKING:  # for the type checker: at run time these load on first use (__getattr__ below)
    from .grantor.adaptive import AdaptivePolicy
    from .grantor.hooks import LeaseHooks
    from .grantor.landlord import Landlord, ResourceCodec
    from .grantor.manager import LeaseManager
    from .grantor.policy import LeaseDurationPolicy, LeasePolicy
    from .grantor.reapers import LazyReaper, PollingReaper, Reaper, SleeperReaper
    from .grantor.resource import LeasedResource, LeaseExtra
    from .grantor.store import LeaseStore, Store, StoreInUseError
    from .holder.claiminbox import ClaimInbox
    from .holder.revocations import RevocationReceiver
    from .recipe.election import Election
    from .recipe.lock import Lock, Semaphore
    from .remotefence import RemoteFence
    from .renewalservice.client import RenewalSetClient, RenewalSetListener
    from .renewalservice.service import LeaseRenewalService
    from .replication.replicated import ReplicatedLandlord
    from .serving import serve_landlord, serve_replica

# the extras: each name, and the module that defines it, imported when the name is first used
_LAZY = {
    # the grantor: a holder process, which only renews, never loads it
    "Landlord": "grantor.landlord", "ResourceCodec": "grantor.landlord", "LeaseManager": "grantor.manager",
    "LeasePolicy": "grantor.policy", "LeaseDurationPolicy": "grantor.policy", "AdaptivePolicy": "grantor.adaptive",
    "Reaper": "grantor.reapers", "SleeperReaper": "grantor.reapers", "PollingReaper": "grantor.reapers",
    "LazyReaper": "grantor.reapers", "LeasedResource": "grantor.resource", "LeaseExtra": "grantor.resource",
    "LeaseStore": "grantor.store", "Store": "grantor.store", "StoreInUseError": "grantor.store",
    "LeaseHooks": "grantor.hooks",
    # the extras
    "RenewalSetClient": "renewalservice.client", "RenewalSetListener": "renewalservice.client",
    "LeaseRenewalService": "renewalservice.service",
    "ReplicatedLandlord": "replication.replicated",
    "RevocationReceiver": "holder.revocations",
    "serve_landlord": "serving", "serve_replica": "serving",
    # the recipes on named leases
    "Lock": "recipe.lock", "Semaphore": "recipe.lock", "Election": "recipe.election",
    "ClaimInbox": "holder.claiminbox",
    # the resource's side of fencing, served to other processes
    "RemoteFence": "remotefence",
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

# The modules other packages may import (lookup, and users who need more than the
# facade); every other module is private to landlord and may change without
# notice. Declared once, here: docs/architecture.md lists the same, the
# import-linter contract forbids lookup all the others, and
# tests/test_architecture.py checks all three against what lookup imports.
PUBLIC_MODULES = (
    "landlord", "landlord.errors", "landlord.clock", "landlord.duration", "landlord.lease",
    "landlord.wire", "landlord.tls", "landlord.lazy",
    "landlord.serving", "landlord.admin", "landlord.metrics", "landlord.aio", "landlord.cli",
    "landlord.transport.addresses", "landlord.transport.verdicts",
    "landlord.replication", "landlord.replication.election", "landlord.replication.replicated",
    "landlord.testing", "landlord.testing.etcd",
)

__version__ = "0.1.0"

__all__ = [
    "ANY", "FOREVER", "check_duration", "check_callback_uri", "check_callback_hosts",
    "Lease", "AbstractLease", "BatchableLease", "LandlordLease", "LeaseMap", "known_leader", "call_group",
    "LeaseError", "LeaseDeniedError", "UnknownLeaseError", "LeaseMapError", "NotLeaderError",
    "Fence", "RemoteFence", "StaleTokenError", "Lock", "Semaphore", "Election", "ClaimInbox",
    "Landlord", "ReplicatedLandlord", "replica_uris", "RenewResults", "ResourceCodec", "LeasedResource", "LeaseExtra",
    "LeaseManager",
    "LeaseHooks", "RevocationReceiver",
    "LeasePolicy", "LeaseDurationPolicy", "AdaptivePolicy",
    "Reaper", "SleeperReaper", "PollingReaper", "LazyReaper", "LeaseStore", "Store", "StoreInUseError",
    "LeaseRenewalManager", "LeaseRenewalEvent", "LeaseWarningEvent", "renewal_time",
    "LeaseRenewalService", "RenewalSetClient", "RenewalSetListener",
    "Clock", "SystemClock", "FakeClock", "SYSTEM_CLOCK", "Backoff", "OutageLog", "PeerErrors", "Lanes",
    "get_call_timeout", "set_call_timeout", "timeout_within", "proxy_for", "wire_proxy", "discard_proxy",
    "register_exception",
    "serve_landlord", "serve_replica", "FrameLimits", "client_of_call", "IN_PROCESS_CLIENT",
    "TLSConfig", "apply_tls", "tls_settings",
]
