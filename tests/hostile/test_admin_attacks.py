"""Hostile admin callers against each server that serves an admin object: nobody's lease is touched.

The landlord, the lookup service, the renewal service and a replica each serve
the same :class:`~landlord.admin.LandlordAdmin` beside them when given an admin
token (tests/hostile/targets.py). Anyone may ask it for a challenge; only a
proof made with the token for that connection's challenge lists or evicts.
Against each, while the canary renews (``targets.watched``):

- bytes of a legitimate listing, captured by a relay as an eavesdropper would
  have them, replayed on a new connection list nothing; the captured proof is
  refused for an eviction, challenged or not, and a proof used once is refused
  on its own connection too; the token never crosses the wire;
- a flood of challenges, each followed by a wrong proof of an eviction of the
  canary's lease, is refused call by call and holds nobody up.

What the command line sends (``python -m landlord list``), replayed, is tried in
tests/landlord/test_admin_commands.py.
"""

from __future__ import annotations

import threading

import Pyro5.api
import Pyro5.protocol
import Pyro5.serializers
import pytest
from attacks import PYRO_HEADER, RecordingRelay, decoded, messages_in, replay
from etcd_fixtures import etcd_cluster  # noqa: F401 (a fixture)
from targets import ADMIN_TOKEN, Target, admin_target, watched  # noqa: F401 (a fixture)

from landlord.admin import AdminClient, AdminRefusedError, admin_proof

pytestmark = pytest.mark.slow

WRONG_TOKEN = ADMIN_TOKEN[:-1] + "X"  # as long as the token, one character off
FLOODERS = 10  # connections, each asking this many challenges and sending a wrong proof after each:
CHALLENGES = 50


def _listed(target: Target) -> set[str]:
    """The cookie prefixes the admin object lists, asked with the token."""
    with AdminClient(target.admin_uri, token=ADMIN_TOKEN) as admin:
        return {row.cookie for row in admin.list().rows}


def _captured_call(sent: bytes) -> tuple[str, dict[str, object]]:
    """The method and the keyword arguments (the proof) of the last call in a captured stream."""
    invoke = messages_in(sent)[-1]
    received = Pyro5.protocol.ReceivingMessage(invoke[:PYRO_HEADER])
    received.add_payload(invoke[PYRO_HEADER:])
    _, method, _, keywords = Pyro5.serializers.serializers_by_id[received.serializer_id].loadsCall(
        bytes(received.data))
    return method, keywords


def test_captured_admin_bytes_replayed_list_and_evict_nothing(admin_target: Target) -> None:
    prefix = admin_target.cookie_prefix
    with watched(admin_target), RecordingRelay(("127.0.0.1", admin_target.port)) as relay:
        relayed = f"PYRO:{admin_target.admin_object}@127.0.0.1:{relay.port}"
        with AdminClient(relayed, token=ADMIN_TOKEN) as admin:  # a legitimate call, through the relay
            assert prefix in {row.cookie for row in admin.list().rows}
        [(sent, answered)] = relay.recorded()

        answers = replay(admin_target.port, sent)
        refusal = decoded(answers[-1])
        assert answers[-1].flags & Pyro5.protocol.FLAGS_EXCEPTION, f"the replay was answered: {refusal!r:.300}"
        assert isinstance(refusal, AdminRefusedError) and "replayed from another connection" in str(refusal)
        assert not any(prefix.encode() in bytes(answer.data) for answer in answers)
        admin_target.process.wait_for(r"refused an admin call \(list\) from 127\.0\.0\.1:\d+: a wrong proof")

        method, captured = _captured_call(sent)  # the listing's proof, for an eviction
        assert method == "list" and set(captured) == {"sequence", "proof"}
        with Pyro5.api.Proxy(admin_target.admin_uri) as proxy:
            with pytest.raises(AdminRefusedError, match="a proof without a challenge on this connection"):
                proxy.evict(prefix, **captured)
            proxy.challenge()
            with pytest.raises(AdminRefusedError, match="a wrong proof"):
                proxy.evict(prefix, **captured)

        with Pyro5.api.Proxy(admin_target.admin_uri) as proxy:  # on its own connection, a proof serves once
            nonce = proxy.challenge()
            proof = admin_proof(ADMIN_TOKEN, nonce, 1, admin_target.admin_object, "list", [10])
            assert proxy.list(10, sequence=1, proof=proof)
            with pytest.raises(AdminRefusedError, match="a replayed proof: sequence number 1 is used up"):
                proxy.list(10, sequence=1, proof=proof)

        assert ADMIN_TOKEN.encode() not in sent and ADMIN_TOKEN.encode() not in answered
        assert prefix in _listed(admin_target)  # while the canary still renews: nothing was evicted


def test_a_flood_of_challenges_and_wrong_proofs_holds_no_holder_up(admin_target: Target) -> None:
    prefix = admin_target.cookie_prefix
    refused: list[int] = []
    failures: list[BaseException] = []

    def flood() -> None:
        try:
            with Pyro5.api.Proxy(admin_target.admin_uri) as proxy:
                for sequence in range(1, CHALLENGES + 1):
                    nonce = proxy.challenge()
                    proof = admin_proof(WRONG_TOKEN, nonce, sequence, admin_target.admin_object, "evict", [prefix])
                    with pytest.raises(AdminRefusedError, match="a wrong proof"):
                        proxy.evict(prefix, sequence=sequence, proof=proof)
                    refused.append(sequence)
        except BaseException as exc:  # reported by the test, not lost in a thread
            failures.append(exc)

    with watched(admin_target):
        flooders = [threading.Thread(target=flood, daemon=True) for _ in range(FLOODERS)]
        for flooder in flooders:
            flooder.start()
        for flooder in flooders:
            flooder.join(60)
        assert not any(flooder.is_alive() for flooder in flooders)
        assert not failures, failures[:3]
        assert len(refused) == FLOODERS * CHALLENGES
        assert prefix in _listed(admin_target)  # while the canary still renews: nothing was evicted
