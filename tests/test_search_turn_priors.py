"""Event search: the turn priors (a longer turn than most gains, a turn that asks a question
loses), each a weight in Settings that leaves the ranking unchanged at 0."""

from __future__ import annotations

import pytest

from graphmem import Memory
from tests.test_search_speaker import _mem as _speaker_mem
from tests.test_search_speaker import _record

# signals that depend on the best hits are off, so a prior moves only the turn it applies to
_QUIET = {"search_weight_rocchio": 0.0, "search_weight_prf": 0.0, "search_weight_hop": 0.0,
          "search_weight_neighbour": 0.0, "search_weight_length": 0.0, "search_weight_question_turn": 0.0}


def _mem(tmp_path, **settings: object) -> Memory:
    return _speaker_mem(tmp_path, **{**_QUIET, **settings})


def _scores(mem: Memory, query: str) -> dict[str, tuple[float, list[str]]]:
    return {h.node.content: (h.score, h.reasons) for h in mem.search(query, over="events", k=10)}


_ASKED = [
    ("s1", "Ann", "Did you finish the lake painting for the fair?"),
    ("s1", "Bob", "Yes, the lake painting for the fair is done."),
    ("s2", "Ann", "The weather was grey and cold all week."),
    ("s3", "Bob", "Our team won the football match on Sunday."),
]


def test_question_turn_penalty_ranks_the_statement_above_the_question(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        _record(mem, _ASKED)
        off = _scores(mem, "lake painting for the fair")
        mem.settings = mem.settings.model_copy(update={"search_weight_question_turn": 0.5})
        on = _scores(mem, "lake painting for the fair")
    question, answer = _ASKED[0][2], _ASKED[1][2]
    assert on[question][0] == pytest.approx(off[question][0] - 0.5)
    assert on[answer][0] == pytest.approx(off[answer][0])
    assert max(off, key=lambda c: off[c][0]) == question  # the question shares more words
    assert max(on, key=lambda c: on[c][0]) == answer
    assert any(r.startswith("turn: asks a question") for r in on[question][1])
    assert not any(r.startswith("turn:") for r in off[question][1])


_LENGTHS = [
    ("s1", "Ann", "Pottery class, nice."),
    ("s2", "Ann", "I signed up for a pottery class last month and we made bowls, two mugs and a vase for my mother."),
    ("s3", "Bob", "The weather was grey and cold all week."),
    ("s4", "Bob", "Our team won the football match on Sunday."),
    ("s5", "Ann", "Sounds fun."),
]


def test_length_prior_lifts_the_longer_turn_and_zero_keeps_the_order(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        _record(mem, _LENGTHS)
        off = _scores(mem, "pottery class")
        mem.settings = mem.settings.model_copy(update={"search_weight_length": 0.5})
        on = _scores(mem, "pottery class")
        mem.settings = mem.settings.model_copy(update={"search_weight_length": 0.0})
        again = _scores(mem, "pottery class")
    short, long_ = _LENGTHS[0][2], _LENGTHS[1][2]
    assert on[long_][0] - off[long_][0] > 0 > on[short][0] - off[short][0]
    assert max(off, key=lambda c: off[c][0]) == short
    assert max(on, key=lambda c: on[c][0]) == long_
    assert any(r.startswith("turn: a longer turn") for r in on[long_][1])
    assert list(again) == list(off)  # weight 0: the ranking without the prior
    assert [again[c][0] for c in again] == [off[c][0] for c in off]


def test_turn_priors_follow_appended_events(tmp_path) -> None:
    with _mem(tmp_path, search_weight_question_turn=0.5) as mem:
        _record(mem, _ASKED)
        mem.search("lake painting finished", over="events", k=4)  # caches the priors
        mem.record_event("message", "Was the lake painting hard?", role="Bob", entities=["Bob"], session_id="s4")
        hits = _scores(mem, "lake painting hard")
    assert any(r.startswith("turn: asks a question") for r in hits["Was the lake painting hard?"][1])
