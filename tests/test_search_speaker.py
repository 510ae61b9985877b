"""Event search: the addressed-turn penalty (a turn that names the asked-about speaker without
being theirs), pseudo-relevance feedback through the best hits' rarer words, and feedback in
embedding space (Rocchio)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from graphmem import Memory
from graphmem.embed import HashEmbedder


def _mem(tmp_path, **settings: object) -> Memory:
    mem = Memory(tmp_path / "db.kuzu", user="u", embedder=HashEmbedder())
    mem.settings = mem.settings.model_copy(update=settings)
    return mem


def _record(mem: Memory, rows: list[tuple[str, str, str]]) -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    mem.record_events([
        {"kind": "message", "content": text, "role": who, "entities": [who], "session_id": session,
         "created_at": when + timedelta(minutes=i)}
        for i, (session, who, text) in enumerate(rows)
    ])


_TURNS = [
    ("s1", "Melanie", "I painted a sunrise over the lake last weekend."),
    ("s1", "Caroline", "Wow, Melanie! That painting of the lake is lovely."),
    ("s2", "Caroline", "I went to a support group meeting yesterday."),
    ("s2", "Melanie", "My kids love the dinosaur exhibit at the museum."),
]


def test_addressed_turn_penalty_lowers_only_the_other_speakers_turn_naming_them(tmp_path) -> None:
    with _mem(tmp_path, search_weight_address=0.0, search_weight_rocchio=0.0, search_weight_length=0.0) as mem:
        _record(mem, _TURNS)
        off = {h.node.content: h.score for h in mem.search("What did Melanie paint?", over="events", k=4)}
        mem.settings = mem.settings.model_copy(update={"search_weight_address": 0.3})
        on = {h.node.content: h.score for h in mem.search("What did Melanie paint?", over="events", k=4)}
    addressed, own = _TURNS[1][2], _TURNS[0][2]
    assert on[addressed] < off[addressed]
    assert on[own] == off[own]
    assert max(on, key=lambda c: on[c]) == own


def test_word_feedback_lifts_a_turn_sharing_the_best_hits_rarer_words(tmp_path) -> None:
    rows = [
        ("s1", "Ann", "We baked sourdough bread with rye flour and a starter."),
        ("s2", "Ann", "The starter needs rye flour every morning."),
        ("s3", "Ann", "The weather was grey and cold all week."),
        ("s4", "Ann", "Our team won the football match on Sunday."),
        ("s5", "Ann", "I read a novel about sailors and whales."),
    ]
    with _mem(tmp_path, search_weight_prf=0.0, search_weight_neighbour=0.0, search_prf_docs=1,
              search_weight_rocchio=0.0) as mem:
        _record(mem, rows)
        off = {h.node.content: (h.score, h.reasons) for h in mem.search("sourdough bread", over="events", k=5)}
        mem.settings = mem.settings.model_copy(update={"search_weight_prf": 0.5})
        on = {h.node.content: (h.score, h.reasons) for h in mem.search("sourdough bread", over="events", k=5)}
    fed = rows[1][2]
    assert on[fed][0] > off.get(fed, (0.0, []))[0]
    assert any(r.startswith("words:") for r in on[fed][1])
    assert not any(r.startswith("words:") for r in on[rows[0][2]][1])  # the hit the words came from


def test_embedding_feedback_lifts_turns_like_the_best_hits(tmp_path) -> None:
    rows = [
        ("s1", "Ann", "We baked sourdough bread with rye flour and a starter."),
        ("s2", "Ann", "The starter needs rye flour and water every single morning."),
        ("s3", "Ann", "The weather was grey and cold all week."),
        ("s4", "Ann", "Our team won the football match on Sunday."),
        ("s5", "Ann", "I read a novel about sailors and whales."),
    ]
    with _mem(tmp_path, search_weight_rocchio=0.0, search_weight_prf=0.0, search_weight_neighbour=0.0,
              search_rocchio_docs=1) as mem:
        _record(mem, rows)
        off = {h.node.content: (h.score, h.reasons) for h in mem.search("sourdough bread", over="events", k=5)}
        mem.settings = mem.settings.model_copy(update={"search_weight_rocchio": 0.5})
        on = {h.node.content: (h.score, h.reasons) for h in mem.search("sourdough bread", over="events", k=5)}
    fed = rows[1][2]
    assert on[fed][0] > off[fed][0]
    assert any(r.startswith("vector feedback:") for r in on[fed][1])
    assert not any(r.startswith("vector feedback:") for r in off[fed][1])


def test_embedding_feedback_from_a_speakers_turns_stays_on_that_speaker(tmp_path) -> None:
    with _mem(tmp_path, search_weight_rocchio=0.0, search_rocchio_docs=1) as mem:
        _record(mem, _TURNS)
        off = {h.node.content: h.score for h in mem.search("Melanie painted a sunrise over the lake", over="events", k=4)}
        mem.settings = mem.settings.model_copy(update={"search_weight_rocchio": 0.5})
        on = {h.node.content: h.score for h in mem.search("Melanie painted a sunrise over the lake", over="events", k=4)}
    melanie = [t for _, who, t in _TURNS if who == "Melanie"]
    caroline = [t for _, who, t in _TURNS if who == "Caroline"]
    assert max(off, key=lambda c: off[c]) in melanie  # the one best hit is Melanie's own turn
    assert all(on[c] == off[c] for c in caroline)
    assert all(on[c] >= off[c] for c in melanie) and any(on[c] > off[c] for c in melanie)
