"""Soft term matching for event search: each content word of the query against the most similar
word of each event.

The whole-text cosine of a question dilutes its few content words in the rest of the sentence,
and BM25 needs the very same word. "What activities has Melanie done with her family?" is
answered by turns about pottery, camping and swimming "with the kids": no word in common, and
little in common as whole sentences. Word by word it is closer: "family" ~ "kids", "activity" ~
"camping". So each content word ``q`` of the query (stop words and the anchored names, e.g. the
speaker, removed) is compared with every word ``w`` of an event, single words embedded alone by
the same model as the texts, and

    terms(event) = Σ_q idf(q) · max_{w ≠ q} max(0, cos(q, w) − floor) / (1 − floor)  /  Σ_q idf(q)

with ``idf`` over the user's events (a word the query shares with many events counts less) and
``floor`` = ``search_terms_floor`` (weak similarities, which any two words have, count nothing).
The query word itself is left out of the max: BM25 already counts the very word, and with it
the signal only repeated BM25 without its length normalisation (on LoCoMo conversations 0-4 it
then lowered R@10; without it, it raises it).
The words are the normalised terms the lexical index keeps (:func:`graphmem.store.text.tokens`:
lower case, stop words dropped, one suffix stripped).

Costs: every distinct word is embedded once per event catalog (kept in memory,
:class:`WordVectors`; a conversation of a few hundred turns has a few thousand distinct words),
the first search of a user embeds its words not seen yet, later searches only those of the
events written since (in one batch each time), and ``record_events`` embeds a batch's new words
with the batch. A query word none of the user's events holds is left out (a query embeds no
word). Per query: one (query words x user vocabulary) product and a ``np.maximum.reduceat`` over
the flat (event, word) array, well under a millisecond at conversation size. Users with more than ``search_terms_max_events`` events get
no term signal (the flat array and the vocabulary grow with the events).

Off by default (``search_weight_terms`` 0): on LoCoMo its gain (R@10 83.4 -> 83.8, held-out half
82.1 -> 82.4) did not pay for ~3 ms more CPU per search, about twice the ingest CPU at
conversation size, and the vocabulary embedded again on the first search after an open (the
word vectors are not saved with the mirrors).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphmem.store.search import EventLayout
from graphmem.store.text import search_text

Embed = Callable[[list[str]], np.ndarray]

_GROW = 1.5  # growth factor of the kept arrays


class WordVectors:
    """Unit vectors of single words (normalised terms), each embedded once; shared by the users
    of one event catalog. Thread-safe."""

    def __init__(self, dim: int) -> None:
        self.lock = threading.Lock()
        self.index: dict[str, int] = {}
        self._matrix = np.zeros((1024, dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.index)

    @property
    def matrix(self) -> np.ndarray:
        """The vectors, one row per word in :attr:`index` order (a view)."""
        return self._matrix[: len(self.index)]

    def missing(self, words: Sequence[str]) -> list[str]:
        """The distinct words of ``words`` not embedded yet, in order."""
        return [w for w in dict.fromkeys(words) if w not in self.index]

    def put(self, words: Sequence[str], vectors: np.ndarray) -> None:
        """Keep ``vectors`` (one row per word, normalised here) for the words not kept yet."""
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        with self.lock:
            for word, vec in zip(words, unit):
                if word in self.index:
                    continue
                i = len(self.index)
                if i == self._matrix.shape[0]:
                    grown = np.zeros((int(i * _GROW) + 1, self._matrix.shape[1]), dtype=np.float32)
                    grown[:i] = self._matrix
                    self._matrix = grown
                self._matrix[i] = vec
                self.index[word] = i

    def ensure(self, words: Sequence[str], embed: Embed) -> np.ndarray:
        """The rows of ``words`` (embedding those not kept yet, in one call)."""
        new = self.missing(words)
        if new:
            self.put(new, np.asarray(embed(new), dtype=np.float32))
        return np.fromiter((self.index[w] for w in words), dtype=np.int64, count=len(words))


_WORDS: weakref.WeakKeyDictionary[Any, WordVectors] = weakref.WeakKeyDictionary()
_WORDS_LOCK = threading.Lock()


def word_vectors(catalog: Any) -> WordVectors:
    """The kept word vectors of an event catalog (created empty on first use)."""
    with _WORDS_LOCK:
        words = _WORDS.get(catalog)
        if words is None:
            words = _WORDS[catalog] = WordVectors(int(catalog.vectors.dim))
        return words


class TermIndex:
    """One user's events as word ids: ``ids[starts[p]:starts[p + 1]]`` are the distinct words of
    the event at layout position ``p`` (ids into the user's own vocabulary ``local``, whose
    vectors are ``matrix``), and ``df`` counts the events holding each word. Kept on the layout
    and extended to the positions appended since (positions never move)."""

    def __init__(self, dim: int) -> None:
        self.lock = threading.Lock()
        self.count = 0  # layout positions covered
        self.local: dict[str, int] = {}
        self.matrix = np.zeros((256, dim), dtype=np.float32)
        self.df = np.zeros(256, dtype=np.int64)
        self.ids = np.full(4096, -1, dtype=np.int64)
        self.size = 0  # used entries of ids
        self.starts = np.zeros(256, dtype=np.int64)

    def extend(self, layout: EventLayout, terms_of: Callable[[int], Sequence[str]], words: WordVectors,
               embed: Embed) -> None:
        """Cover the layout's positions from :attr:`count` on (their new words embedded first,
        in one batch)."""
        n = len(layout)
        if self.count >= n:
            return
        rows = layout.rows
        per = [list(dict.fromkeys(terms_of(int(rows[p])))) for p in range(self.count, n)]
        words.ensure([w for ts in per for w in ts], embed)
        source = words.matrix
        if n + 1 > self.starts.shape[0]:
            self.starts = np.resize(self.starts, int((n + 1) * _GROW))
        for offset, ts in enumerate(per):
            self.starts[self.count + offset] = self.size
            need = self.size + len(ts) + 1  # and the sentinel
            if need > self.ids.shape[0]:
                self.ids = np.resize(self.ids, int(need * _GROW))
            for t in ts:
                i = self.local.get(t)
                if i is None:
                    i = self._add_word(t, source[words.index[t]])
                self.ids[self.size] = i
                self.df[i] += 1
                self.size += 1
        self.count = n
        self.starts[n] = self.size
        self.ids[self.size] = -1  # sentinel: the zero column term_scores appends (no clipped start)

    def _add_word(self, word: str, vector: np.ndarray) -> int:
        i = len(self.local)
        if i == self.matrix.shape[0]:
            self.matrix = np.resize(self.matrix, (int(i * _GROW) + 1, self.matrix.shape[1]))
            self.df = np.resize(self.df, self.matrix.shape[0])
            self.df[i:] = 0
        self.matrix[i] = vector
        self.local[word] = i
        return i


def term_index(store: Any, user: str, layout: EventLayout, embed: Embed) -> TermIndex:
    """The user's :class:`TermIndex`, extended to the layout's current length."""
    catalog = store.event_catalog
    index: TermIndex | None = layout.derived.get("term_index")
    if index is None:
        index = layout.derived.setdefault("term_index", TermIndex(int(catalog.vectors.dim)))
        layout.keep_on_append.add("term_index")  # positions never move: extended on the next query
    lexical = catalog.lexical
    with index.lock:
        index.extend(layout, lambda row: list(lexical.terms_of(row)), word_vectors(catalog), embed)
    return index


def query_words(query: str, names: Sequence[str]) -> list[str]:
    """The query's distinct normalised content words, without the words of ``names`` (the
    anchored entities: the graph signals cover them)."""
    drop = set(search_text(*names).split()) if names else set()
    return [t for t in dict.fromkeys(search_text(query).split()) if t not in drop and not t.isdigit()]


def term_scores(index: TermIndex, n: int, qvecs: np.ndarray, qwords: Sequence[str], floor: float) -> np.ndarray:
    """Per layout position (``n`` of them), the soft term-matching score of the module
    docstring for the query words ``qwords`` (unit vectors ``qvecs``, one row each), in [0, 1]."""
    out = np.zeros(n)
    vocab = len(index.local)
    if not len(qwords) or n == 0 or vocab == 0 or index.size == 0 or index.count < n:
        return out
    sims = np.zeros((len(qwords), vocab + 1), dtype=np.float32)  # the last column: the sentinel's 0
    # (query words, vocabulary): einsum's own loop, not BLAS; a product this small gains nothing
    # from BLAS threads and, on a busy machine, lost ~7 ms of CPU per query waiting on them
    sims[:, :vocab] = np.einsum("ij,kj->ik", qvecs.astype(np.float32), index.matrix[:vocab])
    np.clip((sims - floor) / (1.0 - floor), 0.0, None, out=sims)
    weight = np.empty(len(qwords))
    for j, word in enumerate(qwords):
        i = index.local.get(word)
        df = 0
        if i is not None:
            df = int(index.df[i])
            sims[j, i] = 0.0  # the word itself: BM25 already counts it (only related words here)
        weight[j] = math.log((n + 1) / (df + 0.5))
    weight = np.clip(weight, 0.0, None)
    total = float(weight.sum())
    if total <= 0:
        return out
    starts = index.starts[:n]
    flat = sims[:, index.ids[: index.size + 1]]  # (query words, entries and the sentinel)
    best = np.maximum.reduceat(flat, starts, axis=1)
    empty = np.diff(index.starts[: n + 1]) == 0  # events without a word (reduceat gives a neighbour's)
    best[:, empty] = 0.0
    return (weight @ best) / total  # type: ignore[no-any-return]


def embedding(embedder: Any) -> Embed:
    """How the term signal embeds words: a few in one forward pass on the query threads, many
    through the embedder's batch path."""
    from graphmem.embed import QUERY_BATCH_MAX, embed_queries

    def embed(texts: list[str]) -> np.ndarray:
        if len(texts) <= QUERY_BATCH_MAX:
            return embed_queries(embedder, texts)
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    return embed


def event_terms(store: Any, embedder: Any, user: str, layout: EventLayout, qwords: Sequence[str],
                floor: float, max_events: int) -> np.ndarray | None:
    """The term signal of every event of ``layout`` for the query words ``qwords`` (see the
    module docstring), or None when there is none (no query word the user's events hold, floor
    1, or more than ``max_events`` events). Only the query words some event of the user holds
    count: their vectors are kept, so a query embeds nothing (embedding the others in the
    query's forward pass cost ~10 ms of CPU; on LoCoMo conversations 0-4 leaving them out gave
    the same R@10)."""
    n = len(layout)
    if not qwords or n == 0 or n > max_events or floor >= 1.0:
        return None
    index = term_index(store, user, layout, embedding(embedder))
    with index.lock:  # a search of the same user may be extending it to events written since
        known = [w for w in qwords if w in index.local]
        if not known:
            return None
        qvecs = index.matrix[[index.local[w] for w in known]]
        return term_scores(index, n, qvecs, known, floor)


def warm_terms(store: Any, embedder: Any, settings: Any, user: str, texts: Sequence[str]) -> None:
    """After a batch of events is written (``record_events``, ``texts`` their contents): embed
    their words not seen yet, in one batch and outside the store's hold, then cover them in the
    user's :class:`TermIndex`, so the next search embeds none. Nothing when the term signal is
    off, the store is not Kùzu's, or the store (all users) or the user has more than
    ``search_terms_max_events`` events (the next search of a user under it covers them then)."""
    from graphmem.store import KuzuGraphStore

    if settings.search_weight_terms <= 0 or not isinstance(store, KuzuGraphStore):
        return
    if len(store.event_catalog) > settings.search_terms_max_events:
        return  # a large store (any user's events): no layout is built here, the search decides
    words = word_vectors(store.event_catalog)
    embed = embedding(embedder)
    new = words.missing([w for text in texts for w in search_text(text).split()])
    with store.snapshot():
        n = len(store.event_layout(user))
    if n == 0 or n > settings.search_terms_max_events:
        return
    if new:
        words.put(new, np.asarray(embed(new), dtype=np.float32))
    with store.snapshot():
        term_index(store, user, store.event_layout(user), embed)
