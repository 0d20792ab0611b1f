# Type stubs for the parts of etcd-sdk-python (module pyetcd, 0.0.x) that landlord.election,
# landlord.etcdstore and landlord.testing_etcd use: it ships no type information, and mypy --strict
# checks our calls against these. tests/test_election.py holds every name here to the installed package.
from . import etcdrpc as etcdrpc
from . import exceptions as exceptions
from . import transactions as transactions
from .client import Endpoint as Endpoint
from .client import MultiEndpointEtcd3Client as MultiEndpointEtcd3Client
from .exceptions import Etcd3Exception as Etcd3Exception
from .leases import Lease as Lease
