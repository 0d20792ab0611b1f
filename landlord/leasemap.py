"""Where :class:`~landlord.LeaseMap` was imported from before it moved into :mod:`landlord.lease`.

The lease module makes maps and maps hold leases; one module for both keeps
them from importing each other. ``from landlord.leasemap import LeaseMap``
keeps working.
"""

from __future__ import annotations

from .lease import LeaseMap

__all__ = ["LeaseMap"]
