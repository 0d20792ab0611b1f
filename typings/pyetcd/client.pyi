from collections.abc import Iterable, Iterator
from typing import Any

from . import etcdrpc
from .leases import Lease
from .transactions import BaseCompare, Create, Delete, Get, Mod, Put, Txn, Value, Version

class Transactions:
    value: type[Value]
    version: type[Version]
    create: type[Create]
    mod: type[Mod]
    put: type[Put]
    get: type[Get]
    delete: type[Delete]
    txn: type[Txn]

class KVMetadata:
    key: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease_id: int
    response_header: etcdrpc.ResponseHeader

class Endpoint:
    host: str
    netloc: str
    def __init__(self, host: str, port: int, secure: bool = ..., creds: Any = ..., time_retry: float = ...,
                 opts: Any = ...) -> None: ...
    def fail(self) -> None: ...
    def close(self) -> None: ...
    def is_failed(self) -> bool: ...

class MultiEndpointEtcd3Client:
    timeout: float | None
    endpoints: dict[str, Endpoint]
    transactions: Transactions
    def __init__(self, endpoints: Iterable[Endpoint] | None = ..., timeout: float | None = ...,
                 user: str | None = ..., password: str | None = ..., failover: bool = ...) -> None: ...
    @property
    def endpoint_in_use(self) -> Endpoint | None: ...
    @property
    def channel(self) -> Any: ...
    def close(self) -> None: ...
    def get(self, key: str | bytes) -> tuple[bytes, KVMetadata] | tuple[None, None]: ...
    # range_start up to range_end (exclusive); revision 0 reads the latest; limit 0 (or None) is no limit
    def get_range_response(self, range_start: str | bytes, range_end: str | bytes, sort_order: str | None = ...,
                           sort_target: str = ..., *, limit: int | None = ..., revision: int | None = ...,
                           serializable: bool = ..., keys_only: bool = ...,
                           count_only: bool = ...) -> etcdrpc.RangeResponse: ...
    def put(self, key: str | bytes, value: str | bytes, lease: Lease | int | None = ...,
            prev_kv: bool = ...) -> Any: ...
    def delete(self, key: str | bytes) -> bool: ...
    def transaction(self, compare: list[BaseCompare], success: list[Any] | None = ...,
                    failure: list[Any] | None = ...) -> tuple[bool, list[Any]]: ...
    def lease(self, ttl: int, lease_id: int | None = ...) -> Lease: ...
    def revoke_lease(self, lease_id: int) -> None: ...
    def refresh_lease(self, lease_id: int) -> Iterator[etcdrpc.LeaseKeepAliveResponse]: ...
