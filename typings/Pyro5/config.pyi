# Pyro5.config is an object (Pyro5's Configuration) whose attributes are the
# settings; `from Pyro5 import config` gives it. Modelled as module attributes.
from typing import Any

SERVERTYPE: str
COMMTIMEOUT: float
MAX_MESSAGE_SIZE: int
THREADPOOL_SIZE: int
THREADPOOL_SIZE_MIN: int
SERIALIZER: str
NATHOST: str | None
NATPORT: int
HOST: str
SOCK_NODELAY: bool
SSL: bool
SSL_SERVERCERT: str
SSL_SERVERKEY: str
SSL_SERVERKEYPASSWD: str
SSL_REQUIRECLIENTCERT: bool
SSL_CLIENTCERT: str
SSL_CLIENTKEY: str
SSL_CLIENTKEYPASSWD: str
SSL_CACERTS: str
def __getattr__(name: str) -> Any: ...
