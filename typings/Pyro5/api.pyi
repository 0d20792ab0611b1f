from .client import Proxy as Proxy
from .core import URI as URI
from .core import locate_ns as locate_ns
from .server import Daemon as Daemon
from .server import behavior as behavior
from .server import expose as expose
from .server import oneway as oneway
from .server import serve as serve
