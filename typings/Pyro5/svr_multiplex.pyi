import selectors
import socket
from collections.abc import Iterable
from typing import Any

class SocketServer_Multiplex:
    sock: socket.socket
    selector: selectors.BaseSelector
    daemon: Any
    shutting_down: bool
    locationStr: str
    def events(self, eventsockets: Iterable[Any]) -> None: ...
    def close(self) -> None: ...
    def shutdown(self) -> None: ...
