"""The landlord facade: ``import landlord`` (and ``import lookup``) loads the core alone; the extras on first use.

Each check runs in a fresh interpreter, so that what this test process has
imported already does not hide what an import loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import landlord

# the extras: replication over etcd, admin, metrics, the renewal service, serving, the revocation receiver
EXTRAS = ("landlord.replication", "landlord.replication.election", "landlord.replication.etcdstore",
          "landlord.replication.replicated", "landlord.replication.terms", "landlord.admin", "landlord.admin.protocol",
          "landlord.admin.server", "landlord.admin.client", "landlord.admin.commands", "landlord.metrics",
          "landlord.renewalservice", "landlord.renewalservice.service", "landlord.renewalservice.sets",
          "landlord.renewalservice.ledger", "landlord.renewalservice.client", "landlord.serving",
          "landlord.transport.frameserver", "landlord.transport.admission", "landlord.transport.workers",
          "landlord.transport.connection", "landlord.transport.refusals", "landlord.transport.budget",
          "landlord.transport.multiplex", "landlord.holder.revocations", "landlord.remotefence",
          "landlord.testing",
          "landlord.testing.etcd", "lookup.service.replicated", "lookup.service.server", "pyetcd", "prometheus_client")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(printed.stdout))


@pytest.mark.parametrize("code", ["import landlord", "import lookup", "from landlord import LeaseRenewalManager"])
def test_importing_the_facade_loads_no_extra(code: str) -> None:
    assert loaded_after(code) & set(EXTRAS) == set()


@pytest.mark.parametrize("code", ["import landlord", "from landlord import LeaseRenewalManager, LandlordLease",
                                  "import landlord.holder.renewal, landlord.wire", "import landlord.aio"])
def test_a_holder_process_loads_no_grantor_module(code: str) -> None:
    assert {name for name in loaded_after(code) if name.startswith("landlord.grantor")} == set()


def test_a_lookup_client_process_loads_no_service_module_and_no_asyncio() -> None:
    loaded = loaded_after("import lookup")
    assert {name for name in loaded if name.startswith(("lookup.service", "landlord.grantor"))} == set()
    assert "asyncio" not in loaded  # the service's event mailer is what needs it
    assert {"lookup.client.join", "lookup.client.cache", "lookup.discovery.multicast"} <= loaded


def test_the_grantor_loads_on_first_use_of_its_names() -> None:
    loaded = loaded_after("import landlord; landlord.Landlord")
    assert "landlord.grantor.landlord" in loaded and "landlord.grantor.store" in loaded
    assert "landlord.serving" not in loaded


def test_an_extra_loads_on_first_use_of_its_name_and_is_the_modules_own() -> None:
    loaded = loaded_after("import landlord; landlord.serve_landlord")
    assert "landlord.serving" in loaded and "landlord.renewalservice" not in loaded
    from landlord.replication.replicated import ReplicatedLandlord
    from landlord.serving import serve_landlord

    assert landlord.serve_landlord is serve_landlord and landlord.ReplicatedLandlord is ReplicatedLandlord


def test_every_public_name_resolves_and_an_unknown_one_is_an_attribute_error() -> None:
    for name in landlord.__all__:
        assert getattr(landlord, name) is not None, name
    assert set(landlord.__all__) <= set(dir(landlord))
    with pytest.raises(AttributeError, match="no attribute 'serve_lanlord'"):
        landlord.serve_lanlord  # noqa: B018 (the attribute access is the test)
    import lookup

    for name in lookup.__all__:
        assert getattr(lookup, name) is not None, name
    with pytest.raises(AttributeError, match="has no attribute"):
        lookup.NoSuchThing  # noqa: B018


def test_a_submodule_not_yet_imported_is_imported_on_first_use() -> None:
    loaded = loaded_after("import landlord\nassert landlord.serving.SERVER_TYPE == 'guarded'")
    assert "landlord.serving" in loaded
