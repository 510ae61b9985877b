"""The command line as a newcomer meets it: options in any order, one-line usage errors, --help
that describes every option."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphmem.cli import _register_groups, app, hoist_global_options

ROOT = Path(__file__).resolve().parent.parent


def _all_commands() -> list[tuple[list[str], Any]]:
    """Every (command path, click command) of the CLI, sub-commands included."""
    import typer.main

    _register_groups()
    root = typer.main.get_command(app)
    out: list[tuple[list[str], Any]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        out.append((path, cmd))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(root, [])
    return out


def test_global_options_after_the_command(db_path: Path) -> None:
    runner = CliRunner()
    added = runner.invoke(app, ["add", "Keep emails short", "--db", str(db_path), "--embedder", "hash",
                                "--user", "alice", "--json"])
    assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["list", "--db", str(db_path), "--user=alice", "--embedder=hash", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [l["content"] for l in json.loads(listed.stdout)] == ["Keep emails short"]
    # --json before the command goes to the command
    before = runner.invoke(app, ["--json", "--db", str(db_path), "--embedder", "hash", "--user", "alice", "list"])
    assert before.exit_code == 0, before.output
    assert json.loads(before.stdout)[0]["user_id"] == "alice"


def test_a_commands_own_option_is_not_taken_as_global() -> None:
    import typer.main

    _register_groups()
    root = typer.main.get_command(app)
    ctx = root.make_context("graphmem", ["--db", "x", "init"], resilient_parsing=True)
    # forget has its own --user: it stays; --db is moved in front
    assert hoist_global_options(root, ctx, ["forget", "--user", "bob", "--db", "f.kuzu"]) == [
        "--db", "f.kuzu", "forget", "--user", "bob"]
    # bench passes unknown options to the benchmark unchanged
    assert hoist_global_options(root, ctx, ["bench", "learnings", "--embedder", "hash"]) == [
        "bench", "learnings", "--embedder", "hash"]
    assert hoist_global_options(root, ctx, ["list", "--read-only", "--", "--db"]) == [
        "--read-only", "list", "--", "--db"]


def test_usage_errors_are_one_line_and_exit_1() -> None:
    runner = CliRunner()
    for args in (["list", "--no-such-option"], ["no-such-command"], ["show"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        lines = [l for l in result.output.splitlines() if l.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), result.output
        assert "╭" not in result.output


def test_python_m_graphmem_accepts_options_after_the_command(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    db = str(tmp_path / "x.kuzu")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True,
                              env=env, timeout=120, cwd=tmp_path)

    added = run("add", "Reply within a day", "--db", db, "--embedder", "hash", "--user", "alice")
    assert added.returncode == 0, added.stderr
    listed = run("list", "--db", db, "--embedder", "hash", "--user", "alice", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)[0]["content"] == "Reply within a day"
    bad = run("list", "--db", db, "--bogus")
    assert bad.returncode == 1
    assert bad.stderr.strip().count("\n") == 0 and "No such option: --bogus" in bad.stderr


@pytest.mark.parametrize("path_cmd", _all_commands(), ids=lambda pc: " ".join(pc[0]) or "graphmem")
def test_every_option_has_help_and_no_type_labels(path_cmd: tuple[list[str], Any]) -> None:
    path, cmd = path_cmd
    missing = [p.opts[0] for p in cmd.params if not (getattr(p, "help", None) or "").strip()]
    assert not missing, f"graphmem {' '.join(path)}: options without a description: {missing}"
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    labels = re.findall(r"<(?:bool|str|int|float|list\[[^\]]*\]|path|[a-z_]+)>", result.output)
    assert not labels, f"graphmem {' '.join(path)} --help shows type labels {labels}"


def test_list_names_the_users_the_file_holds(make_memory: Any, db_path: Path) -> None:
    alice = make_memory("alice")
    alice.add_learning("Keep emails short")
    alice.close()
    runner = CliRunner()
    base = ["--db", str(db_path), "--embedder", "hash"]
    result = runner.invoke(app, [*base, "list"])
    assert result.exit_code == 0
    assert "(no rows)" in result.stdout
    assert "'default'" in result.stderr and "alice" in result.stderr and "--user" in result.stderr
    stats = runner.invoke(app, [*base, "stats", "--json"])
    assert json.loads(stats.stdout)["Learning"] == 0 and "alice" in stats.stderr
    mine = runner.invoke(app, [*base, "--user", "alice", "list"])
    assert mine.exit_code == 0 and "Keep emails short" in mine.stdout and mine.stderr == ""


def test_read_only_commands_never_load_the_model(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """list, show, stats and cypher open the file with the MiniLM embedder but never load it."""
    from graphmem import HashEmbedder, Memory
    from graphmem.embed import SentenceTransformerEmbedder

    hashed = HashEmbedder()
    monkeypatch.setattr(SentenceTransformerEmbedder, "embed", lambda self, texts: hashed.embed(texts))
    mem = Memory(str(db_path), user="alice", embedder=SentenceTransformerEmbedder())
    learning = mem.add_learning("Keep emails short", tool="send_email")
    mem.close()
    monkeypatch.undo()
    loads: list[int] = []

    def no_load(self: Any) -> Any:
        loads.append(1)
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", no_load)
    runner = CliRunner()
    base = ["--db", str(db_path), "--user", "alice", "--embedder", "minilm"]
    for args in (["list"], ["show", learning.id[:8]], ["stats"], ["cypher", "MATCH (l:Learning) RETURN count(*)"]):
        result = runner.invoke(app, [*base, *args, "--json"])
        assert result.exit_code == 0, (args, result.output)
    assert loads == []


def test_loading_the_model_prints_no_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    from graphmem.embed import SentenceTransformerEmbedder

    vector = SentenceTransformerEmbedder().embed(["hello"])
    assert vector.shape == (1, 384)
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "it/s" not in err


def test_bulk_writes_report_progress(make_memory: Any) -> None:
    mem = make_memory("alice")
    calls: list[tuple[int, int]] = []
    made = mem.add_learnings([{"content": f"Rule number {i} about topic {i % 7}"} for i in range(300)],
                             progress=lambda done, total: calls.append((done, total)))
    assert len(made) == 300
    assert calls and calls[-1] == (300, 300) and all(t == 300 for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) >= 2
    events: list[tuple[int, int]] = []
    mem.record_events([{"kind": "message", "content": f"hello {i}"} for i in range(5)],
                      progress=lambda done, total: events.append((done, total)))
    assert events == [(5, 5)]


def test_no_internal_references_in_user_facing_text() -> None:
    """README and every --help speak to users: no design-document or tracker numbers."""
    banned = re.compile(r"seed 0|issue \d|issue #", re.IGNORECASE)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not banned.findall(readme), [l for l in readme.splitlines() if banned.search(l)]
    runner = CliRunner()
    for path, _ in _all_commands():
        out = runner.invoke(app, [*path, "--help"], terminal_width=200).output
        assert not banned.findall(out), (path, [l for l in out.splitlines() if banned.search(l)])


def test_every_command_summary_is_one_line() -> None:
    """`graphmem --help` lists each command with the first paragraph of its help, unbroken."""
    import inspect

    for path, cmd in _all_commands():
        summary = inspect.cleandoc(cmd.short_help or cmd.help or "").split("\n\n")[0]
        assert summary and "\n" not in summary, (path, summary)


def test_each_benchmark_has_one_name() -> None:
    """`graphmem bench NAME` and `python -m benchmarks.NAME` name the same module, and
    `graphmem bench NAME --help` shows that benchmark's own options."""
    import importlib

    from graphmem.cli.bench import BENCHMARKS

    for name, (module, _, _) in BENCHMARKS.items():
        assert module == f"benchmarks.{name}"
        assert callable(importlib.import_module(module).main)
    result = CliRunner().invoke(app, ["bench", "learnings", "--help"])
    assert result.exit_code == 0, result.output
    assert "--embedder" in result.output and "--history" in result.output
    summaries = subprocess.run([sys.executable, "-m", "benchmarks.summaries", "--help"], capture_output=True,
                               text=True, cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert summaries.returncode == 0 and "--rounds" in summaries.stdout


def test_one_id_rule_for_every_command(make_memory: Any, db_path: Path) -> None:
    mem = make_memory("alice")
    learning = mem.add_learning("Keep emails to Dana short", tool="send_email")
    ctx = mem.context("Email Dana", tool="send_email")
    objective = mem.start_objective("Close the renewal", "email")
    mem.close()
    runner = CliRunner()
    base = ["--db", str(db_path), "--embedder", "hash", "--user", "alice"]
    shown = runner.invoke(app, [*base, "show", learning.id[:8], "--json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout)["learning"]["id"] == learning.id
    done = runner.invoke(app, [*base, "outcome", ctx.id[:8], "--success", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["context_id"] == ctx.id
    logged = runner.invoke(app, [*base, "event", "tool_call", "draft", "--objective", objective.id[:8], "--json"])
    assert logged.exit_code == 0 and json.loads(logged.stdout)["objective_id"] == objective.id
    ended = runner.invoke(app, [*base, "objective", "end", objective.id[:8], "--no-reflect", "--json"])
    assert ended.exit_code == 0, ended.output
    for args, what in ((["show", "deadbeef"], "learning"), (["outcome", "deadbeef", "--success"], "context"),
                       (["objective", "end", "deadbeef"], "objective")):
        missing = runner.invoke(app, [*base, *args])
        assert missing.exit_code == 1
        assert f"no {what} of user 'alice' has an id starting with 'deadbeef'" in missing.stderr
    # another user's ids never match
    other = runner.invoke(app, ["--db", str(db_path), "--embedder", "hash", "--user", "bob", "outcome",
                                ctx.id[:8], "--failure"])
    assert other.exit_code == 1 and "no context of user 'bob'" in other.stderr


def test_cycle_text_and_json_agree(tmp_path: Path) -> None:
    """The same state gives the same window count in text and JSON; a second run evaluates none."""
    from graphmem import HashEmbedder, Memory

    runner = CliRunner()
    outputs = {}
    for name in ("text", "json"):
        db = tmp_path / f"{name}.kuzu"
        with Memory(str(db), user="alice", embedder=HashEmbedder()) as mem:
            mem.add_learning("Keep emails to Dana short", tool="send_email")
            mem.add_learning("Cc Omar on contracts", tool="send_email")
            ctx = mem.context("Email Dana", tool="send_email")
            mem.record_outcome(ctx.id, success=True)
        base = ["--db", str(db), "--embedder", "hash", "--user", "alice", "cycle"]
        outputs[name] = runner.invoke(app, [*base, "--json"] if name == "json" else base)
        assert outputs[name].exit_code == 0, outputs[name].output
        again = runner.invoke(app, [*base, "--json"])
        assert json.loads(again.stdout)["windows"] == [] and json.loads(again.stdout)["windows_evaluated"] == 0
    data = json.loads(outputs["json"].stdout)
    n = len(data["windows"])
    assert n == data["windows_evaluated"] == 2
    assert f"cycle: {n} windows evaluated" in outputs["text"].stdout


def test_observe_says_when_the_llm_failed(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        from tests.fake_anthropic import FakeAnthropic, Scripted, error
    except ImportError:  # tests/ on sys.path instead of the repository root
        from fake_anthropic import FakeAnthropic, Scripted, error  # type: ignore[no-redef]

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        """No injection, no feedback: whatever tool the request forces."""
        name = (request.get("tool_choice") or {}).get("name") or "tool"
        data = ({"is_injection": False, "score": 0.0, "families": [], "reasoning": "plain"}
                if "injection" in name.lower() else {"has_feedback": False, "confidence": 0.9})
        block = {"type": "tool_use", "id": "toolu_fake", "name": name, "input": data}
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake", "content": [block],
                "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}

    runner = CliRunner()
    base = ["--db", str(db_path), "--embedder", "hash", "--user", "alice", "observe"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-bad")
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        fake.push(*[error(401, "authentication_error", "invalid x-api-key") for _ in range(4)])
        failed = runner.invoke(app, [*base, "Keep emails under 3 paragraphs", "--tool", "send_email"])
    assert failed.exit_code == 1, failed.output
    assert "LLM failed" in failed.stderr and "invalid x-api-key" in failed.stderr
    assert "no feedback to learn from" not in failed.output
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        fake.push(*[Scripted(200, answer) for _ in range(4)])
        fine = runner.invoke(app, [*base, "Thanks, that was all"])
    assert fine.exit_code == 0, fine.output
    assert "no feedback to learn from" in fine.stdout
    stats = runner.invoke(app, ["--db", str(db_path), "--embedder", "hash", "--user", "alice", "stats", "--json"])
    assert json.loads(stats.stdout)["Event"] == 2  # both messages were logged


def test_bulk_files_with_progress(tmp_path: Path, db_path: Path) -> None:
    learnings = tmp_path / "learnings.jsonl"
    learnings.write_text("\n".join(json.dumps({"content": f"Rule {i} about topic {i % 5}", "tool": "t"})
                                   for i in range(300)) + "\n", encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"kind": "message", "content": "hello"}) + "\n\n", encoding="utf-8")
    runner = CliRunner()
    base = ["--db", str(db_path), "--embedder", "hash", "--user", "alice"]
    added = runner.invoke(app, [*base, "add-file", str(learnings)])
    assert added.exit_code == 0, added.output
    assert "added 300 learning(s)" in added.stdout
    logged = runner.invoke(app, [*base, "event-file", str(events), "--json"])
    assert logged.exit_code == 0 and len(json.loads(logged.stdout)) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "ok"}\nnot json\n', encoding="utf-8")
    refused = runner.invoke(app, [*base, "add-file", str(bad)])
    assert refused.exit_code == 1 and "bad.jsonl:2" in refused.stderr
    stats = json.loads(runner.invoke(app, [*base, "stats", "--json"]).stdout)
    assert stats["Learning"] == 300 and stats["Event"] == 1
