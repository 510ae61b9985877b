"""A small tool-using agent that gets better with graphmem, episode after episode.

The agent is written against the Anthropic Messages API (``client.messages.create`` with tools and
a real tool-use loop). Before every model turn that may call a tool it asks graphmem for context
(``mem.context(...)``) and puts ``ctx.to_prompt()`` in its system prompt; it logs the task, every
tool call and result and its final answer with ``mem.record_event``; when the simulated user has
judged the email, it reports the outcome of every context it used with ``mem.record_outcome``.

The simulated user (alice) has hidden preferences: emails to Dana stay under 3 paragraphs and are
signed "Best, Alice". When an email breaks one, alice says so; graphmem turns her message into a
learning (``mem.observe_message``), the next episodes' contexts carry it, and the agent complies.

With ANTHROPIC_API_KEY set it uses Claude; without it, a scripted stand-in with the same
``messages.create`` shape plays the model (it follows whatever the system prompt tells it), so
anyone can watch the loop improve offline in seconds::

    python examples/agent_loop.py                 # offline, HashEmbedder, temporary database
    python examples/agent_loop.py --episodes 8 --db /tmp/agent.kuzu --embedder minilm
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmem import HashEmbedder, Memory

TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup_contact",
        "description": "Look up a contact's email address and company by name.",
        "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    {
        "name": "send_email",
        "description": "Send an email. Paragraphs in body are separated by blank lines.",
        "input_schema": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "subject", "body"],
        },
    },
]
CONTACTS = {"dana": {"email": "dana@acme.example", "company": "Acme"}}
TASKS = [
    "Email Dana about the Q3 renewal",
    "Email Dana the agenda for Thursday's review",
    "Email Dana about the delayed shipment",
    "Email Dana a summary of the pricing call",
    "Email Dana to confirm the onboarding date",
    "Email Dana about the new support hours",
]
BASE_SYSTEM = (
    "You are alice's email assistant. Use lookup_contact to find the recipient, then send_email. "
    "Follow the user's preferences and the learnings below exactly."
)
SIGN_OFF = "Best, Alice"


# --- the scripted stand-in for the model ------------------------------------------------------
@dataclass
class Block:
    """A content block shaped like the SDK's TextBlock / ToolUseBlock."""

    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reply:
    """A response shaped like the SDK's Message (the fields this agent reads)."""

    content: list[Block]
    stop_reason: str
    model: str = "scripted"


class ScriptedMessages:
    """``messages.create`` of a deterministic model that follows its system prompt literally."""

    def __init__(self) -> None:
        self.calls = 0

    def create(self, *, model: str, max_tokens: int, system: str, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]]) -> Reply:
        self.calls += 1
        task = str(messages[0]["content"])
        results = [b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]]
        if not results:
            name = task.split()[1] if len(task.split()) > 1 else "Dana"
            return Reply([Block("tool_use", id=f"tu{self.calls}", name="lookup_contact", input={"name": name})], "tool_use")
        if len(results) == 1:
            email = str(results[0]["content"]).split()[0]
            return Reply([Block("tool_use", id=f"tu{self.calls}", name="send_email",
                                input={"to": email, "subject": task.split(" about ")[-1].split(" the ")[-1].capitalize(),
                                       "body": self._compose(task, system)})], "tool_use")
        return Reply([Block("text", text="Done: the email is sent.")], "end_turn")

    @staticmethod
    def _compose(task: str, system: str) -> str:
        low = system.lower()
        limit = re.search(r"under (\d+) paragraphs", low)
        paragraphs = [
            "Hi Dana,",
            f"I'm writing regarding: {task.lower().removeprefix('email dana ')}.",
            "Here is the background, with every detail we discussed last week laid out in full.",
            "We also reviewed the options, the risks, and the next steps in depth.",
            "Let me know what you think.",
        ]
        if limit:
            keep = max(1, int(limit.group(1)) - 1)
            paragraphs = [" ".join(paragraphs[:2]), " ".join(paragraphs[-1:])][:keep]
        sign = re.search(r"sign (?:emails |off )?(?:to dana )?with ['\"]?([a-z ,]+?)['\"]?(?:[.\n]|$)", low)
        closing = SIGN_OFF if sign and "best" in sign.group(1) else "Regards"
        return "\n\n".join(paragraphs) + f"\n{closing}"


class ScriptedClient:
    """Stands in for ``anthropic.Anthropic()`` when there is no API key."""

    def __init__(self) -> None:
        self.messages = ScriptedMessages()


# --- the simulated user ----------------------------------------------------------------------
def judge(body: str) -> str | None:
    """Alice's reaction to an email to Dana: None if it is fine, else her correction."""
    paragraphs = [p for p in re.split(r"\n\s*\n", body.strip()) if p.strip()]
    if len(paragraphs) >= 3:
        return "Actually, keep emails to Dana under 3 paragraphs, she reads them on her phone."
    if SIGN_OFF not in body:
        return f"Please always sign emails to Dana with '{SIGN_OFF}'."
    return None


def run_tool(name: str, args: dict[str, Any]) -> tuple[str, bool]:
    """Execute a tool: (result text, success)."""
    if name == "lookup_contact":
        contact = CONTACTS.get(str(args.get("name", "")).lower())
        return (f"{contact['email']} ({contact['company']})", True) if contact else ("no such contact", False)
    if name == "send_email":
        return f"sent to {args.get('to')}", True
    return f"unknown tool {name}", False


# --- the agent -----------------------------------------------------------------------------
def run_episode(mem: Memory, client: Any, model: str, task: str, number: int) -> dict[str, Any]:
    """One task: the tool-use loop with graphmem context, logging, the user's verdict, outcomes."""
    session = f"episode-{number}"
    entities = ["Dana"] if "dana" in task.lower() else []
    mem.record_event("message", task, role="user", session_id=session, is_owner=True, entities=entities)
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    contexts: list[tuple[Any, bool | None]] = []  # (context, success of the tool it preceded; None: the email)
    sent_body: str | None = None
    next_tool = "lookup_contact"
    for _turn in range(6):
        # context before the tool call the agent is about to make
        ctx = mem.context(task, tool=next_tool, entities=entities)
        prompt = ctx.to_prompt()
        system = BASE_SYSTEM + ("\n\n" + prompt if prompt else "")
        reply = client.messages.create(model=model, max_tokens=1024, system=system, messages=messages, tools=TOOLS)
        content = [_block_dict(b) for b in reply.content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        if reply.stop_reason != "tool_use" or not uses:
            text = " ".join(b["text"] for b in content if b["type"] == "text").strip() or "(no answer)"
            mem.record_event("message", text, role="assistant", session_id=session, metadata={"model": reply.model})
            contexts.append((ctx, None))
            break
        results = []
        turn_ok: bool | None = True
        for use in uses:
            mem.record_event("tool_call", f"{use['name']}({use['input']})", tool=use["name"], session_id=session,
                             metadata={"input": use["input"], "context_id": ctx.id})
            output, ok = run_tool(use["name"], use["input"])
            mem.record_event("tool_result", output, tool=use["name"], session_id=session, success=ok,
                             metadata={"context_id": ctx.id})
            if use["name"] == "send_email":
                turn_ok = None  # judged by the user below
                sent_body = str(use["input"].get("body", "")) if ok else sent_body
            elif turn_ok is not None:
                turn_ok = turn_ok and ok
            results.append({"type": "tool_result", "tool_use_id": use["id"], "content": output, "is_error": not ok})
        messages.append({"role": "user", "content": results})
        contexts.append((ctx, turn_ok))
        next_tool = "send_email"
    # the simulated user reads the email
    correction = judge(sent_body) if sent_body is not None else "You never sent the email."
    success = correction is None
    learned: list[str] = []
    if correction:
        learned = _learn(mem, correction, session)
    else:
        mem.record_event("feedback", "Thanks, perfect.", role="user", session_id=session, is_owner=True,
                         metadata={"sentiment": "positive"})
    # credit each context with what followed it: the user's verdict on the email, or the tool's result
    for ctx, tool_ok in contexts:
        if tool_ok is None:
            mem.record_outcome(ctx.id, success=success, rating="good" if success else "bad")
        else:
            mem.record_outcome(ctx.id, success=tool_ok)
    shown = sorted({item.learning.content for ctx, _ in contexts for item in ctx.learnings})
    return {"task": task, "success": success, "shown": shown, "correction": correction, "learned": learned,
            "paragraphs": len([p for p in re.split(r"\n\s*\n", (sent_body or "").strip()) if p.strip()])}


def _learn(mem: Memory, correction: str, session: str) -> list[str]:
    """Turn the user's correction into learnings: observe_message, else add_learning."""
    observe = getattr(mem, "observe_message", None)
    if observe is not None:
        new = observe(correction, tool="send_email", is_owner=True)  # the API contract's call
        usable = [l for l in new if l.status in ("active", "canary")]
        if usable:
            return [l.content for l in usable]
    else:
        mem.record_event("message", correction, role="user", session_id=session, is_owner=True, entities=["Dana"])
    learning = mem.add_learning(correction, kind="preference", tool="send_email", entities=["Dana"],
                                source_type="user_feedback", confidence=0.7)
    return [learning.content]


def _block_dict(block: Any) -> dict[str, Any]:
    """An SDK (or scripted) content block as the plain dict the Messages API accepts back."""
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    if block.type == "text":
        return {"type": "text", "text": block.text}
    return block.model_dump() if hasattr(block, "model_dump") else dict(vars(block))


def make_client() -> tuple[Any, str]:
    """The real Anthropic client when ANTHROPIC_API_KEY is set, else the scripted stand-in."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        import anthropic

        return anthropic.Anthropic(), "claude"
    return ScriptedClient(), "scripted"


def main(argv: list[str] | None = None) -> int:
    """Run a few episodes and print one line each, then the loop's insights."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--db", help="database file (default: a temporary one)")
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--model", default=os.environ.get("GRAPHMEM_AGENT_MODEL", "claude-sonnet-5-5"))
    args = parser.parse_args(argv)
    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory()
        args.db = str(Path(tmp.name) / "agent.kuzu")
    if args.embedder == "minilm":
        from graphmem import SentenceTransformerEmbedder

        embedder: Any = SentenceTransformerEmbedder()
    else:
        embedder = HashEmbedder()
    client, kind = make_client()
    print(f"model: {kind if kind == 'scripted' else args.model}   database: {args.db}")
    with Memory(args.db, user="alice", embedder=embedder) as mem:
        for n in range(1, args.episodes + 1):
            r = run_episode(mem, client, args.model, TASKS[(n - 1) % len(TASKS)], n)
            status = "ok  " if r["success"] else "FAIL"
            line = f"episode {n}: {status} {r['paragraphs']} paragraph(s), {len(r['shown'])} learning(s) in context"
            if r["learned"]:
                line += f"  -> learned: {'; '.join(r['learned'])}"
            print(line)
        ins = mem.insights()
        o = ins.overview
        print(f"pass rate {o.pass_rate if o.pass_rate is not None else 0:.0%} over {o.with_outcome} contexts; "
              f"learnings by status: { {k: v for k, v in ins.status_counts.items() if v} }")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
