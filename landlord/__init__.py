"""landlord: Jini-style leasing over Pyro5.

A landlord grants time-bounded leases on resources; holders renew them while
they care; a lease that is not renewed expires and its resource is freed.

Importing this package registers the converters that let leases, batch
results and lease errors cross the wire as themselves.
"""

from __future__ import annotations

from . import wire as _wire  # noqa: F401  (registers the serializer converters)
from .adaptive import AdaptivePolicy
from .backoff import Backoff, OutageLog, PeerErrors
from .callbacks import check_callback_hosts, check_callback_uri
from .clients import IN_PROCESS as IN_PROCESS_CLIENT
from .clients import client_of_call
from .clock import SYSTEM_CLOCK, Clock, FakeClock, SystemClock
from .duration import ANY, FOREVER, check_duration
from .errors import LeaseDeniedError, LeaseError, LeaseMapError, NotLeaderError, UnknownLeaseError
from .framing import FrameLimits
from .grantor import Landlord, RenewResults, ResourceCodec
from .hooks import LeaseHooks
from .landlordlease import LandlordLease, call_group, known_leader
from .lanes import Lanes
from .lease import AbstractLease, Lease, LeaseMap
from .manager import LeaseManager
from .policy import LeaseDurationPolicy, LeasePolicy
from .proxies import discard as discard_proxy
from .proxies import get_call_timeout, proxy_for, set_call_timeout, timeout_within
from .reapers import LazyReaper, PollingReaper, Reaper, SleeperReaper
from .renewal import LeaseRenewalEvent, LeaseRenewalManager, LeaseWarningEvent, renewal_time
from .renewalclient import RenewalSetClient, RenewalSetListener
from .renewalservice import LeaseRenewalService
from .replicated import ReplicatedLandlord, replica_uris
from .resource import LeasedResource, LeaseExtra
from .revocation import RevocationReceiver
from .serving import serve_landlord, serve_replica
from .store import LeaseStore, Store, StoreInUseError
from .tls import TLSConfig, apply_tls, tls_settings
from .wire import register_exception

__version__ = "0.1.0"

__all__ = [
    "ANY", "FOREVER", "check_duration", "check_callback_uri", "check_callback_hosts",
    "Lease", "AbstractLease", "LandlordLease", "LeaseMap", "known_leader", "call_group",
    "LeaseError", "LeaseDeniedError", "UnknownLeaseError", "LeaseMapError", "NotLeaderError",
    "Landlord", "ReplicatedLandlord", "replica_uris", "RenewResults", "ResourceCodec", "LeasedResource", "LeaseExtra",
    "LeaseManager",
    "LeaseHooks", "RevocationReceiver",
    "LeasePolicy", "LeaseDurationPolicy", "AdaptivePolicy",
    "Reaper", "SleeperReaper", "PollingReaper", "LazyReaper", "LeaseStore", "Store", "StoreInUseError",
    "LeaseRenewalManager", "LeaseRenewalEvent", "LeaseWarningEvent", "renewal_time",
    "LeaseRenewalService", "RenewalSetClient", "RenewalSetListener",
    "Clock", "SystemClock", "FakeClock", "SYSTEM_CLOCK", "Backoff", "OutageLog", "PeerErrors", "Lanes",
    "get_call_timeout", "set_call_timeout", "timeout_within", "proxy_for", "discard_proxy", "register_exception",
    "serve_landlord", "serve_replica", "FrameLimits", "client_of_call", "IN_PROCESS_CLIENT",
    "TLSConfig", "apply_tls", "tls_settings",
]
