"""Bullet evolution: a learning that keeps failing is bred with its most helpful siblings, the
candidates are tested on its failed cases by the same judges, and the fittest one SUPERSEDES it
when it beats it (source_type "evolution", EVOLVED_FROM its parents; the original is kept)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphmem import HashEmbedder, LLMError, Memory, Settings
from graphmem.llm import OfflineLLM
from graphmem.llm.base import LLMRequest
from graphmem.llm.prompts_evolution import bullet_test_request, crossover_request
from graphmem.llm.schemas import BulletTest, CrossoverOutput

try:
    from tests.fake_anthropic import FakeAnthropic, tool_use
except ImportError:  # tests/ on sys.path instead of the repository root
    from fake_anthropic import FakeAnthropic, tool_use  # type: ignore[no-redef]

CRITERIA = "The total must show cents and the currency code"
BAD = "Round invoice totals to whole dollars"
GOOD = "Always show cents and the currency code in invoice totals"


def failing_setup(mem: Memory, n: int = 4, judges: tuple[str, ...] = ("totals",)) -> tuple[str, str]:
    """A billing judge, a learning rejected ``n`` times and a sibling that helped each time."""
    for name in judges:
        mem.add_judge(name, CRITERIA, node="billing")
    bad = mem.add_learning(BAD, tool="billing")
    good = mem.add_learning(GOOD, tool="billing")
    for i in range(n):
        ctx = mem.context(f"invoice total for order {i}", tool="billing")
        assert {bad.id, good.id} <= {x.learning.id for x in ctx.learnings}
        mem.record_outcome(ctx.id, success=False, reasons=["missing cents"], harmful=[bad.id], helpful=[good.id])
    return bad.id, good.id


# --- the offline LLM ------------------------------------------------------------------------------


def test_offline_crossover_and_bullet_test_are_deterministic() -> None:
    llm = OfflineLLM()
    original = {"content": "When the invoice is in euros, round totals", "applies_when": None, "recommendation": None}
    parents = [{"content": GOOD, "helpful": 5, "harmful": 0},
               {"content": "When the customer is in Japan, show yen without decimals", "helpful": 3, "harmful": 1}]
    failures = [{"input_text": "total of order 7", "output": "EUR 12", "ground_truth": "EUR 12.40", "reasoning": "no cents"}]
    req = crossover_request(original, parents, failures, n=4)
    assert req.task == "crossover" and "<data-bullet>" in req.prompt and req.inputs["n"] == 4
    out = llm.generate(req, CrossoverOutput)
    assert out == llm.generate(req, CrossoverOutput)
    texts = [c.content for c in out.candidates]
    assert len(texts) == 4 and len(set(texts)) == 4
    assert all(t not in (original["content"], *(p["content"] for p in parents)) for t in texts)
    assert texts[0].startswith("When the invoice is in euros, always show cents") and "12.40" in texts[0]

    helped = llm.generate(bullet_test_request("totals", CRITERIA, texts[0], "total of order 7", "EUR 12",
                                              "EUR 12.40", None), BulletTest)
    missed = llm.generate(bullet_test_request("totals", CRITERIA, original["content"], "total of order 7", "EUR 12",
                                              "EUR 12.40", None), BulletTest)
    assert (helped.helpful, missed.helpful) == (True, False)
    by_criteria = llm.generate(bullet_test_request("totals", CRITERIA, GOOD, "total", None, None, None), BulletTest)
    assert by_criteria.helpful and by_criteria == llm.generate(
        bullet_test_request("totals", CRITERIA, GOOD, "total", None, None, None), BulletTest)


def test_anthropic_answers_a_crossover_through_the_same_protocol() -> None:
    from graphmem.llm import AnthropicLLM

    with FakeAnthropic() as fake:
        fake.push(tool_use({"candidates": [{"content": "Show cents and the currency code", "applies_when": None,
                                            "recommendation": None}]}))
        llm = AnthropicLLM(Settings(anthropic_model="m", llm_timeout_s=2.0, llm_max_retries=0), api_key="k",
                           base_url=fake.url)
        out = llm.generate(crossover_request({"content": BAD}, [{"content": GOOD}], [], n=4), CrossoverOutput)
        assert [c.content for c in out.candidates] == ["Show cents and the currency code"]
        body = fake.requests[0].json
        assert body["tool_choice"] == {"type": "tool", "name": "record_crossover"}
        assert body["tools"][0]["input_schema"] == CrossoverOutput.model_json_schema()


# --- evolving through Memory ------------------------------------------------------------------------


def test_a_failing_learning_is_superseded_by_the_fittest_rewrite(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    bad, good = failing_setup(mem)
    report = mem.evolve()
    assert [r.learning_id for r in report.results] == [bad]
    res = report.results[0]
    assert res.cases == 4 and res.parents == [good] and res.original is not None
    assert res.original.fitness == 0.0 and res.original.by_judge == {"totals": 0.0}
    best = max(res.candidates, key=lambda c: c.fitness)
    assert best.fitness == 1.0 and best.helpful == 4 and res.improved
    child = mem.get_learning(res.evolved_id or "")
    assert (child.source_type, child.tool, child.status, child.kind) == ("evolution", "billing", "active", "rule")
    assert "cents" in child.content and child.content == res.evolved_content
    old = mem.get_learning(bad)  # kept, archived, superseded, with a logged transition
    assert (old.tier, old.superseded_by) == ("archive", child.id)
    assert any(f"superseded by {child.id}" in t.reason for t in mem.store.transitions(bad))
    parents = mem.cypher("MATCH (c:Learning {id: $c})-[e:EVOLVED_FROM]->(p:Learning) RETURN p.id AS id, e.fitness AS f",
                         {"c": child.id})
    assert sorted(r["id"] for r in parents) == sorted([bad, good]) and {r["f"] for r in parents} == {1.0}
    assert mem.cypher("MATCH (c:Learning)-[:SUPERSEDES]->(o:Learning) RETURN c.id AS c, o.id AS o") == [
        {"c": child.id, "o": bad}]
    shown = [x.learning.id for x in mem.context("invoice total", tool="billing").learnings]
    assert child.id in shown and bad not in shown
    assert mem.evolve().results == []  # nothing failing any more
    with pytest.raises(Exception, match="already superseded"):
        mem.evolve(bad)


def test_too_few_ratings_is_not_failing_but_evolve_on_demand_works(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    bad, _ = failing_setup(mem, n=2)
    assert mem.evolve().results == []  # 2 ratings < evolve_min_ratings (4)
    report = mem.evolve(bad)
    assert report.results[0].cases == 2 and report.evolved
    assert report.results[0].original is not None and report.results[0].original.fitness == 0.0
    assert max(c.fitness for c in report.results[0].candidates) == 0.5  # 2 helpful / 4, the seed's fitness
    strict = make_memory(path=Path(str(mem.store.path) + "-2"), settings=Settings(evolve_min_ratings=2))
    failing_setup(strict, n=2)
    assert len(strict.evolve().evolved) == 1
    capped = make_memory(path=Path(str(mem.store.path) + "-3"), settings=Settings(evolve_max_per_run=1))
    first, _ = failing_setup(capped)
    second = capped.add_learning("Truncate invoice totals to whole dollars", tool="billing")
    for i in range(4):
        ctx = capped.context(f"invoice totals batch {i}", tool="billing")
        capped.record_outcome(ctx.id, success=False, harmful=[second.id])
    tried = [capped.evolve().results, capped.evolve().results]  # one per run, both in the end
    assert [len(r) for r in tried] == [1, 1] and {r[0].learning_id for r in tried} == {first, second.id}


def test_no_candidate_beats_the_original_nothing_is_written(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(harmful_max_success=0.0))  # still shown after 4 failures: rated again below
    mem.add_judge("totals", CRITERIA, node="billing")
    bad = mem.add_learning(BAD, tool="billing")  # no helpful sibling: nothing to breed with
    for i in range(4):
        ctx = mem.context(f"invoice total {i}", tool="billing")
        mem.record_outcome(ctx.id, success=False, harmful=[bad.id])
    before = len(mem.learnings())
    res = mem.evolve().results[0]
    assert not res.improved and "no candidate beat the original" in res.reason and res.parents == []
    assert len(mem.learnings()) == before and mem.get_learning(bad.id).superseded_by is None
    assert mem.evolve().results == []  # tried: retried only after new ratings
    ctx = mem.context("invoice total again", tool="billing")
    mem.record_outcome(ctx.id, success=False, harmful=[bad.id])
    assert [r.learning_id for r in mem.evolve().results] == [bad.id]


def test_per_judge_evolution_tests_with_that_judge_only(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_judge("tone", "The reply must be polite and friendly", node="billing")
    bad, _ = failing_setup(mem)
    nobody = mem.evolve(bad, judge="nobody").results[0]
    assert nobody.cases == 0 and "no failed case was judged by 'nobody'" in nobody.reason
    tone = mem.evolve(bad, judge="tone").results[0]  # the tone judge finds no rewrite helpful
    assert tone.judge == "tone" and tone.original is not None and set(tone.original.by_judge) == {"tone"}
    assert all(set(c.by_judge) == {"tone"} for c in tone.candidates) and not tone.improved
    both = mem.evolve(bad).results[0]  # both judges must find a case helpful
    assert both.original is not None and set(both.original.by_judge) == {"tone", "totals"}
    assert not both.improved
    totals = mem.evolve(bad, judge="totals").results[0]
    assert totals.improved and mem.get_learning(bad).superseded_by == totals.evolved_id


def test_an_llm_error_leaves_nothing_written(make_memory: Callable[..., Memory]) -> None:
    class Failing(OfflineLLM):
        def generate(self, request: LLMRequest, schema: Any) -> Any:
            if request.task == "bullet_test":
                raise LLMError("the model is down")
            return super().generate(request, schema)

    mem = make_memory(llm=Failing())
    bad, _ = failing_setup(mem)
    before = len(mem.learnings())
    with pytest.raises(LLMError):
        mem.evolve(bad)
    assert len(mem.learnings()) == before and mem.get_learning(bad).superseded_by is None
    assert mem.cypher("MATCH ()-[e:EVOLVED_FROM]->() RETURN count(e) AS n") == [{"n": 0}]


def test_run_cycle_evolves_failing_learnings_unless_switched_off(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    off = make_memory(path=tmp_path / "off.kuzu", settings=Settings(evolve_in_cycle=False))
    failing_setup(off)
    assert off.run_cycle().evolved == []
    on = make_memory(path=tmp_path / "on.kuzu")
    bad, _ = failing_setup(on)
    cycle = on.run_cycle()
    assert [c.learning_id for c in cycle.evolved] == [bad]
    assert any(r["section"] == "evolved" for r in cycle.rows())
    assert on.get_learning(bad).superseded_by == cycle.evolved[0].new


def test_settings_ranges_refuse_bad_values() -> None:
    for name in ("evolve_min_ratings", "evolve_candidates", "evolve_parents", "evolve_test_cases", "evolve_max_per_run"):
        with pytest.raises(Exception, match=name):
            Settings(**{name: 0})


# --- the CLI ------------------------------------------------------------------------------------------


@pytest.fixture
def cli_db(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "cli.kuzu"
    mem = Memory(db, user="default", embedder=HashEmbedder(), llm=OfflineLLM())
    failing_setup(mem)
    mem.close()
    yield db


def test_cli_evolve_json(cli_db: Path) -> None:
    from graphmem.cli import _register_groups, app

    _register_groups()
    result = CliRunner().invoke(app, ["--db", str(cli_db), "--embedder", "hash", "evolve", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["results"]) == 1 and data["results"][0]["evolved_id"]
    again = CliRunner().invoke(app, ["--db", str(cli_db), "--embedder", "hash", "evolve"])
    assert again.exit_code == 0 and "0 learning(s) tried" in again.output


def test_near_duplicates_of_a_sibling_are_not_tested(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(dedup_similarity=0.5))  # the curator's threshold, set low
    bad, _ = failing_setup(mem)
    res = mem.evolve(bad).results[0]
    assert res.duplicates >= 1 and res.candidates == [] and not res.improved
    assert mem.get_learning(bad).superseded_by is None


def test_failed_traces_are_cases_judged_by_the_judges_that_failed_them(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    result = mem.trace("What's the VAT on 100 EUR?", "About 20 dollars", node="tax", ground_truth="21 EUR")
    assert not result.passed and result.learnings
    fix = result.learnings[0]
    cases = mem.store.failed_cases(fix.id, 4)
    assert [(c["kind"], c["ground_truth"], [v["judge"] for v in c["verdicts"]]) for c in cases] == [
        ("trace", "21 EUR", ["correctness"])]
    res = mem.evolve(fix.id).results[0]
    assert res.cases == 1 and res.original is not None
    assert res.original.by_judge == {"correctness": 1.0}  # the reflector's fix names the expected answer
    assert res.original.fitness == 0.25  # 1 helpful case / 4, the seed's fitness
    assert not res.improved and "no candidate beat the original" in res.reason
