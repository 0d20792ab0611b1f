"""The holder side: a lease that reaches its landlord, and the manager that keeps leases alive.

- :mod:`~landlord.holder.landlordlease`: :class:`~landlord.LandlordLease` (a cookie and
  its landlord's URIs; a replica group's leader), ``replica_uris``;
- :mod:`~landlord.holder.renewal`: :class:`~landlord.LeaseRenewalManager`, its API and
  driver thread, over :mod:`~landlord.holder.schedule` (what is due when; pure) and
  :mod:`~landlord.holder.pace` (what a landlord's calls take, measured);
- :mod:`~landlord.holder.revocations`: :class:`~landlord.RevocationReceiver`, the
  holder's half of revocation (told at once that a lease was revoked); the
  landlord's half is :mod:`landlord.grantor.revocations`. It loads on first use
  of its name;
- :mod:`~landlord.holder.claiminbox`: :class:`~landlord.ClaimInbox`, where a holder of
  named leases hears that its wait is over (``granted``) or its lease revoked; the
  recipes (:mod:`landlord.recipe`) use it.

It may import :mod:`landlord.lease`, the transport and the basics, never the
grantor: a holder process loads no lease manager. Loggers keep the names the
modules had before they moved here (``landlord.renewal``, ``landlord.pace``, ...).
"""
