"""landlord.replication.terms: a replica's terms of leadership, without etcd or threads.

The term the election wants becomes the loaded one only while it is still wanted and the replica is not
closing; a loaded term answers only while the election confirms its revision and it is not stale; a
stale term, one no longer wanted, or another term wanted is taken out for the loading thread to change;
closing ends the loading thread's wait.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest

from landlord import Landlord
from landlord.replication.terms import RELOAD_PAUSE, Terms


@dataclasses.dataclass
class Election:
    """What the terms ask of an election: the revision of the term it confirms now (None: none)."""

    revision: int | None = None


@pytest.fixture
def landlords() -> Iterator[list[Landlord]]:
    made: list[Landlord] = []
    yield made
    for landlord in made:
        landlord.close()


def test_a_wanted_term_is_begun_and_answers_while_the_election_confirms_it(landlords: list[Landlord]) -> None:
    terms = Terms()
    terms.elected(7)
    assert terms.next_change() == (7, None)  # nothing loaded yet: load the term at 7
    landlords.append(Landlord(reaper="lazy"))
    assert terms.begin(7, landlords[0])
    assert terms.term is not None and (terms.term.revision, terms.term.landlord) == (7, landlords[0])
    assert terms.answering(Election(7)) is terms.term
    assert terms.answering(Election(8)) is None  # another term confirmed: fenced
    assert terms.answering(Election(None)) is None  # none confirmed
    assert terms.answering(None) is None  # not started


def test_a_term_no_longer_wanted_is_not_begun(landlords: list[Landlord]) -> None:
    terms = Terms()
    terms.elected(7)
    terms.elected(9)  # a later term, before the first was loaded
    landlords.append(Landlord(reaper="lazy"))
    assert not terms.begin(7, landlords[0]) and terms.term is None
    terms.deposed("lost the key")
    assert not terms.begin(9, landlords[0]) and terms.term is None
    terms.elected(9)
    terms.closing = True
    assert not terms.begin(9, landlords[0]) and terms.term is None


def test_a_stale_or_ended_term_is_taken_out_for_the_loading_thread(landlords: list[Landlord]) -> None:
    terms = Terms()
    terms.elected(7)
    landlords.append(Landlord(reaper="lazy"))
    assert terms.begin(7, landlords[0])
    term = terms.term
    assert term is not None
    terms.went_stale(term)
    assert term.stale and terms.answering(Election(7)) is None
    assert terms.next_change() == (7, term) and terms.term is None  # the same term, loaded again
    landlords.append(Landlord(reaper="lazy"))
    assert terms.begin(7, landlords[1])
    again = terms.term
    terms.deposed("lost the key")
    assert terms.next_change() == (None, again) and terms.term is None  # no term wanted: only closed


def test_closing_ends_the_loading_threads_wait() -> None:
    terms = Terms()
    terms.closing = True
    assert terms.next_change() is None


def test_a_pause_before_loading_again_ends_early_when_the_wanted_term_changes() -> None:
    terms = Terms()
    terms.elected(7)
    started = time.monotonic()
    terms.pause_unless_changed(7)
    assert time.monotonic() - started >= RELOAD_PAUSE * 0.9  # etcd did not answer: wait before asking again
    terms.elected(8)
    started = time.monotonic()
    terms.pause_unless_changed(7)
    assert time.monotonic() - started < RELOAD_PAUSE / 2
