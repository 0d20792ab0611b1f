from typing import Any

class Lease:
    id: int
    ttl: int
    def __init__(self, lease_id: int, ttl: int, etcd_client: Any = ...) -> None: ...
    def revoke(self) -> None: ...
