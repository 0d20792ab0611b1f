"""The part of Pyro5.callcontext landlord uses."""

from typing import Any

current_context: Any
