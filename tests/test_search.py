"""Memory.search over events (and learnings / all), record_events, and bad input."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graphmem import Memory
from graphmem.errors import InvalidInputError
from graphmem.models import Event
from graphmem.retrieve.event_arrays import asks_when, has_time_expression, named_entities
from graphmem.retrieve.search import Hit

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

DIALOGUE = [
    ("Caroline", "s1", "Hey Mel! Good to see you! How have you been?"),
    ("Melanie", "s1", "Swamped with the kids and work. What's up with you?"),
    ("Caroline", "s1", "I went to an LGBTQ support group yesterday and it was powerful."),
    ("Melanie", "s1", "Wow, that sounds inspiring. What happened there?"),
    ("Caroline", "s1", "The transgender stories were so moving."),
    ("Melanie", "s2", "I ran a charity race for mental health last Saturday."),
    ("Caroline", "s2", "That is wonderful, I am proud of you."),
    ("Melanie", "s2", "Thanks! Next I want to take the kids camping in the mountains."),
]


def _items(user_tag: str = "") -> list[dict[str, Any]]:
    return [
        {
            "kind": "message", "content": text, "role": who, "entities": [who], "session_id": sid,
            "created_at": T0 + timedelta(days=17 if sid == "s2" else 0), "metadata": {"dia_id": f"D{i}", "tag": user_tag},
        }
        for i, (who, sid, text) in enumerate(DIALOGUE)
    ]


@pytest.fixture
def chat(make_memory: Callable[..., Memory]) -> Memory:
    mem = make_memory("alice")
    mem.record_events(_items("alice"))
    return mem


def _ev(hit: Hit) -> Event:
    assert isinstance(hit.node, Event)
    return hit.node


def _dia(hits: list[Hit]) -> list[str]:
    return [str(_ev(h).metadata["dia_id"]) for h in hits]


def test_lexical_match_and_metadata_round_trip(chat: Memory) -> None:
    hits = chat.search("charity race", over="events", k=3)
    assert hits and _dia(hits)[0] == "D5"
    top = hits[0]
    assert top.kind == "event" and top.id == top.node.id
    assert _ev(top).metadata == {"dia_id": "D5", "tag": "alice"}
    assert any(r.startswith("fulltext") for r in top.reasons)
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_entity_named_in_query_and_passed(chat: Memory) -> None:
    hits = chat.search("what did Melanie say?", over="events", k=8)
    melanie = [h for h in hits if "graph: via entity Melanie" in h.reasons]
    assert melanie and {_ev(h).role for h in melanie} == {"Melanie"}
    only = chat.search("", over="events", entities=["Caroline"], k=10)
    assert len(only) == 4 and {_ev(h).role for h in only} == {"Caroline"}


def test_session_neighbour_expansion(chat: Memory, make_memory: Callable[..., Memory]) -> None:
    # the same speaker's next turn (D4) would join them through the continuation signal
    chat.settings = chat.settings.model_copy(update={"search_weight_continuation": 0.0})
    hits = chat.search("LGBTQ support group", over="events", k=3)
    assert _dia(hits)[0] == "D2"
    # the turns next to the strong hit, in the same session, follow it
    assert set(_dia(hits)[1:3]) == {"D1", "D3"}
    assert any(r.startswith("session: next to a strong hit") for r in hits[1].reasons)
    # without the neighbour signal the neighbours carry no such reason
    chat.settings = chat.settings.model_copy(update={"search_weight_neighbour": 0.0})
    plain = chat.search("LGBTQ support group", over="events", k=3)
    assert not any(r.startswith("session") for h in plain for r in h.reasons)


def test_neighbours_stay_inside_their_session(chat: Memory) -> None:
    # D4 ends session s1 and D5 starts s2: adjacent in insertion order, not in conversation
    layout = chat.store.event_layout("alice")
    pos = {str(e.metadata["dia_id"]): layout.position[e.id] for e in chat.store.events_by_ids(layout.order).values()}
    index = layout.neighbour_index(1)
    assert set(index[pos["D4"]]) == {pos["D3"], -1}  # no neighbour after D4 (-1: none)
    assert set(index[pos["D5"]]) == {pos["D6"], -1}
    assert set(index[pos["D2"]]) == {pos["D1"], pos["D3"]}
    assert layout.neighbours(layout.order[pos["D5"]], 2) == [(layout.order[pos["D6"]], 1), (layout.order[pos["D7"]], 2)]


def test_time_words_lift_answers_to_when_questions(chat: Memory) -> None:
    hits = chat.search("When did Caroline go to the support group?", over="events", k=2)
    assert _dia(hits)[0] == "D2"
    assert "time: holds a date or time expression" in hits[0].reasons
    assert asks_when("When did she go?") and not asks_when("What did she say?")
    assert has_time_expression("back in May 2022") and not has_time_expression("lovely painting")


def test_user_isolation(chat: Memory, make_memory: Callable[..., Memory]) -> None:
    bob = make_memory("bob")
    bob.record_events(_items("bob"))
    bob.record_event("message", "Bob's secret charity race plan", role="Bob", entities=["Bob"])
    for over in ("events", "all"):
        for q in ("charity race", "secret plan", "Bob"):
            hits = chat.search(q, over=over, k=20)
            assert all(h.node.user_id == "alice" for h in hits)
    assert not chat.search("", over="events", entities=["Bob"])
    assert any("secret" in _ev(h).content for h in bob.search("secret plan", over="events", k=3))


def test_record_events_equals_one_by_one(make_memory: Callable[..., Memory], tmp_path: Any) -> None:
    one = make_memory("one")
    batch = make_memory("batch")
    singles = [one.record_event(it.pop("kind"), it.pop("content"), **it) for it in _items("x")]
    many = batch.record_events(_items("x"))
    assert len(many) == len(singles)
    strip = {"id", "user_id"}
    assert [e.model_dump(exclude=strip) for e in many] == [e.model_dump(exclude=strip) for e in singles]
    for mem in (one, batch):
        assert _dia(mem.search("charity race", over="events", k=1)) == ["D5"]
    got = batch.store.get_event(many[3].id)
    assert got.model_dump() == many[3].model_dump()
    assert batch.record_events([]) == []


def test_record_events_is_all_or_nothing(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory("carol")
    good = {"kind": "message", "content": "hello"}
    with pytest.raises(InvalidInputError, match="item 1"):
        mem.record_events([good, {"kind": "message", "content": ""}])
    with pytest.raises(InvalidInputError, match="unknown field"):
        mem.record_events([dict(good, colour="red")])
    with pytest.raises(InvalidInputError, match="'kind'"):
        mem.record_events(["hello"])  # type: ignore[list-item]
    assert mem.search("hello", over="events") == []


def test_tool_anchor(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory("dan")
    mem.record_event("tool_call", "send the quarterly report", tool="send_email")
    mem.record_event("tool_call", "look up the weather", tool="web_search")
    hits = mem.search("", over="events", tool="send_email")
    assert [_ev(h).tool_name for h in hits] == ["send_email"]
    assert hits[0].reasons == ["graph: via tool send_email"]


def test_over_learnings_and_all(chat: Memory) -> None:
    learning = chat.add_learning("Caroline prefers short messages about the support group", tool="send_email")
    hits = chat.search("support group", over="learnings", k=5)
    assert [h.id for h in hits] == [learning.id] and hits[0].kind == "learning"
    mixed = chat.search("support group", over="all", k=5)
    assert {h.kind for h in mixed} == {"learning", "event"}
    assert max(h.score for h in mixed) == pytest.approx(1.0)
    assert chat.cypher("MATCH (a:Application) RETURN count(a) AS n")[0]["n"] == 0


def test_bad_input(chat: Memory) -> None:
    with pytest.raises(InvalidInputError, match="query text, or a tool"):
        chat.search("", over="events")
    with pytest.raises(InvalidInputError, match="query text"):
        chat.search("   ")
    for k in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="k must be"):
            chat.search("race", k=k)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="learnings, events, all"):
        chat.search("race", over="memories")
    with pytest.raises(InvalidInputError, match="must be a string"):
        chat.search(42)  # type: ignore[arg-type]
    huge = "charity race " * 2000  # truncated to Settings.max_query_chars, not an error
    assert _dia(chat.search(huge, over="events", k=1)) == ["D5"]
    assert chat.search("", over="events", entities=["Nobody"]) == []  # an unseen entity: no hits


def test_named_entities_whole_words() -> None:
    known = ["Mel", "Melanie", "Acme Corp"]
    assert named_entities("did melanie call acme corp?", known) == ["Melanie", "Acme Corp"]
    assert named_entities("Melody", known) == []


def test_empty_memory(make_memory: Callable[..., Memory]) -> None:
    assert make_memory("erin").search("anything", over="events") == []


def test_cli_search(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from graphmem import HashEmbedder, cli
    from graphmem.llm import OfflineLLM

    path = tmp_path / "cli.kuzu"
    with Memory(path, user="alice", embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
        mem.record_events(_items("alice"))
    cli._register_groups()
    runner = CliRunner()
    base = ["--db", str(path), "--user", "alice", "--embedder", "hash", "search"]
    out = runner.invoke(cli.app, [*base, "charity race", "--over", "events", "--k", "2", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert len(rows) == 2 and rows[0]["node"]["metadata"]["dia_id"] == "D5" and rows[0]["reasons"]
    table = runner.invoke(cli.app, [*base, "charity race", "--over", "events"])
    assert table.exit_code == 0 and "search over events" in table.output
    bad = runner.invoke(cli.app, [*base, "race", "--over", "nope"])
    assert bad.exit_code == 1 and "learnings, events, all" in bad.output
