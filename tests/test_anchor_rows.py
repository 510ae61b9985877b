"""Anchor rows a snapshot held stay sorted arrays until a write needs them as sets."""

from __future__ import annotations

import numpy as np

from graphmem.store.anchors import AnchorIndex, AnchorRows


def _index() -> AnchorIndex:
    fresh = AnchorIndex()
    fresh.load([(("tool", "t"), ("entity", "A")), (("tool", "t"),), (("entity", "A"), ("topic", "x"))])
    mapped = AnchorIndex()
    mapped.load(list(fresh.of_row), list(fresh.owner))
    mapped.rows = AnchorRows({a: fresh.rows.array_of(a) for a in fresh.rows})
    return mapped


def test_mapped_rows_answer_reads_without_building_sets() -> None:
    index = _index()
    assert dict.__len__(index.rows) == 0 and len(index.rows) == 3
    assert index.degree(("tool", "t")) == 2 and index.degree(("entity", "B")) == 0
    assert index.rows_of(("entity", "A")).tolist() == [0, 2]
    assert sorted(index.names("entity")) == ["A"] and ("topic", "x") in index.rows
    assert dict.__len__(index.rows) == 0  # still only the arrays


def test_writes_on_mapped_rows_match_a_fresh_index() -> None:
    index = _index()
    index.set_row(1, (("tool", "t"), ("entity", "A")))
    index.set_row(3, (("topic", "x"),))
    index.move(3, 0)  # swap-remove row 0: row 3 takes its place
    fresh = AnchorIndex()
    fresh.load(list(index.of_row), list(index.owner))
    assert {a: r for a, r in index.rows.items() if r} == {a: r for a, r in fresh.rows.items() if r}
    for a in fresh.rows:
        assert np.array_equal(index.rows_of(a), fresh.rows_of(a))
        assert index.degree(a) == fresh.degree(a)
