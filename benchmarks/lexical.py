"""Lexical (BM25) index candidates for the context() hot path, measured on the scale corpus.

    python -m benchmarks.lexical [--sizes 10000 100000] [--queries 200] [--inserts 200]
                                 [--only graphmem tantivy bm25s] [--short] [--kuzu] [--save]

The corpus is benchmarks/scale.py's (templated learnings over five users, 2 % shared); each
document is the learning's normalised ``search_text`` (graphmem/store/text.py), each query the
normalised text of one of scale.py's 2-8 word query templates (``--short`` keeps the first three
terms). Every query is asked for one user (own plus shared learnings), top 50. Per candidate:

- build: indexing all N documents from scratch (what opening a file costs);
- insert: adding one more document until it is searchable (p50 over ``--inserts``);
- update: replacing one document's text (p50);
- query: p50/p95 of a top-50 search for one user.

Candidates: ``graphmem`` (graphmem/store/lexical.py: numpy postings, per-user statistics),
``tantivy`` (one RAM index, user filter as a boolean clause; its statistics are global, per-user
statistics would need one index per user holding copies of the shared learnings; an insert is
add + commit + reload), ``bm25s`` (a static sparse matrix: no incremental update, so an insert
is a rebuild; user filter through ``weight_mask``, statistics global).

``--kuzu`` also builds a real file per size and times context()'s full-text stage both ways,
interleaved: Kùzu's ``QUERY_FTS_INDEX`` (the previous code path) and the mirror.

Writes benchmarks/results/local/lexical.json (ignored); ``--save`` writes
benchmarks/results/lexical.json instead. The machine may be shared: figures are indicative.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale import generate, queries
from graphmem.store.text import search_text

RESULTS = Path(__file__).resolve().parent / "results"
K = 50


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of values, rounded."""
    return round(float(np.percentile(np.asarray(values), q)), 3) if values else float("nan")


def corpus(n: int, seed: int = 0) -> tuple[list[str], list[str], list[bool]]:
    """(normalised texts, users, shared flags) of the first ``n`` scale.py learnings."""
    specs = generate(n, seed)
    return [search_text(s["content"]) for s in specs], [s["user"] for s in specs], [s["shared"] for s in specs]


def query_set(count: int, short: bool) -> list[tuple[str, str]]:
    """(normalised query, user) pairs."""
    users = ["alice", "bob", "carol", "dave", "erin"]
    out = []
    for i, q in enumerate(queries(count)):
        terms = search_text(q["query"]).split()
        out.append((" ".join(terms[:3] if short else terms), users[i % len(users)]))
    return out


def timed(fn: Callable[[], Any]) -> float:
    """Milliseconds one call takes."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def bench_graphmem(texts: list[str], users: list[str], shared: list[bool], qs: list[tuple[str, str]], inserts: int) -> dict[str, Any]:
    """graphmem.store.lexical.LexicalIndex."""
    from graphmem.store.lexical import LexicalIndex

    index = LexicalIndex()
    build = timed(lambda: index.load(texts, users, shared))
    n = len(texts)
    ins = [timed(lambda i=i: index.add(n + i, users[i], False, texts[i])) for i in range(inserts)]
    upd = [timed(lambda i=i: index.add(n + i, users[i], False, texts[(i + 7) % n])) for i in range(inserts)]
    rem = [timed(lambda i=i: index.remove(n + i)) for i in range(inserts)]
    for q, u in qs[:10]:
        index.search(q, u, K)
    lat = [timed(lambda q=q, u=u: index.search(q.split(), u, K)) for q, u in qs]
    mask = np.random.default_rng(0).random(n) < 0.9
    lat_mask = [timed(lambda q=q, u=u: index.search(q.split(), u, K, mask)) for q, u in qs]
    return {"build_s": round(build / 1e3, 3), "insert_p50_ms": pct(ins, 50), "update_p50_ms": pct(upd, 50),
            "remove_p50_ms": pct(rem, 50), "query_p50_ms": pct(lat, 50), "query_p95_ms": pct(lat, 95),
            "query_masked_p50_ms": pct(lat_mask, 50), "query_masked_p95_ms": pct(lat_mask, 95),
            "per_user_stats": True, "incremental": True}


def bench_tantivy(texts: list[str], users: list[str], shared: list[bool], qs: list[tuple[str, str]], inserts: int) -> dict[str, Any]:
    """tantivy: one RAM index, user filter as a boolean clause (global statistics)."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("row", stored=True, indexed=True, fast=True)
    sb.add_text_field("user", tokenizer_name="raw")
    sb.add_text_field("text", tokenizer_name="whitespace")
    schema = sb.build()
    index = tantivy.Index(schema)
    Occur = tantivy.Occur

    def doc(row: int, text: str, user: str, sh: bool) -> Any:
        return tantivy.Document(row=row, user="*shared*" if sh else user, text=text)

    def build() -> Any:
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for row, (text, user, sh) in enumerate(zip(texts, users, shared)):
            writer.add_document(doc(row, text, user, sh))
        writer.commit()
        writer.wait_merging_threads()

    build_ms = timed(build)
    index.reload()
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    n = len(texts)

    def insert(i: int, text: str) -> None:
        writer.delete_documents_by_term("row", n + i)
        writer.add_document(doc(n + i, text, users[i], False))
        writer.commit()
        index.reload()

    ins = [timed(lambda i=i: insert(i, texts[i])) for i in range(inserts)]
    upd = [timed(lambda i=i: insert(i, texts[(i + 7) % n])) for i in range(inserts)]

    def search(q: str, user: str) -> list[tuple[int, float]]:
        terms = [tantivy.Query.term_query(schema, "text", t) for t in dict.fromkeys(q.split())]
        who = tantivy.Query.boolean_query([
            (Occur.Should, tantivy.Query.term_query(schema, "user", user)),
            (Occur.Should, tantivy.Query.term_query(schema, "user", "*shared*")),
        ])
        query = tantivy.Query.boolean_query([
            (Occur.Must, tantivy.Query.boolean_query([(Occur.Should, t) for t in terms])),
            (Occur.Must, tantivy.Query.const_score_query(who, 0.0)),
        ])
        searcher = index.searcher()
        return [(searcher.doc(a)["row"][0], s) for s, a in searcher.search(query, K).hits]

    for q, u in qs[:10]:
        search(q, u)
    lat = [timed(lambda q=q, u=u: search(q, u)) for q, u in qs]
    return {"build_s": round(build_ms / 1e3, 3), "insert_p50_ms": pct(ins, 50), "update_p50_ms": pct(upd, 50),
            "query_p50_ms": pct(lat, 50), "query_p95_ms": pct(lat, 95),
            "per_user_stats": False, "incremental": True}


def bench_bm25s(texts: list[str], users: list[str], shared: list[bool], qs: list[tuple[str, str]], inserts: int) -> dict[str, Any]:
    """bm25s: static index (an insert is a rebuild), user filter via weight_mask (global statistics)."""
    import bm25s

    tokens = [t.split() for t in texts]

    def build(docs: list[list[str]]) -> Any:
        model = bm25s.BM25(k1=1.2, b=0.75)
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(w, len(vocab)) for w in d] for d in docs]
        model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return model, vocab

    build_ms = timed(lambda: build(tokens))
    model, vocab = build(tokens)
    rebuild = [timed(lambda: build([*tokens, tokens[0]])) for _ in range(min(inserts, 3))]
    user_arr = np.asarray(users)
    shared_arr = np.asarray(shared)
    masks = {u: ((user_arr == u) | shared_arr).astype(np.float32) for u in set(users)}

    def search(q: str, user: str) -> list[tuple[int, float]]:
        ids = [vocab[t] for t in dict.fromkeys(q.split()) if t in vocab]
        if not ids:
            return []
        scores = model.get_scores_from_ids(ids, weight_mask=masks[user])
        k = min(K, int(np.count_nonzero(scores)))
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        return [(int(r), float(scores[r])) for r in top[np.argsort(-scores[top])]]

    for q, u in qs[:10]:
        search(q, u)
    lat = [timed(lambda q=q, u=u: search(q, u)) for q, u in qs]
    return {"build_s": round(build_ms / 1e3, 3), "insert_p50_ms": pct(rebuild, 50), "update_p50_ms": pct(rebuild, 50),
            "query_p50_ms": pct(lat, 50), "query_p95_ms": pct(lat, 95),
            "per_user_stats": False, "incremental": False}


CANDIDATES = {"graphmem": bench_graphmem, "tantivy": bench_tantivy, "bm25s": bench_bm25s}


def bench_kuzu_vs_mirror(n: int, qs: list[tuple[str, str]], workdir: Path) -> dict[str, Any]:
    """The context() full-text stage on a real file: Kùzu's FTS (the old path) against the mirror.

    Builds a file of ``n`` scale.py learnings (random vectors), then for each query runs both
    paths back to back (interleaved, so a busy machine slows both alike), with the
    ``fulltext_max_postings`` cap and without it. The old path is the previous code's: the kept
    terms to ``QUERY_FTS_INDEX`` for 4×50 hits, then the eligibility mask.
    """
    from benchmarks.scale import build, generate
    from graphmem.config import Settings
    from graphmem.embed import HashEmbedder
    from graphmem.retrieve.candidates import eligible_mask, fulltext_candidates, fulltext_terms
    from graphmem.store import KuzuGraphStore

    specs = generate(n)
    vectors = np.random.default_rng(0).normal(size=(n, HashEmbedder().dim)).astype(np.float32)
    path = workdir / f"lexical_{n}.kuzu"
    build_s = build(path, specs, vectors, HashEmbedder())
    t = time.perf_counter()
    store = KuzuGraphStore(path, dim=HashEmbedder().dim, embedder_name=HashEmbedder().name)
    open_s = time.perf_counter() - t
    s = Settings()
    out: dict[str, list[float]] = {"kuzu_capped": [], "mirror_capped": [], "kuzu_all": [], "mirror_all": []}
    try:
        catalog = store.learning_catalog
        rng = np.random.default_rng(0)
        now = time.time()

        def old(q: str, user: str, mask: np.ndarray, cap: int) -> list[tuple[int, float]]:
            terms = [t for t in dict.fromkeys(q.split()) if catalog.lexical.doc_freq(t) > 0]
            if cap:
                terms = fulltext_terms(catalog, q, cap)  # global df, as the old code did
            rows, hits = catalog.vectors.rows, []
            for ident, score in store.fulltext_learnings(" ".join(terms), 200) if terms else []:
                row = rows.get(ident)
                if row is not None and mask[row]:
                    hits.append((row, score))
            return hits[:50]

        for i, (q, user) in enumerate(qs):
            users = np.fromiter((u == user for u in catalog.user), dtype=bool, count=len(catalog))
            mask = eligible_mask(catalog, users, now, rng)
            for cap, tag in ((s.fulltext_max_postings, "capped"), (0, "all")):
                if i < 5:  # warm-up
                    old(q, user, mask, cap)
                    fulltext_candidates(catalog, q, user, mask, 50, cap, s)
                    continue
                out[f"kuzu_{tag}"].append(timed(lambda q=q, u=user, m=mask, c=cap: old(q, u, m, c)))
                out[f"mirror_{tag}"].append(timed(lambda q=q, u=user, m=mask, c=cap: fulltext_candidates(catalog, q, u, m, 50, c, s)))
    finally:
        store.close()
    res: dict[str, Any] = {"size": n, "candidate": "kuzu-vs-mirror (context full-text stage)",
                           "build_file_s": round(build_s, 1), "open_s": round(open_s, 2)}
    for key, vals in out.items():
        res[f"{key}_p50_ms"] = pct(vals, 50)
        res[f"{key}_p95_ms"] = pct(vals, 95)
    return res


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark from the command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--inserts", type=int, default=200)
    ap.add_argument("--only", nargs="+", choices=list(CANDIDATES), default=list(CANDIDATES))
    ap.add_argument("--short", action="store_true", help="keep the first three terms of each query (2-3 word queries)")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/lexical.json (tracked)")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--kuzu", action="store_true", help="also time Kùzu's FTS against the mirror on a real file (interleaved)")
    args = ap.parse_args(argv)
    out = args.json_out or (RESULTS / "lexical.json" if args.save else RESULTS / "local" / "lexical.json")
    qs = query_set(args.queries, args.short)
    terms = [len(q.split()) for q, _ in qs]
    results: list[dict[str, Any]] = []
    kuzu: list[dict[str, Any]] = []
    for n in args.sizes:
        texts, users, shared = corpus(n)
        for name in args.only:
            r = {"size": n, "candidate": name, **CANDIDATES[name](texts, users, shared, qs, args.inserts)}
            results.append(r)
            print(json.dumps(r), flush=True)
        if args.kuzu:
            import shutil
            import tempfile

            workdir = Path(tempfile.mkdtemp(prefix="graphmem-lexical-"))
            try:
                kuzu.append(bench_kuzu_vs_mirror(n, qs, workdir))
                print(json.dumps(kuzu[-1]), flush=True)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    payload = {"cpu_count": os.cpu_count(), "k": K, "queries": len(qs), "query_terms_mean": round(statistics.fmean(terms), 2),
               "short": args.short, "results": results, "kuzu_vs_mirror": kuzu}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"{'size':>7} {'candidate':<9} {'build s':>8} {'insert ms':>9} {'update ms':>9} {'q p50 ms':>8} {'q p95 ms':>8}  per-user")
    for r in results:
        print(f"{r['size']:>7} {r['candidate']:<9} {r['build_s']:>8} {r['insert_p50_ms']:>9} {r['update_p50_ms']:>9} "
              f"{r['query_p50_ms']:>8} {r['query_p95_ms']:>8}  {r['per_user_stats']}")
    for r in kuzu:
        print(f"{r['size']:>7} context full-text stage p50/p95 ms: Kùzu FTS {r['kuzu_capped_p50_ms']}/{r['kuzu_capped_p95_ms']} "
              f"vs mirror {r['mirror_capped_p50_ms']}/{r['mirror_capped_p95_ms']} (posting cap); all terms: Kùzu "
              f"{r['kuzu_all_p50_ms']}/{r['kuzu_all_p95_ms']} vs mirror {r['mirror_all_p50_ms']}/{r['mirror_all_p95_ms']}")
    print(f"wrote {out}")
    return payload


if __name__ == "__main__":
    main()
