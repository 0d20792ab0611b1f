import builtins
from typing import Any

DAEMON_NAME: str
NAMESERVER_NAME: str

class URI:
    protocol: str
    object: str
    host: str | None
    port: int | None
    sockname: str | None
    location: str
    def __init__(self, uri: str | URI) -> None: ...
    def __eq__(self, other: builtins.object) -> bool: ...
    def __hash__(self) -> int: ...

def locate_ns(host: str | None = ..., port: int | None = ..., broadcast: bool = ...) -> Any: ...
