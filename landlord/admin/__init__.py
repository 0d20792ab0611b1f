"""An operator's view of any landlord: :class:`LandlordAdmin` lists its leases and evicts one,
and ``python -m landlord list|evict`` calls it (:class:`AdminClient`, :func:`add_admin_commands`).

Holding a lease's cookie is the capability to renew or cancel it, so the
admin calls are not methods of the landlord: they go to a separate Pyro5
object, served beside it under :func:`admin_object_id` (``"landlord-admin."``
and the landlord's id; :func:`register_admin`), which shows only the first
:data:`PREFIX_SHOWN` characters of each cookie and answers only callers it
authorises. Every call must carry one of:

* **a proof of the admin token** given at start (``token=``, at least
  :data:`MIN_TOKEN_LENGTH` characters), never the token itself (see *The
  proof* in :mod:`landlord.admin.protocol`). The command line reads the token
  from a file (``--token-file``) or the ``LANDLORD_ADMIN_TOKEN`` variable, never
  from its arguments, which ``ps`` shows to every user of the host;
* **an admin certificate**: the landlord is served over two-way TLS
  (:mod:`landlord.tls`), so the client's certificate is already signed by the
  CA; it is an admin's when its subject has exactly one commonName and that
  name is one of ``admin_names`` (etcd's rule for a client certificate's
  user). Any other certificate of the CA reaches the landlord to renew its
  leases, not this object.

A call with neither is refused with :class:`AdminRefusedError` (it crosses
the wire as itself, saying why) before its arguments are used: nothing is
listed or evicted, and the refusal is logged with the caller's address. Given
both options, either authorises. Every eviction is logged at INFO, with who asked.

One job per module:

- :mod:`~landlord.admin.protocol`: what both sides agree on: the token, the
  proof of it (:func:`admin_proof`, :class:`Challenge`), the checks of a call's
  arguments, the refusal (:class:`AdminRefusedError`); pure;
- :mod:`~landlord.admin.server`: the remote object (:class:`LandlordAdmin`),
  :func:`admin_object_id`, :func:`register_admin`;
- :mod:`~landlord.admin.client`: :class:`AdminClient`, :func:`find_admin`, the rows
  it returns (:class:`AdminRow`, :class:`AdminListing`; the named leases' :class:`NameRow`,
  :class:`NameListing`) and :func:`format_table`, :func:`format_names`;
- :mod:`~landlord.admin.commands`: the command line (:func:`add_admin_commands`,
  :func:`run_admin`, :func:`prefix_behind_dashes`, the argument types
  ``landlord/__main__.py`` and ``lookup/cli.py`` share).

Inside the package: the command line imports the client, and the client and the
server import the protocol; the client never imports the server, so neither
does the command line. The package may import the grantor and replication (the
server administers a :class:`~landlord.Landlord` or
:class:`~landlord.ReplicatedLandlord`), the wire (which carries its error), the
holder side, the transport, :mod:`landlord.tls` and the basics; serving is
above it (it serves an admin object beside a landlord). ``import landlord``
loads none of it. Its logger is ``landlord.admin``, and
:class:`AdminRefusedError` crosses the wire as ``landlord.admin.AdminRefusedError``,
as before the package was split.
"""

from __future__ import annotations

from .client import (
    DEFAULT_TIMEOUT,
    AdminClient,
    AdminListing,
    AdminRow,
    NameHolder,
    NameListing,
    NameRow,
    NameWaiter,
    find_admin,
    format_names,
    format_table,
)
from .commands import (
    EVICT_OPTIONS,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    TOKEN_ENV,
    add_admin_commands,
    host_argument,
    hosts_argument,
    port_argument,
    positive_count_argument,
    prefix_behind_dashes,
    run_admin,
    seconds_argument,
)
from .protocol import (
    ADMIN_PREFIX,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MAX_SEQUENCE,
    MAX_TOKEN_LENGTH,
    MIN_PREFIX,
    MIN_TOKEN_LENGTH,
    NONCE_BYTES,
    PREFIX_SHOWN,
    RESOURCE_WIDTH,
    AdminRefusedError,
    Challenge,
    admin_proof,
    check_prefix,
    check_token,
    read_token,
)
from .server import LandlordAdmin, admin_object_id, register_admin

__all__ = [
    "LandlordAdmin", "AdminClient", "AdminRefusedError", "AdminRow", "AdminListing", "Challenge",
    "NameRow", "NameHolder", "NameWaiter", "NameListing", "format_names",
    "admin_object_id", "register_admin", "find_admin", "read_token", "check_token", "check_prefix", "admin_proof",
    "format_table", "add_admin_commands", "EVICT_OPTIONS", "prefix_behind_dashes", "run_admin",
    "ADMIN_PREFIX", "MIN_TOKEN_LENGTH", "MAX_TOKEN_LENGTH", "MIN_PREFIX", "PREFIX_SHOWN", "DEFAULT_LIMIT",
    "MAX_LIMIT", "RESOURCE_WIDTH", "TOKEN_ENV", "DEFAULT_TIMEOUT", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE",
    "NONCE_BYTES", "MAX_SEQUENCE", "positive_count_argument", "host_argument", "hosts_argument", "port_argument",
    "seconds_argument",
]
