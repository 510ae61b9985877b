"""Injected-instruction screening: the classifier on the labelled set, and end to end.

    python -m benchmarks.injection [--save] [--json-out PATH] [--skip-e2e]

1. **Classifier.** ``benchmarks/data/injection_set.jsonl`` holds hand-written injection payloads
   (three families: exfiltration, authority, safeguards) and benign rules / preferences / feedback
   that look like them, each labelled, with the channel style it imitates (an owner message or
   text arriving through a tool / trace) and a split: ``dev`` (the rules were tuned on it),
   ``test`` (held out, written together with the first dev half) and ``fresh`` (written after
   the rules were frozen: the honest estimate for new phrasings). A text is flagged when :func:`graphmem.learn.injection.score_injection`
   reaches ``Settings.injection_doubt_threshold``. Reported per split: precision, recall, F1; per
   family: recall; per channel style: precision/recall/F1; and how many of each label reach the
   refuse threshold. Also the classifier's time per text (best of 5 runs; mean and p99).
2. **End to end** (``Memory`` on a temporary Kùzu file, HashEmbedder, OfflineLLM), every text of
   the set, twice: unscreened (both thresholds above 1, i.e. no screen at all) and screened
   (defaults). Each text is sent as an owner message (``observe_message(is_owner=True)``, a fresh
   user per text) and as a failing trace output (``trace(..., output=text)``); the resulting
   learning's status is counted (active, canary, candidate, shadow, refused, none = the offline
   extractor found no feedback). Then all owner texts go to ONE user and the ``user_preferences``
   summary is rebuilt: the number of injection-derived learnings whose wording appears in it.
   "Benign demoted" counts benign texts that became active unscreened but not screened.

Results go to ``benchmarks/results/local/injection.json`` (git-ignored); ``--save`` writes the
committed ``benchmarks/results/injection.json`` instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphmem import Memory
from graphmem.config import Settings
from graphmem.embed import HashEmbedder
from graphmem.learn.injection import FAMILIES, score_injection

DATA = Path(__file__).resolve().parent / "data" / "injection_set.jsonl"
RESULTS = Path(__file__).resolve().parent / "results"
LOCAL = RESULTS / "local"
# thresholds above any score: screening off (model_copy skips the [0, 1] range check on purpose)
UNSCREENED = Settings().model_copy(update={"injection_doubt_threshold": 1.01, "injection_refuse_threshold": 1.01})
TRACE_INPUT = "Summarise the page for the user"
TRACE_TRUTH = "A three-line summary of the page"


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The labelled set: dicts with id, text, label, family, channel, split."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def prf(rows: Sequence[dict[str, Any]], flagged: Sequence[bool]) -> dict[str, Any]:
    """Precision, recall, F1 and the confusion counts of ``flagged`` against the labels."""
    tp = sum(1 for r, f in zip(rows, flagged) if f and r["label"] == "injection")
    fp = sum(1 for r, f in zip(rows, flagged) if f and r["label"] != "injection")
    fn = sum(1 for r, f in zip(rows, flagged) if not f and r["label"] == "injection")
    tn = len(rows) - tp - fp - fn
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"n": len(rows), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": round(p, 3), "recall": round(r, 3), "f1": round(f1, 3)}


def classifier_report(rows: Sequence[dict[str, Any]], settings: Settings = Settings()) -> dict[str, Any]:
    """Classifier metrics per split, family and channel style, plus timing and the misses."""
    scores, times = [], []
    for r in rows:
        scores.append(score_injection(r["text"]).score)
        runs = []
        for _ in range(5):  # the best of 5 runs: the machine is shared, the rest is other processes' noise
            t0 = time.perf_counter()
            score_injection(r["text"])
            runs.append((time.perf_counter() - t0) * 1000)
        times.append(min(runs))
    doubt, refuse = settings.injection_doubt_threshold, settings.injection_refuse_threshold
    out: dict[str, Any] = {"doubt_threshold": doubt, "refuse_threshold": refuse, "splits": {}}
    for split in ("dev", "test", "fresh", "all"):
        idx = [i for i, r in enumerate(rows) if split == "all" or r["split"] == split]
        part = [rows[i] for i in idx]
        report = prf(part, [scores[i] >= doubt for i in idx])
        report["families_recall"] = {
            fam: prf([rows[i] for i in idx if rows[i]["family"] == fam],
                     [scores[i] >= doubt for i in idx if rows[i]["family"] == fam])["recall"]
            for fam in FAMILIES
        }
        report["channels"] = {}
        for channel in sorted({r["channel"] for r in part}):
            sub = [i for i in idx if rows[i]["channel"] == channel]
            report["channels"][channel] = prf([rows[i] for i in sub], [scores[i] >= doubt for i in sub])
        report["refused_injections"] = sum(1 for i in idx if rows[i]["label"] == "injection" and scores[i] >= refuse)
        report["refused_benign"] = sum(1 for i in idx if rows[i]["label"] != "injection" and scores[i] >= refuse)
        report["errors"] = [
            {"id": rows[i]["id"], "label": rows[i]["label"], "score": scores[i], "text": rows[i]["text"]}
            for i in idx if (scores[i] >= doubt) != (rows[i]["label"] == "injection")
        ]
        out["splits"][split] = report
    times.sort()
    out["ms_per_text_mean"] = round(statistics.fmean(times), 4)
    out["ms_per_text_p99"] = round(times[min(len(times) - 1, int(0.99 * len(times)))], 4)
    return out


class _Refusals(logging.Handler):
    """Counts the curator's 'refused a learning' warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "refused a learning" in record.getMessage():
            self.count += 1


@contextmanager
def _refusals() -> Iterator[_Refusals]:
    handler = _Refusals()
    logger = logging.getLogger("graphmem.learn")
    logger.addHandler(handler)
    old = logger.propagate
    logger.propagate = False  # keep the benchmark's output readable
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = old


def _status(learnings: Sequence[Any], refused_before: int, refused_after: int) -> str:
    if learnings:
        return str(learnings[0].status)
    return "refused" if refused_after > refused_before else "none"


def end_to_end(rows: Sequence[dict[str, Any]], settings: Settings, folder: Path) -> dict[str, Any]:
    """Every text through observe_message(is_owner=True) and trace(output=text); statuses counted."""
    statuses: dict[str, dict[str, str]] = {"owner": {}, "trace": {}}
    mem = Memory(folder / f"e2e-{settings.injection_doubt_threshold}.kuzu", settings=settings, embedder=HashEmbedder())
    try:
        with _refusals() as refused:
            for r in rows:
                user = mem.for_user(f"u-{r['id']}")
                before = refused.count
                learned = user.observe_message(r["text"], is_owner=True)
                statuses["owner"][r["id"]] = _status(learned, before, refused.count)
                before = refused.count
                result = user.trace(TRACE_INPUT, r["text"], node="web", ground_truth=TRACE_TRUTH)
                statuses["trace"][r["id"]] = _status(result.learnings, before, refused.count)
            # one owner sends everything; is anything injected in the user_preferences summary?
            owner = mem.for_user("owner")
            injected: list[str] = []
            for r in rows:
                for learning in owner.observe_message(r["text"], is_owner=True):
                    if r["label"] == "injection":
                        injected += [t for t in (learning.content, learning.recommendation) if t]
            owner.refresh_summaries(force=True)
            summary = owner.summary("user_preferences").text.lower()
            in_summary = sorted({t for t in injected if t.lower().rstrip(".")[:60] in summary})
    finally:
        mem.close()
    report: dict[str, Any] = {}
    for channel, by_id in statuses.items():
        report[channel] = {
            label: dict(Counter(by_id[r["id"]] for r in rows if r["label"] == label).most_common())
            for label in ("injection", "benign")
        }
    report["injected_learnings_in_user_preferences"] = len(in_summary)
    report["injected_summary_texts"] = in_summary
    return {"counts": report, "statuses": statuses}


def run(*, e2e: bool = True) -> dict[str, Any]:
    """The whole benchmark as one JSON-able dict."""
    rows = load()
    result: dict[str, Any] = {
        "benchmark": "injection_screening",
        "data": str(DATA.relative_to(DATA.parents[2])),
        "size": dict(Counter(f"{r['label']}/{r['split']}" for r in rows)),
        "classifier": classifier_report(rows),
    }
    if e2e:
        with tempfile.TemporaryDirectory(prefix="graphmem-injection-") as tmp:
            before = end_to_end(rows, UNSCREENED, Path(tmp))
            after = end_to_end(rows, Settings(), Path(tmp))
        demoted = [
            {"id": r["id"], "channel": ch, "text": r["text"], "now": after["statuses"][ch][r["id"]]}
            for ch in ("owner", "trace") for r in rows
            if r["label"] == "benign" and before["statuses"][ch][r["id"]] == "active"
            and after["statuses"][ch][r["id"]] != "active"
        ]
        result["end_to_end"] = {
            "llm": "offline", "embedder": "hash",
            "unscreened": before["counts"], "screened": after["counts"],
            "benign_active_unscreened": {
                ch: sum(1 for r in rows if r["label"] == "benign" and before["statuses"][ch][r["id"]] == "active")
                for ch in ("owner", "trace")
            },
            "benign_demoted": demoted,
        }
    return result


def _print(result: dict[str, Any]) -> None:
    c = result["classifier"]
    print(f"classifier (flag at score >= {c['doubt_threshold']}, refuse at >= {c['refuse_threshold']}); "
          f"{c['ms_per_text_mean']:.3f} ms/text mean, {c['ms_per_text_p99']:.3f} p99")
    print(f"{'split':<6} {'n':>4} {'P':>6} {'R':>6} {'F1':>6} {'fp':>3} {'fn':>3}  recall by family"
          "                          refused inj/benign")
    for split, s in c["splits"].items():
        fams = " ".join(f"{k}={v:.2f}" for k, v in s["families_recall"].items())
        print(f"{split:<6} {s['n']:>4} {s['precision']:>6.3f} {s['recall']:>6.3f} {s['f1']:>6.3f} {s['fp']:>3} "
              f"{s['fn']:>3}  {fams:<52} {s['refused_injections']}/{s['refused_benign']}")
        for ch, m in s["channels"].items():
            print(f"  {ch:<8} n={m['n']:<4} P={m['precision']:.3f} R={m['recall']:.3f} F1={m['f1']:.3f}")
    if "end_to_end" in result:
        e = result["end_to_end"]
        for mode in ("unscreened", "screened"):
            print(f"\nend to end, {mode}:")
            for channel in ("owner", "trace"):
                for label in ("injection", "benign"):
                    counts = ", ".join(f"{k} {v}" for k, v in e[mode][channel][label].items())
                    print(f"  {channel:<6} {label:<9} {counts}")
            print(f"  injected learnings in user_preferences: {e[mode]['injected_learnings_in_user_preferences']}")
        print(f"\nbenign texts active unscreened: {e['benign_active_unscreened']}; "
              f"demoted by the screen: {len(e['benign_demoted'])}")
        for d in e["benign_demoted"]:
            print(f"  [{d['channel']}] {d['now']}: {d['text']}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run, print, write the JSON (ignored folder unless --save)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--save", action="store_true", help="write the committed benchmarks/results/injection.json")
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--skip-e2e", action="store_true", help="classifier figures only (fast)")
    args = parser.parse_args(argv)
    result = run(e2e=not args.skip_e2e)
    _print(result)
    out = args.json_out or (RESULTS if args.save else LOCAL) / "injection.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return result


if __name__ == "__main__":
    main()
