"""graphmem quickstart: learnings about tools and people, Cypher over them, and what an agent gets.

    make demo                      # sets up .venv and runs this file
    python examples/quickstart.py  # inside the venv; uses a temporary file, removed at the end
    python examples/quickstart.py agent.kuzu   # keeps the database in agent.kuzu

Uses the bundled all-MiniLM-L6-v2 embedder (offline) and the deterministic OfflineLLM.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from graphmem import Memory


def main(db: Path) -> None:
    """Walk through the main API on a fresh database file."""
    with Memory(db, user="alice") as mem:
        # 1. What the agent learned, linked to tools, people, topics and objective types.
        mem.add_learning("Dana at Acme wants bullet points, not prose", kind="preference",
                         tool="send_email", entities=["Dana", "Acme"], topics=["email style"],
                         objective_type="email", confidence=0.8)
        mem.add_learning("Keep emails under 3 paragraphs", tool="send_email", topics=["email style"],
                         sentiment="negative", source_type="user_feedback", confidence=0.9)
        mem.add_learning("Cc Omar on anything about the Acme contract", tool="send_email",
                         entities=["Omar", "Acme"], topics=["contracts"])
        mem.add_learning("Run EXPLAIN before any query on the orders table", tool="run_sql",
                         topics=["sql performance"], kind="checklist")
        mem.add_learning("Never deploy on Fridays", tool="deploy", topics=["deploys"], confidence=0.95)

        # 2. Feedback from the user becomes a learning (offline rules; Anthropic with a key).
        mem.record_event("tool_call", "send_email(to='Dana', body='...five paragraphs...')", tool="send_email")
        learned = mem.observe_message("Actually, keep the emails to Dana short. That last one was too long.",
                                      tool="send_email")
        print("learned from feedback:", [l.content for l in learned])

        # 3. Analysts query the graph with Cypher.
        rows = mem.cypher(
            "MATCH (l:Learning)-[:ABOUT_TOOL]->(t:Tool), (l)-[:MENTIONS]->(e:Entity) "
            "RETURN t.name AS tool, e.name AS entity, l.content AS learning ORDER BY tool, entity"
        )
        print("\nlearnings by tool and entity:")
        for row in rows:
            print(f"  {row['tool']:<11} {row['entity']:<6} {row['learning']}")

        # 4. Before a tool call, the agent asks for context.
        ctx = mem.context("Write to Dana about the Q3 renewal", tool="send_email", limit=4)
        print("\nwhat the agent gets before send_email:")
        for item in ctx.learnings:
            print(f"  {item.score:.3f}  {item.learning.content}")
            print(f"         {'; '.join(item.reasons[:3])}")
        print("\n" + ctx.to_prompt())

        # 5. The outcome flows back to exactly the learnings shown.
        mem.record_outcome(ctx.id, success=True, rating="good")
        top = mem.get_learning(ctx.learnings[0].learning.id)
        print(f"\nafter a good outcome: helpful={top.helpful} score={top.score:.3f}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        target = Path(sys.argv[1])
        main(target)
        print(f"\ndatabase: {target}  (try: graphmem --db {target} --user alice list)")
    else:
        with tempfile.TemporaryDirectory(prefix="graphmem-quickstart-") as folder:
            main(Path(folder) / "quickstart.kuzu")
        print("\n(the database was temporary and is removed; pass a path to keep it: "
              "python examples/quickstart.py agent.kuzu)")
