"""Entities from text, their merge with stored entities, and the multi-hop event search."""

from __future__ import annotations

from datetime import UTC, datetime

from graphmem import Memory
from graphmem.embed import HashEmbedder
from graphmem.retrieve.entities import extract_entities, merge_names, normalise_entity


def _mem(tmp_path, user: str = "u", **settings: object) -> Memory:
    tmp_path.mkdir(parents=True, exist_ok=True)
    mem = Memory(tmp_path / "db.kuzu", user=user, embedder=HashEmbedder())
    if settings:
        mem.settings = mem.settings.model_copy(update=settings)
    return mem


def _names(text: str, known: tuple[str, ...] = ()) -> dict[str, str]:
    return {m.name: m.kind for m in extract_entities(text, known)}


def test_extracts_names_places_and_dates_but_not_sentence_starters() -> None:
    found = _names("Hey Caroline, we flew to New York on 8 May, 2023 and met Dr. Seuss at the Museum of Modern Art.")
    assert found["Caroline"] == "name"
    assert found["New York"] == "name"
    assert found["Dr. Seuss"] == "name"
    assert found["Museum of Modern Art"] == "name"
    assert found["8 May, 2023"] == "date"
    assert "Hey" not in found and "We" not in found
    # a capitalised word that only starts a sentence is not a name, unless it is known to be one
    assert "Painting" not in _names("Painting is fun. I did it on Friday.")
    assert _names("Painting is fun. I did it on Friday.")["Friday"] == "date"
    assert "Mel" in _names("Mel went out.", known=("Mel",))
    assert "melanie" in _names("Melanie went out.", known=("melanie",))  # the known spelling wins
    assert "Melanie" not in _names("Melanie went out.")
    # "may" the verb is not a date
    assert not any(kind == "date" for kind in _names("You may like it, Jon.").values())


def test_normalisation_merges_possessives_case_and_existing_spellings() -> None:
    assert normalise_entity("Caroline's") == normalise_entity("caroline") == "caroline"
    assert normalise_entity("James’") == "james"
    assert normalise_entity("  New   York. ") == "new york"
    assert merge_names(["sweden", "Sweden's", "Oslo"], {"sweden": "Sweden"}) == ["Sweden", "Oslo"]
    keys = [m.key for m in extract_entities("What is Caroline's job? caroline said it to CAROLINE", ("Caroline",))]
    assert keys.count("caroline") == 1


def test_ingest_links_events_to_the_entities_their_text_names(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        mem.record_event("message", "A gift from my grandma in Sweden.", role="Caroline", entities=["Caroline"])
        mem.record_events([
            {"kind": "message", "content": "sweden's winters are long, Caroline", "role": "Mel", "entities": ["Mel"]},
            {"kind": "message", "content": "Caroline loves Oslo too.", "role": "Mel", "entities": ["Mel"]},
        ])
        rows = mem.store.event_mention_rows("u")
        names = sorted({name for _, name in rows})
        # the lower-case "sweden's" merged into the stored "Sweden"; sentence-start Caroline known
        assert names == ["Caroline", "Mel", "Oslo", "Sweden"]
        per_event: dict[str, set[str]] = {}
        for ident, name in rows:
            per_event.setdefault(ident, set()).add(name)
        assert sorted(map(sorted, per_event.values())) == [
            ["Caroline", "Mel", "Oslo"], ["Caroline", "Mel", "Sweden"], ["Caroline", "Sweden"],
        ]
        # the caller's entities stay as passed on the event itself
        assert [e.entities for e in mem.store.recent_events("u", limit=5)].count(["Mel"]) == 2


def test_extraction_can_be_switched_off(tmp_path) -> None:
    with _mem(tmp_path, extract_entities=False) as mem:
        mem.record_event("message", "We met in Sweden.", role="Caroline", entities=["Caroline"])
        assert {name for _, name in mem.store.event_mention_rows("u")} == {"Caroline"}


def _hop_corpus(mem: Memory) -> None:
    mem.record_events([
        {"kind": "message", "content": "My grandma lives in Sweden and knits.", "session_id": "s1"},
        {"kind": "message", "content": "Unrelated chatter about lunch.", "session_id": "s1"},
        {"kind": "message", "content": "Flights to Sweden were cheap in spring.", "session_id": "s2"},
        {"kind": "message", "content": "Nothing much today.", "session_id": "s3"},
    ])


def test_second_hop_follows_rare_entities_of_the_best_hits(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        _hop_corpus(mem)
        hits = mem.search("grandma knits", over="events", k=4)
        assert hits[0].node.content.startswith("My grandma")
        hop = [h for h in hits if any("second hop via Sweden" in r for r in h.reasons)]
        assert [h.node.content for h in hop] == ["Flights to Sweden were cheap in spring."]
        mem.settings = mem.settings.model_copy(update={"search_weight_hop": 0.0})
        off = mem.search("grandma knits", over="events", k=4)
        assert not any("second hop" in r for h in off for r in h.reasons)


def test_second_hop_is_bounded(tmp_path) -> None:
    with _mem(tmp_path, search_hop_max_events=1) as mem:
        _hop_corpus(mem)  # Sweden is named by 2 events > the bound of 1: not followed
        hits = mem.search("grandma knits", over="events", k=4)
        assert not any("second hop" in r for h in hits for r in h.reasons)
    with _mem(tmp_path / "b", search_hop_seeds=0) as mem:
        _hop_corpus(mem)
        hits = mem.search("grandma knits", over="events", k=4)
        assert not any("second hop" in r for h in hits for r in h.reasons)


def test_second_hop_and_entities_stay_inside_the_user(tmp_path) -> None:
    with _mem(tmp_path, user="alice") as alice:
        _hop_corpus(alice)
        bob = alice.for_user("bob")
        bob.record_event("message", "Sweden again, and my grandma knits in Sweden.", session_id="b1")
        bob.record_event("message", "In Oslo, Sweden: my grandma knits there.", session_id="b2")
        assert all(h.node.user_id == "bob" for h in bob.search("grandma knits", over="events", k=10))
        hits = alice.search("grandma knits Sweden", over="events", k=10)
        assert hits and all(h.node.user_id == "alice" for h in hits)
        assert {name for _, name in alice.store.event_mention_rows("alice")} == {"Sweden"}
        assert {name for _, name in alice.store.event_mention_rows("bob")} == {"Sweden", "Oslo"}


def test_questions_naming_a_period_prefer_events_from_that_session(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        mem.record_events([
            {"kind": "message", "content": "We went hiking with the kids.", "session_id": "s1",
             "created_at": datetime(2023, 5, 8, tzinfo=UTC)},
            {"kind": "message", "content": "We went hiking with the kids.", "session_id": "s2",
             "created_at": datetime(2023, 8, 1, tzinfo=UTC)},
        ])
        hits = mem.search("Where did we go hiking in August 2023?", over="events", k=2)
        assert hits[0].node.session_id == "s2"
        assert any("period the query names" in r for r in hits[0].reasons)
        assert not any("period the query names" in r for r in hits[1].reasons)
        hits = mem.search("Where did we go hiking in May 2023?", over="events", k=2)
        assert hits[0].node.session_id == "s1"


def test_short_forms_merge_into_the_one_linked_name_they_abbreviate(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        mem.record_events([
            {"kind": "message", "content": "Thanks, Mel! See you soon.", "role": "Caroline", "entities": ["Caroline"]},
            {"kind": "message", "content": "Bye Caro, and hi to Oliver.", "role": "Melanie", "entities": ["Melanie"]},
        ])
        names = {name for _, name in mem.store.event_mention_rows("u")}
        assert names == {"Caroline", "Melanie", "Oliver"}
