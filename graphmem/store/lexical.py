"""An in-memory lexical (BM25) index with per-user term statistics.

``Memory.context()`` and ``search(over="events")`` need a full-text signal on every call. Kùzu's
``QUERY_FTS_INDEX`` costs 8-24 ms per query at 100k learnings, aborts the process when it runs
while another connection writes the indexed table (Kùzu 0.11.3), and scores with global
statistics, so one user's volume changes every other user's ranking. This index is the hot-path
mirror instead: like the embedding matrix, it is rebuilt from the database file on open and
updated after every commit; Kùzu stays the source of truth and keeps its FTS index for analysts.

Documents are addressed by an integer ``row`` the owner chooses (the catalogs use their matrix
rows, and call :meth:`LexicalIndex.move` when they swap-remove). A document belongs to one user,
or is *shared* (visible to everyone). Statistics are kept per bucket: one per user plus one for
shared documents. For user ``u``, BM25 uses the documents ``u`` can see, own plus shared:

    N_u = n[u] + n[shared]                      avgdl_u = (len[u] + len[shared]) / N_u
    df_u(t) = df[u][t] + df[shared][t]
    idf = ln(1 + (N_u - df_u + 0.5) / (df_u + 0.5))                    (Lucene's, as Kùzu's FTS)
    score(d) = Σ_t idf(t) · tf·(k1 + 1) / (tf + k1·(1 - b + b·dl/avgdl_u))

so adding any number of documents for another user changes neither ``u``'s scores nor order.
Query terms count once each. Postings are numpy arrays per term (rows and term frequencies,
unordered, swap-delete), so a query costs a few vectorised operations per query term.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from graphmem.store.text import search_text

SHARED = 0  # bucket code of shared documents; users get codes from 1
_LOAD_BLOCK = 65_536  # documents tokenised together by LexicalIndex.load
_SCRATCH_KEPT = 2  # zeroed per-row arrays kept for queries over many postings (more: made afresh)


class _Postings:
    """One term's postings: rows and term frequencies (growable, unordered)."""

    __slots__ = ("n", "rows", "tf")

    def __init__(self, rows: np.ndarray, tf: np.ndarray) -> None:
        self.rows = rows
        self.tf = tf
        self.n = int(rows.shape[0])

    def append(self, row: int, tf: float) -> None:
        if self.n == self.rows.shape[0]:
            cap = max(4, 2 * self.n)
            rows = np.empty(cap, dtype=np.int64)
            rows[: self.n] = self.rows[: self.n]
            tfs = np.empty(cap, dtype=np.float64)
            tfs[: self.n] = self.tf[: self.n]
            self.rows, self.tf = rows, tfs
        self.rows[self.n] = row
        self.tf[self.n] = tf
        self.n += 1

    def _find(self, row: int) -> int:
        hit = np.flatnonzero(self.rows[: self.n] == row)
        if hit.size == 0:
            raise KeyError(row)
        return int(hit[0])

    def delete(self, row: int) -> None:
        i, last = self._find(row), self.n - 1
        if i != last:
            self.rows[i] = self.rows[last]
            self.tf[i] = self.tf[last]
        self.n = last

    def rename(self, old: int, new: int) -> None:
        self.rows[self._find(old)] = new


def _terms(text: str | Sequence[str] | None) -> list[str]:
    if text is None:
        return []
    return text.split() if isinstance(text, str) else [t for t in text if t]


_EMPTY_ROWS = np.zeros(0, dtype=np.int64)
_EMPTY_TF = np.zeros(0, dtype=np.float64)


class _Docs:
    """row -> normalised text. The texts a snapshot held stay in its Arrow string array (mapped
    from the file: no Python string and no dict entry per document, ~200 MB at 1M learnings);
    rows written since live in a dict over it, and a mask marks the array's rows gone since."""

    __slots__ = ("_base", "_count", "_live", "_over")

    def __init__(self, base: Any = None) -> None:
        self._base = base  # a pyarrow StringArray (None: no snapshot)
        self._live = (np.zeros(0, dtype=bool) if base is None
                      else np.asarray(base.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
        self._over: dict[int, str] = {}
        self._count = int(self._live.sum())

    def _in_base(self, row: int) -> bool:
        return 0 <= row < self._live.shape[0] and bool(self._live[row])

    def __len__(self) -> int:
        return self._count

    def keys(self) -> list[int]:
        """The rows holding a document, ascending."""
        return sorted([*self._over, *np.flatnonzero(self._live).tolist()])

    def __iter__(self) -> Iterator[int]:
        return iter(self.keys())

    def items(self) -> list[tuple[int, str]]:
        """(row, text) of every document, rows ascending."""
        return [(row, self[row]) for row in self.keys()]

    def __contains__(self, row: object) -> bool:
        return row in self._over or (isinstance(row, (int, np.integer)) and self._in_base(int(row)))

    def get(self, row: int, default: str | None = None) -> str | None:
        text = self._over.get(row)
        if text is not None:
            return text
        if self._in_base(row):
            return str(self._base[row].as_py())
        return default

    def __getitem__(self, row: int) -> str:
        text = self.get(row)
        if text is None:
            raise KeyError(row)
        return text

    def __setitem__(self, row: int, text: str) -> None:
        if self._in_base(row):
            self._live[row] = False
        elif row not in self._over:
            self._count += 1
        self._over[row] = text

    def pop(self, row: int, default: str | None = None) -> str | None:
        text = self._over.pop(row, None)
        if text is None and self._in_base(row):
            text = str(self._base[row].as_py())
            self._live[row] = False
        if text is None:
            return default
        self._count -= 1
        return text


class LexicalIndex:
    """BM25 over short normalised texts with per-user statistics (see the module docstring).

    Storage: per row its normalised text (split again only when it is updated or removed), its
    length and bucket in numpy arrays; postings as one CSR block built by :meth:`load` plus a
    growable per-term copy for each term written since (taken on its first change).
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = float(k1)
        self.b = float(b)
        # zeroed sums and marks of every row for queries over many postings (:meth:`scores`)
        self._scratch: list[tuple[np.ndarray, np.ndarray]] = []
        self._scratch_lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._docs = _Docs()  # row -> normalised text
        self._post: dict[str, _Postings] = {}  # terms changed since load (or new)
        self._base_id: dict[str, int] = {}  # terms of the loaded CSR block -> index
        self._base_off = np.zeros(1, dtype=np.int64)
        self._base_rows = _EMPTY_ROWS
        self._base_tf = _EMPTY_TF
        self._codes: dict[str, int] = {}  # user -> bucket code (>= 1)
        self._n: list[int] = [0]  # per bucket: documents
        self._len: list[float] = [0.0]  # per bucket: summed document lengths
        self._df: list[Counter[str]] = [Counter()]  # per bucket: term -> documents
        self._bucket = np.full(16, -1, dtype=np.int64)  # per row: bucket code (-1: empty)
        self._dl = np.zeros(16, dtype=np.float64)  # per row: document length (tokens)

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, row: object) -> bool:
        return row in self._docs

    # --- postings ----------------------------------------------------------------------------
    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, tf) of ``term`` (views: do not keep them across writes)."""
        post = self._post.get(term)
        if post is not None:
            return post.rows[: post.n], post.tf[: post.n]
        i = self._base_id.get(term)
        if i is None:
            return _EMPTY_ROWS, _EMPTY_TF
        lo, hi = self._base_off[i], self._base_off[i + 1]
        return self._base_rows[lo:hi], self._base_tf[lo:hi]

    def _mutable(self, term: str) -> _Postings:
        post = self._post.get(term)
        if post is None:
            rows, tf = self._postings(term)
            post = _Postings(rows.copy(), tf.copy())
            self._post[term] = post
        return post

    # --- buckets -----------------------------------------------------------------------------
    def _code(self, user: str, create: bool = True) -> int:
        code = self._codes.get(user)
        if code is None:
            if not create:
                return -1
            code = len(self._n)
            self._codes[user] = code
            self._n.append(0)
            self._len.append(0.0)
            self._df.append(Counter())
        return code

    def _ensure(self, row: int) -> None:
        if row >= self._bucket.shape[0]:
            cap = max(row + 1, 2 * self._bucket.shape[0])
            bucket = np.full(cap, -1, dtype=np.int64)
            bucket[: self._bucket.shape[0]] = self._bucket
            dl = np.zeros(cap, dtype=np.float64)
            dl[: self._dl.shape[0]] = self._dl
            self._bucket, self._dl = bucket, dl

    def _count(self, bucket: int, tf: Counter[str], sign: int) -> None:
        self._n[bucket] += sign
        self._len[bucket] += sign * sum(tf.values())
        df = self._df[bucket]
        for term in tf:
            df[term] += sign
            if df[term] <= 0:
                del df[term]

    # --- writes ------------------------------------------------------------------------------
    def add(self, row: int, user: str, shared: bool, text: str | Sequence[str]) -> None:
        """Index (or re-index) document ``row``: normalised text (or its tokens), owner, shared flag.

        Re-adding a row with the same text only moves it between buckets when its owner or
        shared flag changed; with new text its postings are replaced.
        """
        terms = _terms(text)
        tf = Counter(terms)
        old = self._docs.get(row)
        if old is not None:
            if Counter(old.split()) == tf:
                self.set_owner(row, user, shared)
                return
            self.remove(row)
        bucket = SHARED if shared else self._code(user)
        self._ensure(row)
        self._docs[row] = " ".join(terms)
        self._bucket[row] = bucket
        self._dl[row] = len(terms)
        self._count(bucket, tf, +1)
        for term, f in tf.items():
            self._mutable(term).append(row, f)

    update = add

    def set_owner(self, row: int, user: str, shared: bool) -> None:
        """Move document ``row`` to another owner or in/out of the shared bucket (text unchanged)."""
        bucket = SHARED if shared else self._code(user)
        old = int(self._bucket[row])
        if bucket != old:
            tf = Counter(self._docs[row].split())
            self._count(old, tf, -1)
            self._count(bucket, tf, +1)
            self._bucket[row] = bucket

    def remove(self, row: int) -> None:
        """Forget document ``row`` (no-op when absent)."""
        text = self._docs.pop(row, None)
        if text is None:
            return
        tf = Counter(text.split())
        self._count(int(self._bucket[row]), tf, -1)
        self._bucket[row] = -1
        self._dl[row] = 0.0
        for term in tf:
            self._mutable(term).delete(row)

    def move(self, src: int, dst: int) -> None:
        """Renumber document ``src`` as ``dst`` (a free row), as a swap-remove does."""
        if src == dst:
            return
        if dst in self._docs:
            raise ValueError(f"row {dst} is taken")
        text = self._docs.pop(src, None)
        if text is None:
            return
        self._ensure(dst)
        self._docs[dst] = text
        self._bucket[dst], self._bucket[src] = self._bucket[src], -1
        self._dl[dst], self._dl[src] = self._dl[src], 0.0
        for term in set(text.split()):
            self._mutable(term).rename(src, dst)

    def load(self, texts: Sequence[str | Sequence[str] | None], users: Sequence[str], shared: Sequence[bool]) -> None:
        """Replace everything with documents at rows 0..n-1 (used when a file is opened).

        Vectorised: one pass to map tokens to ids, then numpy sorts build the postings (CSR)
        and the per-bucket document frequencies.
        """
        self._reset()
        n = len(texts)
        self._bucket = np.full(max(16, n), -1, dtype=np.int64)
        self._dl = np.zeros(max(16, n), dtype=np.float64)
        if n == 0:
            return
        docs = [t if isinstance(t, str) else " ".join(_terms(t)) for t in texts]
        self._docs = _Docs()
        self._docs._over = dict(enumerate(docs))
        self._docs._count = n
        lengths = np.fromiter((d.count(" ") + 1 if d else 0 for d in docs), dtype=np.int64, count=n)
        # term ids in C: a word's id is the position of its first occurrence, made dense by unique;
        # the documents are split a block at a time (one list of every word of 1M documents
        # would be ~20M Python strings at once)
        first: dict[str, int] = {}
        position = itertools.count()
        blocks = []
        for start in range(0, n, _LOAD_BLOCK):
            words = " ".join(docs[start : start + _LOAD_BLOCK]).split()
            blocks.append(np.fromiter(map(first.setdefault, words, position), dtype=np.int64, count=len(words)))
        del words
        raw = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
        del blocks
        if int(lengths.sum()) != raw.shape[0]:  # irregular spacing: count the slow way
            lengths = np.fromiter((len(d.split()) for d in docs), dtype=np.int64, count=n)
        _, flat = np.unique(raw, return_inverse=True)
        flat = flat.reshape(-1)
        vocab = dict(zip(first, range(len(first))))  # dict order = first occurrence = dense order
        bucket = np.fromiter(
            (SHARED if sh else self._code(u) for u, sh in zip(users, shared)), dtype=np.int64, count=n
        )
        self._bucket[:n] = bucket
        self._dl[:n] = lengths
        n_buckets = len(self._n)
        self._n = np.bincount(bucket, minlength=n_buckets).tolist()
        self._len = np.bincount(bucket, weights=lengths, minlength=n_buckets).tolist()
        if flat.size == 0:
            return
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        keys, tf = np.unique(flat * n + rows, return_counts=True)  # sorted by term, then row
        term_of, row_of = keys // n, keys % n
        v = len(vocab)
        self._base_off = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of, minlength=v), out=self._base_off[1:])
        self._base_rows = row_of
        self._base_tf = tf.astype(np.float64)
        self._base_id = vocab
        names = np.asarray(list(vocab), dtype=object)
        pairs, df = np.unique(bucket[row_of] * v + term_of, return_counts=True)  # by bucket, term
        pair_bucket = pairs // v
        bounds = np.searchsorted(pair_bucket, np.arange(n_buckets + 1))
        for b in range(n_buckets):
            lo, hi = bounds[b], bounds[b + 1]
            self._df[b] = Counter(dict(zip(names[pairs[lo:hi] % v].tolist(), df[lo:hi].tolist())))

    # --- snapshot (graphmem/store/snapshot.py) -----------------------------------------------
    def snapshot_arrays(self, n: int) -> dict[str, Any]:
        """The index over rows ``0..n-1`` as arrays and string lists (postings of every term in
        one CSR block, each term's rows ascending; per-bucket document frequencies as CSR)."""
        names = list(self._base_id)
        lens = np.diff(self._base_off)
        keep = np.fromiter((t not in self._post for t in names), dtype=bool, count=len(names))
        if self._post:
            entry_keep = np.repeat(keep, lens)
            row_parts, tf_parts = [self._base_rows[entry_keep]], [self._base_tf[entry_keep]]
        else:  # nothing written since the load: the loaded block as it is
            row_parts, tf_parts = [self._base_rows], [self._base_tf]
        terms = [t for t, k in zip(names, keep.tolist()) if k]
        counts = [lens[keep]]
        for term, post in self._post.items():
            if post.n:
                order = np.argsort(post.rows[: post.n], kind="stable")
                row_parts.append(post.rows[: post.n][order])
                tf_parts.append(post.tf[: post.n][order])
                terms.append(term)
                counts.append(np.asarray([post.n], dtype=np.int64))
        off = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.concatenate(counts), out=off[1:])
        term_id = {t: i for i, t in enumerate(terms)}
        df_off = np.zeros(len(self._df) + 1, dtype=np.int64)
        df_term: list[int] = []
        df_count: list[int] = []
        for b, counter in enumerate(self._df):
            df_term.extend(term_id[t] for t in counter)
            df_count.extend(counter.values())
            df_off[b + 1] = len(df_term)
        users = [""] * (len(self._n) - 1)
        for user, code in self._codes.items():
            users[code - 1] = user
        return {
            "off": off, "rows": np.concatenate(row_parts), "tf": np.concatenate(tf_parts), "terms": terms,
            "bucket": self._bucket[:n].copy(), "dl": self._dl[:n].copy(),
            "df_off": df_off, "df_term": np.asarray(df_term, dtype=np.int32), "df_count": np.asarray(df_count, dtype=np.int64),
            "texts": [self._docs.get(r) for r in range(n)], "users": users,
            "n": list(self._n), "len": list(self._len),
        }

    def load_snapshot_arrays(self, parts: dict[str, Any]) -> None:
        """Replace everything with what :meth:`snapshot_arrays` returned (on open)."""
        self._reset()
        texts = parts["texts"]
        n = len(texts)
        if isinstance(texts, list):
            self._docs = _Docs()
            self._docs._over = {r: t for r, t in enumerate(texts) if t is not None}
            self._docs._count = len(self._docs._over)
        else:  # a pyarrow string array (a snapshot's, mapped): read a text when asked for
            self._docs = _Docs(texts)
        self._base_id = dict(zip(parts["terms"], range(len(parts["terms"]))))
        self._base_off, self._base_rows, self._base_tf = parts["off"], parts["rows"], parts["tf"]
        self._codes = {u: i + 1 for i, u in enumerate(parts["users"])}
        self._n, self._len = list(parts["n"]), list(parts["len"])
        self._bucket = np.full(max(16, n), -1, dtype=np.int64)
        self._bucket[:n] = parts["bucket"]
        self._dl = np.zeros(max(16, n), dtype=np.float64)
        self._dl[:n] = parts["dl"]
        names = np.asarray(parts["terms"], dtype=object)
        off, term, count = parts["df_off"].tolist(), parts["df_term"], parts["df_count"]
        self._df = [Counter(dict(zip(names[term[off[b] : off[b + 1]]].tolist(), count[off[b] : off[b + 1]].tolist())))
                    for b in range(len(off) - 1)]

    # --- statistics --------------------------------------------------------------------------
    def stats(self, user: str) -> tuple[int, float]:
        """(N, avgdl) over the documents ``user`` can see (own plus shared)."""
        code = self._code(user, create=False)
        n = self._n[SHARED] + (self._n[code] if code > 0 else 0)
        total = self._len[SHARED] + (self._len[code] if code > 0 else 0.0)
        return n, (total / n if n else 0.0)

    def doc_freq(self, term: str, user: str | None = None) -> int:
        """Documents containing ``term``: those ``user`` can see, or all with ``user`` None."""
        if user is None:
            return int(self._postings(term)[0].shape[0])
        code = self._code(user, create=False)
        return self._df[SHARED].get(term, 0) + (self._df[code].get(term, 0) if code > 0 else 0)

    def terms_of(self, row: int) -> Counter[str]:
        """The term frequencies of document ``row`` (empty when absent)."""
        return Counter((self._docs.get(row) or "").split())

    # --- queries -----------------------------------------------------------------------------
    def query_terms(self, query: str | Sequence[str]) -> list[str]:
        """Distinct query terms: raw text is normalised with ``search_text``; a list is used as is."""
        terms = search_text(query).split() if isinstance(query, str) else [t for t in query if t]
        return list(dict.fromkeys(terms))

    def scores(
        self,
        query: str | Sequence[str],
        user: str,
        mask: np.ndarray | None = None,
        *,
        k1: float | None = None,
        b: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every matching document ``user`` can see (and ``mask`` allows): (rows, BM25 scores).

        ``query`` is raw text (normalised here) or a sequence of normalised terms. ``mask`` is a
        boolean array over rows (rows past its end count as excluded). ``k1`` and ``b`` override
        the index's parameters for this query (the statistics do not depend on them).
        """
        code = self._code(user, create=False)
        n_docs, avgdl = self.stats(user)
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if n_docs == 0 or avgdl <= 0:
            return empty
        k1 = self.k1 if k1 is None else float(k1)
        b = self.b if b is None else float(b)
        parts_rows: list[np.ndarray] = []
        parts_scores: list[np.ndarray] = []
        for term in self.query_terms(query):
            df = self.doc_freq(term, user)
            if df <= 0:
                continue
            rows, tf = self._postings(term)
            if mask is not None or df < rows.shape[0]:  # (df == the postings: the user sees every one)
                bucket = self._bucket[rows]
                keep = (bucket == SHARED) | (bucket == code) if code > 0 else bucket == SHARED
                if mask is not None:
                    inside = rows < mask.shape[0]
                    keep &= inside
                    keep[inside] &= mask[rows[inside]]
                rows, tf = rows[keep], tf[keep]
            if rows.size == 0:
                continue
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            norm = k1 * (1.0 - b + b * self._dl[rows] / avgdl)
            parts_rows.append(rows)
            parts_scores.append(idf * tf * (k1 + 1.0) / (tf + norm))
        if not parts_rows:
            return empty
        if len(parts_rows) == 1:
            return parts_rows[0], parts_scores[0]
        if sum(r.size for r in parts_rows) * 8 < self._bucket.shape[0]:
            # few postings against every row: group them by sorting instead of a pass over an
            # array of every row (5.5 against 0.1 ms at a million rows and 2,000 postings); the
            # sums add each row's term scores in the same order, so the values are the same
            hit, inverse = np.unique(np.concatenate(parts_rows), return_inverse=True)
            return hit, np.bincount(inverse, weights=np.concatenate(parts_scores), minlength=hit.size)
        # many postings: sums in an array of every row (each term holds a row once), with a mark
        # per row (one byte: the pass that finds the rows hit reads 1 MB at a million rows, not
        # 8); both kept between queries and zeroed again at the rows used (a fresh 9 MB per query
        # costs ~1 ms more). An error on the way drops them (they may be dirty).
        size = self._bucket.shape[0]
        with self._scratch_lock:
            scratch = self._scratch.pop() if self._scratch else None
        if scratch is None or scratch[0].shape[0] != size:
            scratch = (np.zeros(size, dtype=np.float64), np.zeros(size, dtype=np.uint8))
        acc, mark = scratch
        for j, (rows, part) in enumerate(zip(parts_rows, parts_scores)):
            if j == 0:
                acc[rows] = part  # (0.0 + x is x: the same sums without reading the zeros)
            else:
                acc[rows] += part
            mark[rows] = 1
        hit = np.flatnonzero(mark)
        got = acc[hit]
        acc[hit] = 0.0
        mark[hit] = 0
        with self._scratch_lock:
            if len(self._scratch) < _SCRATCH_KEPT:
                self._scratch.append(scratch)
        return hit, got

    def search(
        self,
        query: str | Sequence[str],
        user: str,
        k: int,
        mask: np.ndarray | None = None,
        *,
        k1: float | None = None,
        b: float | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best (row, BM25 score) for ``user``, best first (ties: lower row first).

        Arguments as for :meth:`scores`.
        """
        if k <= 0:
            return []
        rows, scores = self.scores(query, user, mask, k1=k1, b=b)
        if rows.size == 0:
            return []
        if rows.size > k:
            top = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[top], scores[top]
        order = np.lexsort((rows, -scores))
        return [(int(rows[i]), float(scores[i])) for i in order]
