"""Replication: one landlord served by several replicas, its leases kept in etcd.

- :mod:`~landlord.replication.election`: which replica leads a group, through an
  etcd lease and key; the fencing rule; etcd writes guarded by leadership.
- :mod:`~landlord.replication.etcdstore`: a group's leases in etcd
  (:class:`~landlord.replication.etcdstore.EtcdLeaseStore`), written only by the leader.
- :mod:`~landlord.replication.replicated`: :class:`~landlord.ReplicatedLandlord`,
  one replica: a :class:`~landlord.Landlord` per term of leadership over the etcd store.
- :mod:`~landlord.replication.terms`: a replica's terms (the one its election wants,
  the one loaded, whether it answers), shared by the election's callbacks, the
  thread that loads terms and the calls; no etcd.
- :mod:`~landlord.replication.warmcopy`: a follower's warm copy of the group's
  leases (:class:`~landlord.replication.warmcopy.WarmCopy`), read once and kept
  up to date by watching etcd, which a new leader takes instead of reading etcd.

It may import the grantor, the holder side, the transport and the basics, never
serving or the renewal service. The etcd client (the ``etcd`` extra) is imported
only when a replica connects; ``import landlord`` loads none of this package
(``landlord.ReplicatedLandlord`` loads it on first use). Loggers keep the names
the modules had before they moved here (``landlord.election``,
``landlord.etcdstore``, ``landlord.replicated``).
"""
