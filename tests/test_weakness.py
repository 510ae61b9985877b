"""The weakness trainer: surprise moments, weak domains by the thresholds, lessons as candidates."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import Memory, Settings
from graphmem.cli import _register_groups, app
from graphmem.domains import GENERAL, DomainRef, domains_of, parse_domain
from graphmem.errors import InvalidInputError
from graphmem.llm import OfflineLLM
from graphmem.llm.prompts_weakness import weakness_request
from graphmem.llm.schemas import WeaknessLessons
from tests.conftest import FakeClock
from tests.helpers_domains import showing, showings

_register_groups()
README = Path(__file__).resolve().parent.parent / "README.md"


def by_domain(mem: Memory) -> dict[str, object]:
    return {d.domain: d for d in mem.weaknesses(train=False).domains}


def test_a_domain_is_a_tool_topic_or_objective_type() -> None:
    assert [d.key for d in domains_of("send_email", ["email style", "email style"], "outreach")] == [
        "tool:send_email", "topic:email style", "objective_type:outreach"]
    assert domains_of(None, [], None) == [GENERAL]
    assert parse_domain("tool:send_email") == DomainRef(kind="tool", name="send_email")
    for bad in ("send_email", "planet:mars", "tool:", 3):
        with pytest.raises(InvalidInputError, match="kind:name"):
            parse_domain(bad)


def test_surprises_and_weak_domains_follow_the_thresholds(mem: Memory, clock: FakeClock) -> None:
    t = clock.now
    weak = mem.add_learning("Use the v1 billing API", tool="billing", confidence=0.75)
    showings(mem, weak.id, "fffss", t)  # gaps .75 x3, .25 x2: average .55 > .5, 3 surprises
    even = mem.add_learning("Keep emails short", tool="send_email", confidence=0.75)
    showings(mem, even.id, "ffss", t)  # average exactly .5: not above the threshold
    lone = mem.add_learning("Book the aisle seat", tool="book_flight", confidence=0.75)
    showings(mem, lone.id, "f", t)  # average .75 but one surprise only
    coin = mem.add_learning("Retry once on 429", tool="http", confidence=0.5)
    showings(mem, coin.id, "ff", t)  # gap exactly .5: no surprise
    shy = mem.add_learning("Attach the invoice PDF", tool="attach", confidence=0.2)
    showings(mem, shy.id, "ss", t)  # a distrusted learning that worked twice: gap .8
    got = by_domain(mem)
    assert {k: (d.showings, d.surprises, d.avg_gap, d.weak) for k, d in got.items()} == {  # type: ignore[attr-defined]
        "tool:billing": (5, 3, 0.55, True),
        "tool:send_email": (4, 2, 0.5, False),
        "tool:book_flight": (1, 1, 0.75, False),
        "tool:http": (2, 0, 0.5, False),
        "tool:attach": (2, 2, 0.8, True),
    }
    report = mem.weaknesses(train=False)
    assert [d.domain for d in report.weak] == ["tool:attach", "tool:billing"]  # weakest first
    assert {m.outcome for m in report.weak[0].moments} == {"success"}
    assert {m.outcome for m in report.weak[1].moments} == {"failure"}
    assert report.lessons == [] and not report.trained
    stricter = mem.for_user(mem.user)
    stricter.settings = Settings(weakness_min_surprises=3)
    assert [d.domain for d in stricter.weaknesses(train=False).weak] == ["tool:billing"]


def test_lessons_are_linked_candidates_created_once(mem: Memory, clock: FakeClock) -> None:
    bad = mem.add_learning("Emails to Dana must be long paragraphs", tool="send_email", entities=["Dana"],
                           confidence=0.9)
    apps = [showing(mem, bad.id, False, clock.now + timedelta(minutes=i), query=f"Email Dana {i}",
                    reasons=("too long",)) for i in range(3)]
    first = mem.weaknesses()
    assert first.trained and [l.domain for l in first.created] == ["tool:send_email"]
    lesson = mem.get_learning(first.created[0].learning_id)
    assert (lesson.status, lesson.source_type, lesson.kind, lesson.tool, lesson.entities) == (
        "candidate", "weakness", "rule", "send_email", ["Dana"])
    assert "Emails to Dana must be long paragraphs" in lesson.content
    assert "too long" in (lesson.applies_when or "")
    rows = mem.cypher("MATCH (c:Learning {id: $id})-[:WEAKNESS_OF]->(d:Domain)-[:COVERS]->(t:Tool) "
                      "RETURN d.id AS d, t.name AS t", {"id": lesson.id})
    assert rows == [{"d": "alice|tool:send_email", "t": "send_email"}]
    linked = mem.cypher("MATCH (c:Learning {id: $id})-[s:SURPRISED_BY]->(a:Application) RETURN a.id AS a, "
                        "s.learning_id AS l, s.gap AS g", {"id": lesson.id})
    assert sorted(r["a"] for r in linked) == sorted(apps) and {r["l"] for r in linked} == {bad.id}
    assert mem.cypher("MATCH (c:Learning {id: $id})-[:DERIVED_FROM]->(m:Learning) RETURN m.id AS m",
                      {"id": lesson.id}) == [{"m": bad.id}]
    assert lesson.id not in [x.learning.id for x in mem.context("Email Dana", tool="send_email").learnings]

    again = mem.weaknesses()  # the same outcomes: nothing new
    assert again.lessons == [] and [d.domain for d in again.weak] == ["tool:send_email"]
    assert len(mem.learnings(status="candidate")) == 1

    showing(mem, bad.id, False, clock.now + timedelta(hours=1), query="Email Dana again")
    third = mem.weaknesses()  # a new surprise re-derives the same lesson: no second learning
    assert [(l.learning_id, l.created, l.episodes) for l in third.lessons] == [(lesson.id, False, 1)]
    assert mem.get_learning(lesson.id).validations == lesson.validations + 1
    assert len(mem.learnings(status="candidate")) == 1


def test_the_prediction_is_the_confidence_when_shown(mem: Memory) -> None:
    l = mem.add_learning("Always CC the finance lead on emails to Priya", tool="send_email", entities=["Priya"],
                         confidence=0.9)
    ctx = mem.context("Send Priya a note on the budget", tool="send_email")
    assert [x.learning.id for x in ctx.learnings] == [l.id]
    mem.record_outcome(ctx.id, success=False)
    mem.update_learning(l.id, confidence=0.1)  # what it is worth now is not what it predicted
    [d] = mem.weaknesses(train=False).domains
    assert d.moments[0].confidence == pytest.approx(0.9) and d.avg_gap == pytest.approx(0.9)


def test_top_limits_training_and_run_cycle_trains(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(clock=clock)
    for tool in ("a_tool", "b_tool"):
        l = mem.add_learning(f"Always do the {tool} thing", tool=tool, confidence=0.9)
        showings(mem, l.id, "ff" if tool == "a_tool" else "fff", clock.now)
    assert [l.domain for l in mem.weaknesses(top=1).created] == ["tool:b_tool"]  # the weakest only
    report = mem.run_cycle()
    assert [c.reason.split(":")[0] for c in report.weakness] == ["tool"] and "a_tool" in report.weakness[0].reason
    assert any(r["section"] == "weakness" for r in report.rows())
    off = make_memory(settings=Settings(weakness_in_cycle=False), clock=clock)
    assert off.run_cycle().weakness == []


def test_bad_input_is_refused(mem: Memory) -> None:
    for kwargs in ({"top": 0}, {"top": "2"}, {"top": True}, {"train": "yes"}):
        with pytest.raises(InvalidInputError):
            mem.weaknesses(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="at least one surprise"):
        weakness_request("the x tool", [])
    with pytest.raises(InvalidInputError):
        Settings(weakness_min_gap=1.5)


def test_offline_lessons_are_deterministic() -> None:
    surprises = [{"learning": "Use bullet points", "confidence": 0.9, "outcome": "failure", "query": "q1",
                  "reasons": ["implicit", "too long"]},
                 {"learning": "Attach the PDF", "confidence": 0.1, "outcome": "success", "query": "q2"},
                 {"learning": "Use bullet points", "confidence": 0.8, "outcome": "failure", "query": "q3"}]
    req = weakness_request("the send_email tool", surprises, n=2)
    assert req.task == "weakness" and "<data-surprises>" in req.prompt
    out = OfflineLLM().generate(req, WeaknessLessons)
    assert out == OfflineLLM().generate(req, WeaknessLessons)
    assert [l.sources for l in out.lessons] == [[0, 2], [1]]
    assert out.lessons[0].content.startswith('In the send_email tool, check that "Use bullet points"')
    assert "too long" in (out.lessons[0].applies_when or "") and "implicit" not in (out.lessons[0].applies_when or "")
    assert out.lessons[1].content.startswith('In the send_email tool, apply "Attach the PDF"')


def run_cli(db: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--db", str(db), "--embedder", "hash", "--user", "alice", *args])
    assert result.exit_code == code, result.output
    return result.output


def test_weaknesses_command(make_memory: Callable[..., Memory], db_path: Path, clock: FakeClock) -> None:
    mem = make_memory()
    l = mem.add_learning("Run EXPLAIN first before querying the orders table", tool="run_sql", confidence=0.95)
    showings(mem, l.id, "ff", clock.now)
    mem.close()
    analysed = json.loads(run_cli(db_path, "weaknesses", "--analyze", "--json"))
    assert [d["domain"] for d in analysed["domains"] if d["weak"]] == ["tool:run_sql"] and analysed["lessons"] == []
    text = run_cli(db_path, "weaknesses")
    assert "surprise moments in weak domains" in text and "lessons stored" in text and "tool:run_sql" in text
    assert json.loads(run_cli(db_path, "weaknesses", "--json"))["lessons"] == []  # already covered
    assert "--top must be >= 1" in run_cli(db_path, "weaknesses", "--top", "0", code=1)


def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## How it watches its own domains\n", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)[0]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), scope)  # the README's own example
    scope["mem"].close()  # type: ignore[attr-defined]
    lines = out.getvalue().splitlines()
    assert lines[0] == "tool:send_email 3 0.875 True"
    assert lines[1].startswith('candidate In the send_email tool, check that "Emails to Dana')
    assert "low_effectiveness" in lines[2]


class _Repeating:
    """An LLM that gives the same lesson twice and points at a surprise that does not exist."""

    name = "repeating"

    def generate(self, request: object, schema: type) -> object:
        lesson = {"content": "Check the orders table schema before querying it", "sources": [0, 99]}
        return schema.model_validate({"lessons": [lesson, lesson]})


def test_a_repeated_lesson_in_one_answer_is_stored_once(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(llm=_Repeating())
    l = mem.add_learning("Query the orders table directly", tool="run_sql", confidence=0.9)
    showings(mem, l.id, "ff", clock.now)
    report = mem.weaknesses()
    assert [(x.created, x.episodes) for x in report.lessons] == [(True, 1)]
    [lesson] = mem.learnings(status="candidate")
    assert lesson.validations == 0
    # the surprise the answer named nowhere is linked to its first lesson: not asked about again
    assert len(mem.cypher("MATCH (c:Learning)-[s:SURPRISED_BY]->(:Application) RETURN s.gap AS g")) == 2
    assert mem.weaknesses().lessons == []


class _Failing:
    name = "failing"

    def generate(self, request: object, schema: type) -> object:
        from graphmem.errors import LLMError

        raise LLMError("the model is down")


def test_a_failing_llm_writes_nothing_and_the_cycle_goes_on(make_memory: Callable[..., Memory],
                                                             clock: FakeClock) -> None:
    mem = make_memory(llm=_Failing(), clock=clock)
    l = mem.add_learning("Query the orders table directly", tool="run_sql", confidence=0.9)
    showings(mem, l.id, "ff", clock.now)
    from graphmem.errors import LLMError

    with pytest.raises(LLMError):
        mem.weaknesses()
    assert mem.learnings(status="candidate") == []
    report = mem.run_cycle()
    assert report.weakness == [] and any("weakness trainer skipped" in w for w in report.warnings)
    assert [s.domain for s in mem.domains(record=False).weak] == ["tool:run_sql"]
