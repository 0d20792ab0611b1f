from typing import Any

MSG_CONNECT: int
MSG_CONNECTOK: int
MSG_CONNECTFAIL: int
MSG_INVOKE: int
MSG_RESULT: int
MSG_PING: int
FLAGS_EXCEPTION: int
FLAGS_COMPRESSED: int
FLAGS_ONEWAY: int
FLAGS_BATCH: int
FLAGS_KEEPSERIALIZED: int
PROTOCOL_VERSION: int

class SendingMessage:
    data: bytes
    def __init__(self, msgtype: int, flags: int, seq: int, serializer_id: int, payload: bytes,
                 annotations: dict[str, bytes] | None = ...) -> None: ...

class ReceivingMessage:
    type: int
    flags: int
    seq: int
    serializer_id: int
    data_size: int
    annotations_size: int
    data: Any
    annotations: dict[str, Any]
    def __init__(self, header: bytes, payload: bytes | None = ...) -> None: ...
    def add_payload(self, payload: bytes) -> None: ...
