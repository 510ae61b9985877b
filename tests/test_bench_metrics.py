"""The retrieval benchmark's metrics (hand-computed values) and its labelled data file."""

from __future__ import annotations

import copy
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dataset import (
    MIN_QUERIES_PER_KIND,
    QUERY_KINDS,
    BenchDataset,
    DatasetError,
    check_labels,
    content_words,
    eligible_keys,
    load_dataset,
    noise_keys,
    summary,
)
from benchmarks.metrics import (
    aggregate,
    dcg_at_k,
    max_precision_at_k,
    mrr,
    ndcg_at_k,
    noise_count,
    precision_at_k,
    recall_at_k,
)

LOG2_3 = math.log2(3)

# ------------------------------------------------------------------------------------------
# metrics


def test_precision_at_k_counts_grade_one_and_two_over_k() -> None:
    ranked = ["a", "x", "b", "y", "z"]
    rel = {"a": 2, "b": 1}
    assert precision_at_k(ranked, rel, 5) == pytest.approx(0.4)
    assert precision_at_k(ranked, rel, 1) == pytest.approx(1.0)
    assert precision_at_k(ranked, rel, 2) == pytest.approx(0.5)
    assert precision_at_k(ranked, rel, 3) == pytest.approx(2 / 3)


def test_precision_divides_by_k_even_when_fewer_results() -> None:
    assert precision_at_k(["a"], {"a": 2}, 5) == pytest.approx(0.2)
    assert precision_at_k([], {"a": 2}, 5) == 0.0
    assert max_precision_at_k({"a": 2}, 5) == pytest.approx(0.2)
    assert max_precision_at_k({str(i): 1 for i in range(7)}, 5) == pytest.approx(1.0)


def test_grade_zero_is_not_relevant_and_duplicates_count_once() -> None:
    assert precision_at_k(["a", "b"], {"a": 0, "b": 1}, 2) == pytest.approx(0.5)
    # "a" twice: the second copy is dropped, so the top 2 are a, b.
    assert precision_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1.0)
    assert noise_count(["n", "n", "n"], {"n"}) == 1


def test_recall_at_k() -> None:
    rel = {"a": 2, "b": 1, "c": 1}
    assert recall_at_k(["a", "x", "b"], rel, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "x", "b"], rel, 3) == pytest.approx(2 / 3)
    assert recall_at_k(["c", "b", "a"], rel, 3) == pytest.approx(1.0)
    assert recall_at_k(["x"], rel, 5) == 0.0


def test_dcg_uses_exponential_gain_and_log2_discount() -> None:
    # (2^2-1)/log2(2) + (2^1-1)/log2(3) + 0 + (2^2-1)/log2(5)
    assert dcg_at_k([2, 1, 0, 2], 4) == pytest.approx(3 + 1 / LOG2_3 + 3 / math.log2(5))
    assert dcg_at_k([2, 1, 0, 2], 2) == pytest.approx(3 + 1 / LOG2_3)


def test_ndcg_graded() -> None:
    rel = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b"], rel, 2) == pytest.approx(1.0)
    # swapped: DCG = 1 + 3/log2(3) = 2.8928; IDCG = 3 + 1/log2(3) = 3.6309
    assert ndcg_at_k(["b", "a"], rel, 2) == pytest.approx(0.7967075809905066)
    assert ndcg_at_k(["x", "a"], {"a": 1}, 2) == pytest.approx(1 / LOG2_3)
    assert ndcg_at_k(["x", "y"], rel, 2) == 0.0


def test_ndcg_ideal_uses_all_labels_not_just_the_retrieved_ones() -> None:
    # Two grade-2 items exist but only one is retrieved, after a grade-1 item.
    rel = {"a": 2, "b": 2, "c": 1}
    expected = (1 + 3 / LOG2_3) / (3 + 3 / LOG2_3)
    assert ndcg_at_k(["c", "a"], rel, 2) == pytest.approx(expected)
    assert expected == pytest.approx(0.5912352048230277)


def test_mrr() -> None:
    assert mrr(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / 3)
    assert mrr(["a"], {"a": 2}) == pytest.approx(1.0)
    assert mrr(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert mrr(["x", "b", "a"], {"a": 2, "b": 1}) == pytest.approx(0.5)
    assert mrr([], {"a": 1}) == 0.0


def test_noise_count() -> None:
    ranked = ["a", "n1", "b", "n2"]
    assert noise_count(ranked, {"n1", "n2"}, 3) == 1
    assert noise_count(ranked, {"n1", "n2"}) == 2
    assert noise_count(ranked, set()) == 0
    assert noise_count([], {"n1"}) == 0


def test_empty_relevant_convention() -> None:
    """no_answer queries: quality metrics are undefined (None), noise still counts."""
    ranked = ["n1", "x"]
    assert precision_at_k(ranked, {}, 5) is None
    assert recall_at_k(ranked, {}, 5) is None
    assert ndcg_at_k(ranked, {}, 5) is None
    assert mrr(ranked, {}) is None
    assert max_precision_at_k({}, 5) is None
    assert precision_at_k(ranked, {"x": 0}, 5) is None  # only grade 0 = nothing relevant
    assert noise_count(ranked, {"n1"}, 5) == 1


@pytest.mark.parametrize("k", [0, -1, True, 2.5])
def test_bad_k_is_refused(k: Any) -> None:
    with pytest.raises(ValueError):
        precision_at_k(["a"], {"a": 1}, k)
    with pytest.raises(ValueError):
        noise_count(["a"], {"a"}, k)


def test_aggregate_means_per_kind_and_overall() -> None:
    rows: list[dict[str, object]] = [
        {"id": "Q1", "kind": "lexical", "p@5": 0.4, "mrr": 1.0, "noise": 0},
        {"id": "Q2", "kind": "lexical", "p@5": 0.2, "mrr": 0.5, "noise": 1},
        {"id": "Q3", "kind": "no_answer", "p@5": None, "mrr": None, "noise": 2},
    ]
    out = aggregate(rows, by="kind")
    assert list(out) == ["lexical", "no_answer", "overall"]
    assert out["lexical"]["n"] == 2
    assert out["lexical"]["p@5"] == pytest.approx(0.3)
    assert out["lexical"]["mrr"] == pytest.approx(0.75)
    assert out["lexical"]["noise"] == pytest.approx(0.5)
    assert out["lexical"]["noise_total"] == 1
    assert out["no_answer"] == {"n": 1, "p@5": None, "mrr": None, "noise": 2.0, "noise_total": 2}
    # None is left out of the overall mean: (0.4 + 0.2) / 2, not / 3.
    assert out["overall"]["p@5"] == pytest.approx(0.3)
    assert out["overall"]["noise"] == pytest.approx(1.0)
    assert out["overall"]["noise_total"] == 3
    assert "id" not in out["overall"]


def test_aggregate_rejects_rows_without_the_group_column_and_reserved_names() -> None:
    with pytest.raises(KeyError):
        aggregate([{"p@5": 0.1}])
    with pytest.raises(ValueError):
        aggregate([{"kind": "overall", "p@5": 0.1}])
    with pytest.raises(ValueError):
        aggregate([{"kind": "a", "n": 3}])
    assert aggregate([]) == {"overall": {"n": 0}}


# ------------------------------------------------------------------------------------------
# the shipped data file


@pytest.fixture(scope="module")
def ds() -> BenchDataset:
    return load_dataset()


def test_shipped_file_sizes_and_query_kinds(ds: BenchDataset) -> None:
    assert len(ds.learnings) >= 160
    assert len(ds.queries) >= 60
    for kind in QUERY_KINDS:
        assert len(ds.queries_of_kind(kind)) >= MIN_QUERIES_PER_KIND[kind], kind
    assert MIN_QUERIES_PER_KIND["no_answer"] == 4
    assert MIN_QUERIES_PER_KIND["lexical"] == 6


def test_shipped_file_vocabulary(ds: BenchDataset) -> None:
    tools = {l.tool for l in ds.learnings if l.tool}
    entities = {e for l in ds.learnings for e in l.entities}
    topics = {t for l in ds.learnings for t in l.topics}
    assert 10 <= len(tools) <= 14
    assert 13 <= len(entities) <= 20
    assert 10 <= len(topics) <= 16
    assert set(ds.users) == {"alice", "bob", "carol"}
    owners = [l.user for l in ds.learnings if not l.shared]
    assert owners.count("alice") > owners.count("bob") + owners.count("carol")
    assert owners.count("bob") >= 10 and owners.count("carol") >= 10
    assert sum(l.shared for l in ds.learnings) >= 3
    for l in ds.learnings:
        if l.tier == "pinned":
            assert l.validations >= 10, l.key


def test_shipped_file_noise_minimums(ds: BenchDataset) -> None:
    s = summary(ds)
    noise = s["noise"]
    assert isinstance(noise, dict)
    assert noise["status"] >= 12
    assert noise["archive"] >= 8
    assert noise["superseded"] >= 6
    assert noise["superseded_archived"] >= 1
    assert noise["superseded_still_active"] >= 1


def test_noise_never_relevant_and_rules_hold(ds: BenchDataset) -> None:
    for q in ds.queries:
        noise = noise_keys(ds, q.user)
        assert not set(q.relevant) & noise, q.id
        assert set(q.relevant) <= eligible_keys(ds, q.user), q.id
    for user in ds.users:
        noise = noise_keys(ds, user)
        for l in ds.learnings:
            if l.user != user and not l.shared:
                assert l.key in noise
            if l.status in ("disabled", "shadow", "candidate") or l.tier == "archive":
                assert l.key in noise
            if l.supersedes is not None and l.user == user:
                assert l.supersedes in noise
                assert l.key not in noise, f"replacement {l.key} must be eligible"
            if l.shared and l.status in ("active", "canary") and l.tier != "archive":
                assert l.key not in noise


def test_labels_follow_each_kinds_rules(ds: BenchDataset) -> None:
    assert check_labels(ds) == []


def test_graph_queries_really_share_no_words(ds: BenchDataset) -> None:
    q = next(q for q in ds.queries if q.kind == "graph_tool")
    for key in q.relevant:
        assert not content_words(q.text) & content_words(ds.learning(key).text())


def test_no_answer_and_tool_only_shapes(ds: BenchDataset) -> None:
    for q in ds.queries_of_kind("no_answer"):
        assert q.relevant == {}
    for q in ds.queries_of_kind("tool_only"):
        assert q.text == "" and q.tool
        assert 2 in q.relevant.values()
    for q in ds.queries_of_kind("isolation"):
        assert q.user != "alice"


def test_created_at_and_ttl(ds: BenchDataset) -> None:
    now = datetime(2025, 1, 31, tzinfo=UTC)
    l = ds.learnings[0]
    assert (now - l.created_at(now)).days == l.age_days
    expired = [l for l in ds.learnings if l.expired()]
    assert expired and all(l.kind in ("observation", "hypothesis") for l in expired)


# ------------------------------------------------------------------------------------------
# broken files are refused


def _mini() -> dict[str, Any]:
    def learning(key: str, user: str = "alice", **kw: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "key": key,
            "user": user,
            "content": f"content of {key}",
            "kind": "rule",
            "tool": "send_email",
            "entities": [],
            "topics": [],
            "objective_type": None,
            "recommendation": None,
            "applies_when": None,
            "sentiment": "neutral",
            "source_type": "user_feedback",
            "confidence": 0.7,
            "status": "active",
            "tier": "active",
            "helpful": 1,
            "harmful": 0,
            "validations": 1,
            "shared": False,
            "supersedes": None,
            "age_days": 5,
        }
        base.update(kw)
        return base

    return {
        "version": 1,
        "users": ["alice", "bob"],
        "learnings": [
            learning("L1"),
            learning("L2", status="disabled"),
            learning("L3", tier="archive", age_days=50),
            learning("L4", supersedes="L3"),
            learning("L5", user="bob"),
            learning("L6", user="bob", shared=True),
            learning("L7", kind="observation", age_days=120),
            learning("L8", status="canary"),
            learning("L9", age_days=60),
            learning("L10", supersedes="L9"),
        ],
        "queries": [
            {
                "id": "Q1",
                "user": "alice",
                "text": "email",
                "tool": "send_email",
                "entities": [],
                "topics": [],
                "objective_type": None,
                "kind": "lexical",
                "relevant": {"L1": 2, "L4": 1, "L6": 1},
            },
            {
                "id": "Q2",
                "user": "bob",
                "text": "nothing",
                "tool": None,
                "entities": [],
                "topics": [],
                "objective_type": None,
                "kind": "no_answer",
                "relevant": {},
            },
        ],
    }


def _write(tmp_path: Path, data: Any, name: str = "bench.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return p


def test_small_valid_file_and_its_noise(tmp_path: Path) -> None:
    d = load_dataset(_write(tmp_path, _mini()))
    assert noise_keys(d, "alice") == {"L2", "L3", "L5", "L7", "L9"}
    assert noise_keys(d, "bob") == {"L1", "L2", "L3", "L4", "L7", "L8", "L9", "L10"}
    assert eligible_keys(d, "alice") == {"L1", "L4", "L6", "L8", "L10"}


def _break(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(_mini())
    mutate(data)
    return data


BROKEN = {
    "duplicate key": lambda d: d["learnings"].append(copy.deepcopy(d["learnings"][0])),
    "unknown relevant key": lambda d: d["queries"][0]["relevant"].update({"L99": 1}),
    "relevant disabled": lambda d: d["queries"][0]["relevant"].update({"L2": 1}),
    "relevant archived": lambda d: d["queries"][0]["relevant"].update({"L3": 1}),
    "relevant superseded": lambda d: d["queries"][0]["relevant"].update({"L9": 1}),
    "relevant expired": lambda d: d["queries"][0]["relevant"].update({"L7": 1}),
    "relevant canary": lambda d: d["queries"][0]["relevant"].update({"L8": 1}),
    "other user's": lambda d: d["queries"][0]["relevant"].update({"L5": 1}),
    "unknown supersedes": lambda d: d["learnings"][3].update({"supersedes": "L77"}),
    "supersedes newer": lambda d: d["learnings"][3].update({"age_days": 80}),
    "no_answer labelled": lambda d: d["queries"][1]["relevant"].update({"L6": 1}),
    "grade 3": lambda d: d["queries"][0]["relevant"].update({"L1": 3}),
    "grade 0": lambda d: d["queries"][0]["relevant"].update({"L1": 0}),
    "bad status": lambda d: d["learnings"][0].update({"status": "retired"}),
    "unknown field": lambda d: d["learnings"][0].update({"colour": "red"}),
    "unknown user": lambda d: d["queries"][0].update({"user": "mallory"}),
    "duplicate query": lambda d: d["queries"].append(copy.deepcopy(d["queries"][0])),
    "tool_only with text": lambda d: d["queries"][0].update({"kind": "tool_only"}),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_file_is_refused(tmp_path: Path, case: str) -> None:
    p = _write(tmp_path, _break(BROKEN[case]))
    with pytest.raises(DatasetError) as err:
        load_dataset(p)
    assert str(p) in str(err.value)


def test_unreadable_or_invalid_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(tmp_path / "missing.json")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_dataset(_write(tmp_path, '{"version": 1, "users": [', "bad.json"))


def test_error_message_names_the_problem(tmp_path: Path) -> None:
    p = _write(tmp_path, _break(BROKEN["relevant archived"]))
    with pytest.raises(DatasetError, match="relevant L3 is noise for alice"):
        load_dataset(p)
