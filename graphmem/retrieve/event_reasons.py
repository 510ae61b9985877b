"""The ``reasons`` of an event hit: which signals found it and what each added, in words."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphmem.config import Settings


def event_reasons(i: int, sig: Any, parts: dict[str, np.ndarray], tool: str | None, settings: Settings) -> list[str]:
    """The reasons of the event at layout position ``i`` from its signals ``sig`` (the search's
    ``_Signals``) and the ranking's ``parts``, strongest kinds first."""
    s = settings
    out = []
    if parts["vector"][i] > 0:
        out.append(f"vector: cosine {sig.dense[i]:.3f} (rank {int(parts['dense_rank'][i])})")
    if sig.bm25[i] > 0:
        out.append(f"fulltext: bm25 {sig.bm25[i]:.3f} (rank {int(parts['bm_rank'][i])})")
    if sig.entity[i] and s.search_weight_entity:
        out.append("graph: via entity " + ", ".join(sig.entity_names.get(i, [])))
    if sig.mention[i] and s.search_weight_mention and not (sig.entity[i] and s.search_weight_entity):
        out.append("graph: text names " + ", ".join(sig.entity_names.get(i, [])))
    if sig.date[i] and s.search_weight_date:
        out.append("time: from a session in the period the query names")
    if s.search_weight_hop * parts["hop"][i] >= 0.02 and sig.hop_via:
        out.append(f"graph: second hop via {sig.hop_via.get(i, '?')} (+{s.search_weight_hop * parts['hop'][i]:.3f})")
    if s.search_weight_prf * parts["prf"][i] >= 0.02:
        out.append(f"words: shares rarer words with the best hits (+{s.search_weight_prf * parts['prf'][i]:.3f})")
    if s.search_weight_rocchio * parts["rocchio"][i] >= 0.02:
        out.append(f"vector feedback: close to the best hits (+{s.search_weight_rocchio * parts['rocchio'][i]:.3f})")
    if sig.tool[i] and s.search_weight_tool:
        out.append(f"graph: via tool {tool}")
    if sig.temporal[i] and s.search_weight_time:
        out.append("time: holds a date or time expression")
    if sig.length is not None and s.search_weight_length * sig.length[i] >= 0.02:
        out.append(f"turn: a longer turn than most (+{s.search_weight_length * sig.length[i]:.3f})")
    if sig.asks is not None and sig.asks[i] and s.search_weight_question_turn:
        out.append(f"turn: asks a question (-{s.search_weight_question_turn:.3f})")
    terms = (s.search_weight_terms * sig.terms[i] / float(sig.terms.max())
             if sig.terms is not None and sig.terms[i] > 0 else 0.0)
    if terms >= 0.02:
        out.append(f"words: holds words related to the query's (+{terms:.3f})")
    if s.search_weight_continuation * parts["continuation"][i] >= 0.02:
        out.append(f"conversation: the same speaker's turn next to a best hit (+{s.search_weight_continuation * parts['continuation'][i]:.3f})")
    if s.search_weight_neighbour * parts["near"][i] >= 0.05:
        out.append(f"session: next to a strong hit (+{s.search_weight_neighbour * parts['near'][i]:.3f})")
    return out
