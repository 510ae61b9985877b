"""The loop benchmark's failure split and the ceiling of the quality prior's margin."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.loop import LoopConfig, aggregate, failure_split, paired_curves, plot_band, records_line, simulate
from graphmem.embed import HashEmbedder


def test_failure_split_sorts_causes_into_unavoidable_repeats_and_other() -> None:
    causes = {
        "guess, nothing learned yet": 7,
        "correction first": 2,
        "offline first": 1,
        "correction first, right one in use": 3,
        "correction again": 4,
        "offline again, right one in use": 5,
        "guess, right one hidden": 6,
        "guess": 1,
    }
    split = failure_split(causes)
    assert split == {"unavoidable": 7 + 2 + 1, "repeats": 4 + 5, "other": 3 + 6 + 1}
    assert sum(split.values()) == sum(causes.values())


def test_failure_split_of_nothing_is_zero() -> None:
    assert failure_split({}) == {"unavoidable": 0, "repeats": 0, "other": 0}


def test_the_prior_margin_never_exceeds_its_ceiling(tmp_path: Path) -> None:
    per_seed = [simulate(LoopConfig(episodes=20, window=10, cycle_every=10, slots=3, seed=s, noise=0.2, wrong=0.3),
                         embedder=HashEmbedder()) for s in (0, 1)]
    result = aggregate(per_seed)
    runs = {r["name"]: r for r in result["runs"]}
    for mode in ("online only", "offline + online"):
        d = result["paired"][f"{mode}: prior on − off"]
        on, off = runs[f"{mode} (prior on, exploration 0)"], runs[f"{mode} (prior off)"]
        for k in range(2):
            # every true failure has a cause, so the split adds up to the failures of the run
            assert sum(on["failures_by_seed"][k].values()) == pytest.approx(20 * (1 - on["overall_by_seed"][k]))
            assert sum(off["failures_by_seed"][k].values()) == pytest.approx(20 * (1 - off["overall_by_seed"][k]))
            assert d["by_seed"][k] <= d["ceiling_by_seed"][k] + 1e-9
            assert d["off_repeats_by_seed"][k] == pytest.approx(100 * off["failures_by_seed"][k]["repeats"] / 20)
        assert d["ceiling_mean"] == pytest.approx(sum(d["ceiling_by_seed"]) / 2)
        for r in (on, off):
            # each repeat is counted once more by the record the wrong learning had when shown
            assert sum(r["repeat_records"].values()) == sum(f["repeats"] for f in r["failures_by_seed"])
    # the band of the paired difference per window: as many windows as the curves, sd over 2 seeds
    pairs = paired_curves(result)
    assert set(pairs) == {"online only", "offline + online"}
    mean, sd = pairs["online only"]
    assert len(mean) == len(sd) == 2 and all(v >= 0 for v in sd)
    png = tmp_path / "band.png"
    plot_band(result, 10, png)
    assert png.stat().st_size > 0


def test_records_line_lists_the_fewest_ratings_first() -> None:
    assert records_line({"2/3": 1, "0/1": 19, "1/0": 4, "0/2": 4}) == "0/1 ×19, 1/0 ×4, 0/2 ×4, 2/3 ×1"
    assert records_line({"2/3": 1, "0/1": 19, "1/0": 4, "0/2": 4}, top=2) == "0/1 ×19, 1/0 ×4, 5 with more ratings"
