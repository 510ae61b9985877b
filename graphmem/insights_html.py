"""The insights page: a Jinja2 template (autoescaped) and a matplotlib chart inlined as SVG.

One self-contained HTML file: inline CSS, the outcomes chart as inline SVG (text kept as text),
no scripts and no external assets, so it opens anywhere and can be mailed or archived.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphmem.domain_evolution import DomainReport
    from graphmem.insights import DayOutcomes, Insights

TEMPLATES = Path(__file__).parent / "templates"
GREEN, RED, GREY = "#2da44e", "#cf222e", "#afb8c1"

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1f2328;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.cards{display:flex;flex-wrap:wrap;gap:.8rem}.card{border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem;width:13rem}
.card .v{font-size:1.5rem;font-weight:600}.card .k{font-weight:600;font-size:.9rem}.card .d{color:#57606a;font-size:.8rem;margin-top:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin-top:.5rem}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#57606a}
figure.chart{margin:0}figure.chart svg{max-width:100%;height:auto}
"""

#: what each overview card means, in the words the page shows under it
EXPLAIN = {
    "acceptance": "Outcomes the owner accepted (rated good, or a success when unrated), over all outcomes recorded.",
    "pass rate": "Successes over outcomes whose success is known (success or failure).",
    "fallback rate": "Outcomes tagged 'fallback' (the agent fell back to another way), over all outcomes.",
    "retry rate": "Outcomes tagged retry / regenerate / try again, over all outcomes.",
    "rating coverage": "Contexts with a rating (good / okay / bad), over all contexts handed out.",
    "applications": "Contexts handed out by context(): each one an application of some learnings.",
    "with outcome": "Of those, how many got an outcome back (record_outcome).",
    "active canaries": "Learnings being tried on a share of contexts before they become active.",
}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def outcomes_svg(days: Sequence[DayOutcomes], *, width: float = 7.2, height: float = 2.6) -> str:
    """A stacked bar chart of successes / failures / pending per day, drawn by matplotlib, as
    inline SVG with titled axes and a legend ("" when there are no days)."""
    if not days:
        return ""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no global state, safe in a server thread
    from matplotlib.ticker import MaxNLocator

    labels = [d.day for d in days]
    x = list(range(len(days)))
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "graphmem", "font.size": 8}):
        fig = Figure(figsize=(width, height))
        ax = fig.add_subplot()
        bottom = [0] * len(days)
        for name, color, values in (
            ("success", GREEN, [d.successes for d in days]),
            ("failure", RED, [d.failures for d in days]),
            ("pending", GREY, [d.pending for d in days]),
        ):
            ax.bar(x, values, bottom=bottom, color=color, label=name, width=0.7)
            bottom = [b + v for b, v in zip(bottom, values)]
        step = max(1, len(days) // 12)
        ax.set_xticks(x[::step], [label[5:] for label in labels[::step]])
        ax.set_xlabel("day the context was handed out (UTC, month-day)")
        ax.set_ylabel("contexts (applications)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(loc="upper left", frameon=False, ncols=3)
        fig.tight_layout()
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    svg = out.getvalue()
    return svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG sits inside HTML


def render_html(ins: Insights, *, domains: DomainReport | None = None) -> str:
    """The insights as one self-contained HTML page (see the module docstring); with ``domains``
    (``Memory.domains()``), a section on domains, their gaps, lessons and events."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True, lstrip_blocks=True,
    )
    o = ins.overview
    values = {
        "acceptance": _pct(o.acceptance), "pass rate": _pct(o.pass_rate), "fallback rate": _pct(o.fallback_rate),
        "retry rate": _pct(o.retry_rate), "rating coverage": _pct(o.rating_coverage),
        "applications": str(o.applications), "with outcome": str(o.with_outcome),
        "active canaries": str(ins.active_canaries),
    }
    cards = [{"label": k, "value": v, "explain": EXPLAIN[k]} for k, v in values.items()]
    context: dict[str, Any] = {
        "ins": ins,
        "css": CSS,
        "cards": cards,
        "chart": outcomes_svg(ins.outcomes_by_day),
        "days": [[d.day, d.applications, d.successes, d.failures, d.pending] for d in ins.outcomes_by_day],
        "status_rows": sorted(ins.status_counts.items()),
        "tier_rows": sorted(ins.tier_counts.items()),
        "learning_rows": [
            [l.id[:8], l.content, l.status, l.tier, f"{l.score:.3f}", f"{l.confidence:.3f}",
             f"{l.canary_allocation:.2f}", l.helpful, l.harmful, l.times_applied, l.version]
            for l in ins.learnings
        ],
        "timeline_rows": [
            [t.created_at.strftime("%Y-%m-%d %H:%M"), t.learning_id[:8], t.content, t.field, t.old, t.new, t.reason, t.version]
            for t in ins.timeline
        ],
        "session_rows": [
            [m.session_id, m.last_at.strftime("%Y-%m-%d %H:%M") if m.last_at else "", m.contexts, m.outcomes,
             _pct(m.success_rate), m.learnings_created, m.learnings_used, _pct(m.trace_pass_rate)]
            for m in ins.sessions
        ],
    }
    from graphmem.insights_domains import html_context

    context.update(html_context(domains))
    page = env.get_template("insights.html").render(**context).lstrip()
    return re.sub(r"\n{3,}", "\n\n", page)
