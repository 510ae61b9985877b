"""Retrieval: candidates (vector, full-text, graph), fusion, selection and context assembly.

``Memory.context()`` and ``Memory.search()`` use :class:`Retriever` / :func:`rank_learnings`;
:class:`AssembledContext` and :class:`ScoredLearning` are what callers get back.
"""

from graphmem.retrieve.context import AssembledContext, ScoredLearning, estimate_tokens, pack
from graphmem.retrieve.rank import Retriever, rank_learnings

__all__ = ["AssembledContext", "Retriever", "ScoredLearning", "estimate_tokens", "pack", "rank_learnings"]
