"""Event search: the query without its anchored names, session relevance, and the
LoCoMo weight fit that never sees the conversations it reports."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from benchmarks.locomo_tune import GRID, evaluate, fit, load
from graphmem import Memory
from graphmem.config import SETTING_RANGES, Settings
from graphmem.embed import HashEmbedder
from graphmem.retrieve.event_arrays import strip_names

_VECTOR_ONLY = {
    "search_weight_fulltext": 0.0, "search_weight_entity": 0.0, "search_weight_mention": 0.0,
    "search_weight_time": 0.0, "search_weight_neighbour": 0.0, "search_weight_hop": 0.0,
    "search_weight_date": 0.0, "search_weight_tool": 0.0, "search_weight_prf": 0.0, "search_weight_address": 0.0,
}


def _mem(tmp_path, **settings: object) -> Memory:
    mem = Memory(tmp_path / "db.kuzu", user="u", embedder=HashEmbedder())
    mem.settings = mem.settings.model_copy(update=settings)
    return mem


def _turns(mem: Memory) -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    rows = [
        ("Melanie", "I signed up for a pottery class, it is like therapy."),
        ("Caroline", "Thanks, Melanie! What do you like about it?"),
        ("Melanie", "We went camping at the beach with the kids."),
        ("Caroline", "Melanie, that sounds lovely. I am researching adoption agencies."),
        ("Melanie", "Running helps me destress after work."),
    ]
    mem.record_events([
        {"kind": "message", "content": text, "role": who, "entities": [who], "session_id": "s1",
         "created_at": when + timedelta(minutes=i)}
        for i, (who, text) in enumerate(rows)
    ])


def test_strip_names_removes_names_and_possessives() -> None:
    assert strip_names("What do Melanie's kids like?", ["Melanie"]) == "What do kids like?"
    assert strip_names("Where did caroline and Mel go?", ["Caroline", "Mel"]) == "Where did and go?"
    assert strip_names("Melanoma risk", ["Mel"]) == "Melanoma risk"  # whole words only
    assert strip_names("no names here", []) == "no names here"


def test_stripped_query_cosine_replaces_the_full_one_at_weight_one(tmp_path) -> None:
    with _mem(tmp_path, **_VECTOR_ONLY, search_weight_stripped=1.0) as mem:
        _turns(mem)
        def ranked(query: str) -> list[tuple[str, float]]:
            # score > 0: the vector signal found it (a full-text reason alone does not count here)
            return [(h.id, round(h.score, 9)) for h in mem.search(query, over="events", k=5) if h.score > 0]

        blended = ranked("What activities does Melanie like?")
        mem.settings = mem.settings.model_copy(update={"search_weight_stripped": 0.0})
        plain_stripped = ranked("What activities does like?")
        plain_full = ranked("What activities does Melanie like?")
    assert blended == plain_stripped
    assert blended and blended != plain_full


def test_session_relevance_lifts_the_turns_of_the_matching_session(tmp_path) -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    items = []
    for session, words in (("s1", "pottery clay kiln glaze"), ("s2", "weather rain wind cloud")):
        for i, word in enumerate(words.split()):
            items.append({"kind": "message", "content": f"we talked about {word} today", "role": "Ann",
                          "session_id": session, "created_at": when + timedelta(minutes=i)})
    with _mem(tmp_path, **_VECTOR_ONLY, search_weight_session=0.0) as mem:
        mem.record_events(items)
        off = {h.node.content: h.score for h in mem.search("pottery clay kiln", over="events", k=8)}
        mem.settings = mem.settings.model_copy(update={"search_weight_session": 0.5})
        on = {h.node.content: h.score for h in mem.search("pottery clay kiln", over="events", k=8)}
    glaze, rain = "we talked about glaze today", "we talked about rain today"
    # the turn the query does not name, in the pottery session, gains; the weather turn does not
    assert on.get(glaze, 0.0) > off.get(glaze, 0.0)
    assert on.get(rain, 0.0) == off.get(rain, 0.0)


def _write_locomo(path, n: int) -> None:
    samples = []
    for c in range(n):
        turns = [{"speaker": "Ann" if t % 2 == 0 else "Bob", "dia_id": f"D1:{t + 1}",
                  "text": f"conversation {c} turn {t} about {'pottery' if t == 2 else 'weather'}"} for t in range(6)]
        qa = [{"question": "Who talked about pottery?", "evidence": ["D1:3"], "category": 1},
              {"question": "What did Bob say about the weather?", "evidence": ["D1:2", "D1:4"], "category": 4}]
        samples.append({"sample_id": f"conv-{c}", "qa": qa,
                        "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns}})
    (path / "locomo10.json").write_text(json.dumps(samples))


def test_locomo_fit_uses_only_the_tuning_conversations(tmp_path) -> None:
    _write_locomo(tmp_path, 3)
    tune, _ = load(tmp_path, [0, 1], None, embedder=HashEmbedder())
    held, _ = load(tmp_path, [2], None, embedder=HashEmbedder())
    assert {q.ci for q in tune} == {0, 1} and {q.ci for q in held} == {2}
    base = Settings()
    fitted, score = fit(tune, base, rounds=1, objective="overall")
    assert score >= evaluate(tune, base)["overall"]
    assert set(fitted) <= set(GRID)
    assert all(name in SETTING_RANGES for name in GRID)
    got = evaluate(held, base.model_copy(update=fitted))
    assert 0.0 <= got["overall"] <= 100.0 and "multi-hop" in got
