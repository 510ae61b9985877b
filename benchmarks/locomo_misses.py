"""Why LoCoMo multi-hop and open-domain evidence is missed, and re-rankings aimed at it.

    python -m benchmarks.locomo_misses dump --embed-cache FILE [--data DIR] [--dump FILE] [--set NAME=VALUE]
    python -m benchmarks.locomo_misses analyse [--dump FILE]

``dump`` ranks every question of all 10 conversations with the default settings
(:meth:`EventSearch.rank`, the code ``Memory.search`` runs) and pickles, per conversation, the
turns (text, session, speaker, conversation order, embedding, entity links and mentions, lexical
terms) and per question its gold turns, final scores and signals, into an ignored folder.
``analyse`` reads that file (seconds, no model) and prints the per-cause breakdown of the
evidence turns of multi-hop and open-domain questions that miss the top 10.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locomo import DEFAULT_DATA, REPO

DUMP = REPO / "benchmarks" / "results" / "local" / "locomo_misses.pkl"
_WORD = re.compile(r"[a-z][a-z']+")


def dump(data: Path, embed_cache: Path | None, out: Path, update: dict[str, Any] | None = None) -> None:
    """Rank every question with the default settings (changed by ``update``) and pickle what
    :func:`analyse` needs."""
    from benchmarks.locomo_tune import load
    from graphmem.config import Settings

    base = Settings().model_copy(update=update or {})
    convs: dict[int, dict[str, Any]] = {}
    questions: list[dict[str, Any]] = []
    for ci in range(10):
        qs, mems = load(data, [ci], embed_cache)
        if not qs:
            continue
        searcher, _sig, layout, index, _w = qs[0].state
        store = searcher.store
        lex = store.event_catalog.lexical
        members = layout.members()
        conv_pos = {p: (sid, j) for sid, ps in members.items() for j, p in enumerate(ps)}
        convs[ci] = {
            "dia": qs[0].dia, "content": list(layout.content), "session": list(layout.session),
            "role": list(layout.role), "members": members, "conv_pos": conv_pos,
            "vecs": store.event_catalog.vectors.vectors_of(layout.rows).astype(np.float32),
            "linked": [sorted(x) for x in index.linked], "mentioned": [sorted(x) for x in index.mentioned],
            "names": dict(index.names),
            "terms": [list(lex.terms_of(int(r))) for r in layout.rows],
        }
        for q in qs:
            searcher, sig, layout, index, wanted = q.state
            searcher.settings = base
            top, final, parts = searcher.rank(sig, layout, index, wanted, 100)
            questions.append({
                "ci": ci, "cat": q.category, "query": q.query, "gold": list(q.gold), "wanted": list(wanted),
                "final": final.astype(np.float32), "top": np.asarray(top),
                "qterms": list(sig.query_terms), "qvec": sig.qvec,
                **{k: np.asarray(getattr(sig, k), dtype=np.float32) for k in
                   ("dense", "bm25", "entity", "mention", "date", "temporal")},
                "stripped": None if sig.stripped is None else sig.stripped.astype(np.float32),
                **{k: parts[k].astype(np.float32) for k in ("base", "near", "hop", "prf", "rocchio")},
            })
        for m in mems:
            m.close()
        print(f"conversation {ci}: {len(qs)} questions", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        pickle.dump({"convs": convs, "questions": questions}, f)
    print(f"wrote {out}")


_FORMS = (
    ("both speakers", re.compile(r"\bboth\b|\bin common\b|\bshare\b", re.I)),
    ("inference (would/likely)", re.compile(r"^\s*(?:would|might|could|is it likely|does .* likely)\b|\blikely\b", re.I)),
    ("count (how many)", re.compile(r"^\s*how many\b", re.I)),
    ("list (what/which + plural)", re.compile(r"^\s*(?:what|which)\s+(?:[a-z]+\s+){0,2}?[a-z]{2,}[^s\W]s\b", re.I)),
)


def question_form(query: str) -> str:
    """A coarse form of the question (first matching pattern of :data:`_FORMS`, else "other")."""
    return next((name for name, rx in _FORMS if rx.search(query)), "other")


def missed_turns(data: dict[str, Any], cats: Sequence[int] = (1, 3), k: int = 10) -> list[dict[str, Any]]:
    """Every evidence turn of a question in ``cats`` that ranks below the top ``k``, with its
    rank, the ranks of its cosine and BM25, and how it relates to the question and its hits."""
    convs, out = data["convs"], []
    dfs = {ci: Counter(t for ts in c["terms"] for t in set(ts)) for ci, c in convs.items()}
    for q in data["questions"]:
        if q["cat"] not in cats:
            continue
        c, df = convs[q["ci"]], dfs[q["ci"]]
        pos_of = {d: i for i, d in enumerate(c["dia"])}
        order = np.argsort(-q["final"], kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        dense = q["dense"] if q["stripped"] is None else 0.25 * q["dense"] + 0.75 * q["stripped"]
        drank = np.empty_like(order)
        drank[np.argsort(-dense, kind="stable")] = np.arange(order.size)
        gold = [pos_of[g] for g in q["gold"] if g in pos_of]
        found = [p for p in gold if rank[p] < k]
        top = order[:k]
        at = {c["conv_pos"][h]: h for h in top}
        rare = set().union(*[{t for t in c["terms"][h] if 2 <= df[t] <= 30} for h in order[:5]]) - set(q["qterms"])
        for p in gold:
            if rank[p] < k:
                continue
            sid, j = c["conv_pos"][p]
            role = c["role"][p]
            cont = any(at.get((sid, j + d)) is not None and c["role"][at[(sid, j + d)]] == role for d in (-2, -1, 1, 2))
            out.append({
                "ci": q["ci"], "cat": q["cat"], "query": q["query"], "form": question_form(q["query"]),
                "text": c["content"][p], "rank": int(rank[p]), "dense_rank": int(drank[p]),
                "bm25": float(q["bm25"][p]), "speaker": bool(q["entity"][p] > 0), "half_found": bool(found),
                "continuation": cont, "same_session": sid in {c["session"][h] for h in top},
                "query_word": bool(set(c["terms"][p]) & set(q["qterms"])),
                "hit_word": bool(set(c["terms"][p]) & rare), "asks": "?" in c["content"][p],
                "image": "[shares an image" in c["content"][p],
            })
    return out


#: exclusive causes, first match wins (see :func:`cause`)
CAUSES = (
    "continuation: the same speaker's next/previous turn of a top-10 hit",
    "same session as a top-10 hit (not adjacent)",
    "near miss: shares a question word, rank 11-25",
    "shares a question word, rank > 25",
    "no question word, close in embedding (cosine rank <= 25)",
    "no question word, shares a rarer word with the best 5 hits",
    "no word, far in embedding: an instance of what is asked / world knowledge",
)


def cause(m: dict[str, Any]) -> str:
    """The first of :data:`CAUSES` that describes a missed turn."""
    if m["continuation"]:
        return CAUSES[0]
    if m["same_session"]:
        return CAUSES[1]
    if m["query_word"]:
        return CAUSES[2] if m["rank"] < 25 else CAUSES[3]
    if m["dense_rank"] < 25:
        return CAUSES[4]
    return CAUSES[5] if m["hit_word"] else CAUSES[6]


def analyse(path: Path) -> None:
    """Print the breakdown of missed multi-hop and open-domain evidence per half."""
    with path.open("rb") as f:
        data = pickle.load(f)
    misses = missed_turns(data)
    halves = (("tuning 0-4", range(0, 5)), ("held-out 5-9", range(5, 10)))
    for cat, name in ((1, "multi-hop"), (3, "open-domain")):
        for label, convs in halves:
            ms = [m for m in misses if m["cat"] == cat and m["ci"] in convs]
            n = len(ms) or 1
            ranks = np.array([m["rank"] for m in ms])
            print(f"{name}, {label}: {len(ms)} evidence turns miss the top 10 (rank 11-25 {int((ranks < 25).sum())}, "
                  f"26-50 {int(((ranks >= 25) & (ranks < 50)).sum())}, 51-100 {int(((ranks >= 50) & (ranks < 100)).sum())}, "
                  f"> 100 {int((ranks >= 100).sum())})")
            for what, count in Counter(cause(m) for m in ms).most_common():
                print(f"  {count:4d} ({100 * count / n:3.0f} %) {what}")
            for key, what in (("half_found", "another evidence turn of the question is in the top 10"),
                              ("speaker", "the turn is the named speaker's"), ("asks", "the turn holds a '?'"),
                              ("image", "the turn shares an image")):
                count = sum(bool(m[key]) for m in ms)
                print(f"       [{count:4d} ({100 * count / n:3.0f} %) {what}]")
            forms = Counter(m["form"] for m in ms)
            print("       [question forms: " + ", ".join(f"{f} {c}" for f, c in forms.most_common()) + "]")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.locomo_misses", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["dump", "analyse"])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("GRAPHMEM_LOCOMO_DATA") or DEFAULT_DATA))
    ap.add_argument("--embed-cache", type=Path, default=None)
    ap.add_argument("--dump", type=Path, default=DUMP)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="dump: rank with this setting changed (e.g. search_weight_continuation=0)")
    args = ap.parse_args(argv)
    if args.what == "dump":
        if not (args.data / "locomo10.json").exists():
            print(f"locomo_misses: skipped, {args.data / 'locomo10.json'} is absent (see benchmarks/locomo.py)")
            return 0
        dump(args.data, args.embed_cache, args.dump, {k: json.loads(v) for k, v in (x.split("=", 1) for x in args.set)})
    else:
        analyse(args.dump)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
