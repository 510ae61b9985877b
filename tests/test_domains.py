"""Domain evolution: per-domain figures, snapshots, events past the threshold, gaps, insights --domains."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import Memory, Settings
from graphmem.cli import _register_groups, app
from graphmem.errors import InvalidInputError
from tests.conftest import FakeClock
from tests.helpers_domains import showing, showings

_register_groups()


def stats(mem: Memory, record: bool = True) -> dict[str, object]:
    return {st.domain: st for st in mem.domains(record=record).domains}


def test_figures_gaps_and_snapshots_are_stored_and_linked(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(clock=clock)
    mem.record_event("tool_call", "web_search('CRM competitors')", tool="web_search")  # used, nothing learned
    mem.add_learning("Keep emails to Raj under 120 words", tool="send_email", topics=["email style"], confidence=0.6)
    bad = mem.add_learning("Query the orders table directly", tool="run_sql", confidence=0.8)
    showings(mem, bad.id, "fff", clock.now)  # followed 0 %
    report = mem.domains()
    got = {st.domain: st for st in report.domains}
    assert set(got) == {"tool:web_search", "tool:send_email", "topic:email style", "tool:run_sql"}
    sql = got["tool:run_sql"]
    assert (sql.learnings, sql.live_learnings, sql.showings, sql.followed, sql.unhelpful, sql.follow_rate) == (1, 1, 3, 0, 3, 0.0)
    assert (sql.surprises, sql.weak, sql.avg_confidence) == (3, True, 0.8)
    assert got["tool:send_email"].avg_confidence == 0.6 and got["tool:send_email"].follow_rate is None
    gaps = {(g.domain, g.kind, g.severity) for g in report.gaps}
    assert gaps == {("tool:web_search", "no_insights", "high"), ("tool:send_email", "unused_knowledge", "medium"),
                    ("topic:email style", "unused_knowledge", "medium"), ("tool:run_sql", "low_effectiveness", "high")}
    assert report.recorded and report.snapshots == 4 and report.events == []
    rows = mem.cypher(
        "MATCH (d:Domain)-[:HAS_SNAPSHOT]->(s:DomainSnapshot) WHERE s.id = d.snapshot_id "
        "OPTIONAL MATCH (d)-[:HAS_GAP]->(g:DomainGap) RETURN d.id AS d, s.showings AS n, s.follow_rate AS f, "
        "g.kind AS gap ORDER BY d.id")
    assert {r["d"]: (r["n"], r["f"], r["gap"]) for r in rows} == {
        "alice|tool:run_sql": (3, 0.0, "low_effectiveness"), "alice|tool:send_email": (0, None, "unused_knowledge"),
        "alice|tool:web_search": (0, None, "no_insights"), "alice|topic:email style": (0, None, "unused_knowledge")}
    covers = mem.cypher("MATCH (d:Domain)-[:COVERS]->(n) RETURN d.id AS did, label(n) AS kind, n.name AS name ORDER BY did")
    assert [(r["kind"], r["name"]) for r in covers] == [
        ("Tool", "run_sql"), ("Tool", "send_email"), ("Tool", "web_search"), ("Topic", "email style")]

    again = mem.domains()  # nothing new: no snapshot, the same gaps
    assert again.snapshots == 0 and again.events == [] and {(g.domain, g.kind) for g in again.gaps} == {
        (d, k) for d, k, _ in gaps}
    assert mem.cypher("MATCH (s:DomainSnapshot) RETURN count(s) AS n") == [{"n": 4}]
    mem.add_learning("Run EXPLAIN first", tool="run_sql", confidence=0.9)
    assert mem.domains().snapshots == 1  # only the domain that changed


def test_the_follow_rate_event_appears_only_past_five_points(mem: Memory, clock: FakeClock) -> None:
    l = mem.add_learning("Send an idempotency key on every Stripe POST", tool="http_request", confidence=0.5)
    showings(mem, l.id, "sssssfffff", clock.now)  # 5/10 = 50 %
    assert stats(mem)["tool:http_request"].follow_rate == 0.5  # type: ignore[attr-defined]
    showings(mem, l.id, "ssssssffff", clock.now + timedelta(hours=1))  # 11/20 = 55 %: exactly 5 points
    report = mem.domains()
    assert report.snapshots == 1 and report.events == []
    showings(mem, l.id, "sssss", clock.now + timedelta(hours=2))  # 16/25 = 64 %
    report = mem.domains()
    [event] = report.events
    assert (event.domain, event.kind, event.old, event.new) == ("tool:http_request", "effectiveness_shift", 0.55, 0.64)
    assert [e.kind for e in report.recent_events] == ["effectiveness_shift"]
    stored = mem.cypher("MATCH (d:Domain)-[:HAS_EVENT]->(e:DomainEvent) RETURN d.id AS d, e.kind AS k, e.new AS n")
    assert stored == [{"d": "alice|tool:http_request", "k": "effectiveness_shift", "n": 0.64}]
    looser = mem.for_user(mem.user)
    looser.settings = Settings(domain_shift_min=0.2)
    showings(mem, l.id, "ffff", clock.now + timedelta(hours=3))  # 16/29 = 55 %: 9 points, under 20
    assert looser.domains().events == []


def test_top_and_weak_sources(mem: Memory, clock: FakeClock) -> None:
    said = mem.add_learning("Use metric units in Atlas documents", tool="write_file", source_type="user_feedback")
    guessed = mem.add_learning("Use imperial units in Atlas documents", tool="write_file", source_type="reflection")
    showings(mem, said.id, "sss", clock.now)
    showings(mem, guessed.id, "sff", clock.now)
    report = mem.domains()
    st = {s.domain: s for s in report.domains}["tool:write_file"]
    assert (st.top_source, st.weak_source) == ("user_feedback", "reflection")
    assert st.sources["reflection"].follow_rate == pytest.approx(1 / 3)
    assert sorted((e.kind, e.source) for e in report.events) == [("top_source", "user_feedback"),
                                                                 ("weak_source", "reflection")]
    showing(mem, said.id, True, clock.now + timedelta(hours=1))
    assert [e.kind for e in mem.domains().events] == []  # the same sources: no new source event


def test_record_false_writes_nothing_and_bad_input(mem: Memory, clock: FakeClock) -> None:
    l = mem.add_learning("Keep meetings with Dana to 25 minutes", tool="create_calendar_event")
    showings(mem, l.id, "s", clock.now)
    report = mem.domains(record=False)
    assert not report.recorded and report.snapshots == 0 and [s.domain for s in report.domains] == [
        "tool:create_calendar_event"]
    assert mem.cypher("MATCH (d:Domain) RETURN count(d) AS n") == [{"n": 0}]
    with pytest.raises(InvalidInputError):
        mem.domains(record="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Settings(domain_shift_min=-0.1)


def test_run_cycle_takes_a_snapshot_and_forget_removes_it(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(clock=clock)
    l = mem.add_learning("Squash fixup commits before merging billing-service", tool="git_commit", confidence=0.5)
    showings(mem, l.id, "ss", clock.now)
    mem.run_cycle()
    assert mem.cypher("MATCH (s:DomainSnapshot) RETURN count(s) AS n") == [{"n": 1}]
    showings(mem, l.id, "ff", clock.now + timedelta(hours=1))
    report = mem.run_cycle()
    assert [(c.field, c.old, c.new) for c in report.domains] == [("effectiveness_shift", "1.000", "0.500")]
    bob = mem.for_user("bob")
    assert bob.domains().domains == []  # alice's domains are hers
    counts = mem.forget()
    assert counts["Domain"] == 1 and counts["DomainSnapshot"] == 2 and counts["DomainEvent"] == 1
    assert mem.cypher("MATCH (d:Domain) RETURN count(d) AS n", scope="all") == [{"n": 0}]
    assert make_memory(settings=Settings(domains_in_cycle=False, weakness_in_cycle=False), clock=clock
                       ).run_cycle().domains == []


def run_cli(db: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--db", str(db), "--embedder", "hash", "--user", "alice", *args])
    assert result.exit_code == code, result.output
    return result.output


def test_insights_domains_terminal_html_and_json(make_memory: Callable[..., Memory], db_path: Path,
                                                 tmp_path: Path, clock: FakeClock) -> None:
    mem = make_memory(clock=clock)
    mem.record_event("tool_call", "web_search('x')", tool="web_search")
    l = mem.add_learning("Filter invoices by calendar quarter", tool="run_sql", confidence=0.9)
    showings(mem, l.id, "fff", clock.now)
    mem.weaknesses()
    mem.close()
    text = run_cli(db_path, "insights", "--domains")
    for needle in ("domains (tools, topics, objective types)", "tool:run_sql", "WEAK", "no_insights",
                   "low_effectiveness", "lessons from weak domains", "candidate"):
        assert needle in text, needle
    assert "domains (tools" not in run_cli(db_path, "insights")
    page = tmp_path / "i.html"
    run_cli(db_path, "insights", "--domains", "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert "<h2>Domains</h2>" in html and "low_effectiveness" in html and "<h2>Lessons from weak domains</h2>" in html
    assert "<h2>Domains</h2>" not in (run_cli(db_path, "insights", "--html", str(page)) and page.read_text())
    data = json.loads(run_cli(db_path, "insights", "--domains", "--json"))
    assert {g["kind"] for g in data["domains"]["gaps"]} == {"no_insights", "low_effectiveness"}
    assert data["domains"]["lessons"][0]["status"] == "candidate" and "overview" in data
    assert "Filter invoices by calendar quarter" in data["domains"]["lessons"][0]["content"]
    domains = json.loads(run_cli(db_path, "domains", "--no-record", "--json"))
    assert not domains["recorded"] and "tool:run_sql" in run_cli(db_path, "domains")
    assert "error:" in run_cli(db_path, "domains", "--bogus", code=1)
