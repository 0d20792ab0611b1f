"""Remote events of the lookup service: what a client registers for and what it is sent.

A client registers interest in the services matching a template (``notify``)
and names a listener: a Pyro5 object in its own process with a
``notify(event)`` method. It gets an :class:`EventRegistration` back and its
listener is sent :class:`ServiceEvent` values, each saying which transition
(``TRANSITION_*``) an item made. These values cross the wire
(:mod:`lookup.wire`); the service's side, which delivers them, is
:mod:`lookup.service.mailer`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .item import Expiry

__all__ = [
    "TRANSITION_MATCH_NOMATCH", "TRANSITION_NOMATCH_MATCH", "TRANSITION_MATCH_MATCH", "ALL_TRANSITIONS",
    "ServiceEvent", "EventRegistration",
]


TRANSITION_MATCH_NOMATCH = 1  #: an item that matched no longer does (changed, cancelled, or expired)
TRANSITION_NOMATCH_MATCH = 2  #: an item now matches that did not (new, or changed)
TRANSITION_MATCH_MATCH = 4    #: an item that matched still does, but changed
#: the three transitions at once
ALL_TRANSITIONS = TRANSITION_MATCH_NOMATCH | TRANSITION_NOMATCH_MATCH | TRANSITION_MATCH_MATCH


@dataclasses.dataclass(frozen=True, slots=True, eq=False)  # eq=False: equal only to itself, as before
class ServiceEvent:
    """A change to the services matching an event registration's template.

    Args:
        event_id: the registration this event belongs to.
        sequence_number: increases by one with every event of the registration.
        handback: what the client gave when registering, returned unchanged.
        service_id: the service that changed.
        transition: one of the ``TRANSITION_*`` constants.
        item: the service item as it is now, or ``None`` once it is gone.
        expiry: when the item's registration ends (with ``item``; ``None``: not known,
            as from a lookup service before expiries were sent).
    """

    event_id: int
    sequence_number: int
    handback: Any = dataclasses.field(repr=False)  # the client's own: of any size
    service_id: str
    transition: int
    item: Any = dataclasses.field(repr=False)
    expiry: Expiry | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)  # eq=False: equal only to itself, as before
class EventRegistration:
    """The answer to ``notify``: the registration's id, its lease, and the sequence number so far.

    Args:
        event_id: identifies the registration; every event of it carries this id.
        lease: the registration's lease; cancel it, or stop renewing it, to stop the events.
        sequence_number: the number of the last event before this registration.
    """

    event_id: int
    lease: Any
    sequence_number: int = dataclasses.field(repr=False)
