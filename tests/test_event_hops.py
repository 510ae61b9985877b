"""Event search: the continuation signal (the same speaker's next and previous turns of the best
hits gain a share of their score; graphmem/retrieve/event_hops.py)."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem import Memory
from graphmem.retrieve.event_hops import continuation, same_speaker_turns
from tests.test_search_speaker import _mem as _speaker_mem
from tests.test_search_speaker import _record

# signals that depend on the best hits are off, so only the continuation moves a score
_QUIET = {"search_weight_rocchio": 0.0, "search_weight_prf": 0.0, "search_weight_hop": 0.0,
          "search_weight_neighbour": 0.0, "search_weight_continuation": 0.0}

_STORY = [
    ("s1", "Tim", "I went to a castle during my trip to the UK last Friday."),
    ("s1", "John", "Wow, that sounds like a great trip! How was it?"),
    ("s1", "Tim", "The architecture was unbelievable and the gardens were huge."),
    ("s1", "John", "I have never seen anything like it."),
    ("s2", "Tim", "My basketball team lost the game on Sunday."),
    ("s2", "John", "The weather was grey and cold all week."),
]


def _mem(tmp_path, **settings: object) -> Memory:
    return _speaker_mem(tmp_path, **{**_QUIET, **settings})


def _scores(mem: Memory, query: str) -> dict[str, tuple[float, list[str]]]:
    return {h.node.content: (h.score, h.reasons) for h in mem.search(query, over="events", k=10)}


def test_same_speaker_turns_skip_the_other_speaker_and_stop_at_the_session(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        _record(mem, _STORY)
        mem.record_event("message", "A note without a speaker.", session_id="s2")
        layout = mem.store.event_layout(mem.user)
        at = {layout.content[p]: p for p in range(len(layout))}
        first, second, reply = at[_STORY[0][2]], at[_STORY[2][2]], at[_STORY[1][2]]
        assert same_speaker_turns(layout, first, 2) == [second]
        assert same_speaker_turns(layout, second, 2) == [first]
        assert same_speaker_turns(layout, first, 1) == []  # the next turn is John's
        assert same_speaker_turns(layout, reply, 2) == [at[_STORY[3][2]]]
        assert same_speaker_turns(layout, at["A note without a speaker."], 2) == []
        assert same_speaker_turns(layout, at[_STORY[4][2]], 2) == []  # s2 has no other Tim turn


def test_continuation_lifts_the_same_speakers_next_turn_of_the_best_hit(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        _record(mem, _STORY)
        off = _scores(mem, "castle trip UK")
        mem.settings = mem.settings.model_copy(update={"search_weight_continuation": 0.5,
                                                       "search_continuation_seeds": 1})
        on = _scores(mem, "castle trip UK")
        mem.settings = mem.settings.model_copy(update={"search_weight_continuation": 0.0})
        again = _scores(mem, "castle trip UK")
    hit, story, reply = _STORY[0][2], _STORY[2][2], _STORY[1][2]
    assert max(off, key=lambda c: off[c][0]) == hit
    assert on[story][0] == pytest.approx(off[story][0] + 0.5)  # the top hit's share is 1
    assert on[reply][0] == pytest.approx(off[reply][0])  # the other speaker's reply: unchanged
    assert on[hit][0] == pytest.approx(off[hit][0])  # a hit does not lift itself
    assert any(r.startswith("conversation: the same speaker's turn") for r in on[story][1])
    assert not any(r.startswith("conversation: the same speaker's turn") for r in off[story][1])
    assert [again[c][0] for c in again] == [off[c][0] for c in off]  # weight 0: the ranking without it


def test_continuation_is_zero_without_weight_seeds_or_positive_scores(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        _record(mem, _STORY)
        layout = mem.store.event_layout(mem.user)
        final = np.linspace(1.0, 0.1, len(layout))
        on = mem.settings.model_copy(update={"search_weight_continuation": 0.3, "search_continuation_seeds": 2})
        assert continuation(final, layout, on).max() > 0
        assert not continuation(final, layout, on.model_copy(update={"search_weight_continuation": 0.0})).any()
        assert not continuation(final, layout, on.model_copy(update={"search_continuation_seeds": 0})).any()
        assert not continuation(-final, layout, on).any()


def test_continuation_follows_appended_turns(tmp_path) -> None:
    with _mem(tmp_path, search_weight_continuation=0.5, search_continuation_seeds=1) as mem:
        _record(mem, _STORY[:2])
        mem.search("castle trip UK", over="events", k=4)  # builds the neighbour index
        mem.record_event("message", "The gardens there were huge.", role="Tim", entities=["Tim"], session_id="s1")
        hits = _scores(mem, "castle trip UK")
    assert any(r.startswith("conversation: the same speaker's turn") for r in hits["The gardens there were huge."][1])
