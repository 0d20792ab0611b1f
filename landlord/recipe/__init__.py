"""Recipes on named leases, the holder's side: locks, semaphores and elections (issue 25).

Each recipe reads top to bottom in its own module, on the one below it:

- :mod:`~landlord.recipe.lock`: :class:`~landlord.Lock` and :class:`~landlord.Semaphore`;
- :mod:`~landlord.recipe.election`: :class:`~landlord.Election` (campaign, lead, watch
  the leader, resign, hand over to a named successor);
- :mod:`~landlord.recipe.claim`: :class:`~landlord.recipe.claim.Claim`, a name held through
  a lease: acquiring, waiting for the pushed grant, the validity deadline, the loss;
- :mod:`~landlord.recipe.watch`: :class:`~landlord.recipe.watch.HoldersWatch`, who holds a
  name, pushed as it changes (a watch lease, watched again when lost);
- :mod:`~landlord.recipe.watchdog`: one thread per process that turns held claims invalid
  at their deadline less their margin, or at once when revoked;
- :mod:`~landlord.recipe.target`: how a recipe reaches its landlord (in-process, a URI,
  a replica group).

The landlord's side is :meth:`landlord.Landlord.acquire` (:mod:`landlord.grantor.claims`).
A recipe works on any landlord: in-process, served, stored, replicated. It
may import the holder side (the renewal manager, the inbox of grants), the
transport and the basics; never the grantor, replication or serving: a holder
process loads no lease manager (import-linter holds it to that). Its names
load on first use (``landlord.Lock``). Its logger is ``landlord.recipe``.
"""
