# The generated protobuf messages and gRPC stubs pyetcd re-exports (only what landlord uses).
from collections.abc import Iterator, Sequence
from typing import Any

class ResponseHeader:
    cluster_id: int
    member_id: int
    revision: int
    raft_term: int

class _KeyValue:  # mvccpb.KeyValue: not a name pyetcd.etcdrpc exports
    key: bytes
    create_revision: int
    mod_revision: int
    version: int
    value: bytes
    lease: int

class _Event:  # mvccpb.Event: not a name pyetcd.etcdrpc exports
    type: int
    kv: _KeyValue

class RangeResponse:
    header: ResponseHeader
    kvs: Sequence[_KeyValue]
    more: bool
    count: int

class TxnResponse:
    header: ResponseHeader
    succeeded: bool
    responses: Sequence[ResponseOp]

class ResponseOp:
    response_range: RangeResponse
    response_txn: TxnResponse
    def WhichOneof(self, oneof_group: str) -> str | None: ...

class LeaseKeepAliveResponse:
    header: ResponseHeader
    ID: int
    TTL: int

class WatchCreateRequest:
    def __init__(self, key: bytes = ..., range_end: bytes = ..., start_revision: int = ...,
                 progress_notify: bool = ..., prev_kv: bool = ...) -> None: ...

class WatchRequest:
    def __init__(self, create_request: WatchCreateRequest | None = ...) -> None: ...

class WatchResponse:
    header: ResponseHeader
    watch_id: int
    created: bool
    canceled: bool
    compact_revision: int
    cancel_reason: str
    events: Sequence[_Event]

class WatchStub:
    def __init__(self, channel: Any) -> None: ...
    # a gRPC stream call: an iterator of WatchResponse that can be cancel()led
    def Watch(self, request_iterator: Iterator[WatchRequest], timeout: float | None = ...) -> Any: ...

class StatusResponse:
    header: ResponseHeader
    leader: int
    raftTerm: int

class StatusRequest:
    def __init__(self) -> None: ...

class MaintenanceStub:
    def __init__(self, channel: Any) -> None: ...
    def Status(self, request: StatusRequest, timeout: float | None = ...) -> StatusResponse: ...

class RangeRequest:
    def __init__(self, key: bytes = ..., range_end: bytes = ..., limit: int = ..., revision: int = ...) -> None: ...

class KVStub:
    def __init__(self, channel: Any) -> None: ...
    def Range(self, request: RangeRequest, timeout: float | None = ...) -> RangeResponse: ...
