"""The OpenAI-compatible embedder and LLM against a fake OpenAI API over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphmem import Memory
from graphmem.config import Settings
from graphmem.embed_openai import OpenAIEmbedder
from graphmem.errors import LLMError, LLMValidationError
from graphmem.llm import JudgeVerdict
from graphmem.llm.openai_llm import OpenAICompatibleLLM
from graphmem.llm.prompts import judge_request

try:
    from tests.fake_openai import FakeOpenAI, error, fake_vector, text_only, tool_call
except ImportError:  # tests/ on sys.path instead of the repository root
    from fake_openai import FakeOpenAI, error, fake_vector, text_only, tool_call  # type: ignore[no-redef]

FAST = Settings(llm_timeout_s=2.0, llm_max_retries=2)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dim=16) as server:
        yield server


def a_request() -> object:
    return judge_request("accuracy", "The label must be correct", "tx #1: $5000 at 3am", "legit", "fraud", None)


def test_embedder_returns_unit_rows_in_order(fake: FakeOpenAI) -> None:
    emb = OpenAIEmbedder("fake-embed", dim=16, api_key="k", base_url=fake.url, batch_size=2)
    out = emb.embed(["alpha", "beta", "gamma"])
    assert out.shape == (3, 16) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    want = np.asarray(fake_vector("gamma", 16), dtype=np.float32)
    assert np.allclose(out[2], want / np.linalg.norm(want), atol=1e-6)
    assert len([r for r in fake.requests if r.path.endswith("/embeddings")]) == 2  # batches of 2


def test_llm_forces_the_function_and_validates(fake: FakeOpenAI) -> None:
    fake.push(tool_call({"passed": True, "score": 0.9, "reasoning": "fine"}))
    llm = OpenAICompatibleLLM(FAST, model="fake-chat", api_key="k", base_url=fake.url)
    verdict = llm.generate(a_request(), JudgeVerdict)  # type: ignore[arg-type]
    assert verdict.passed and verdict.score == 0.9
    sent = fake.requests[-1].json
    assert sent["model"] == "fake-chat" and sent["tool_choice"]["function"]["name"] == "record_judge"
    assert sent["tools"][0]["function"]["parameters"]["title"] == "JudgeVerdict"


def test_llm_retries_invalid_arguments_once_then_raises(fake: FakeOpenAI) -> None:
    fake.push(tool_call({"passed": "maybe"}), tool_call({"passed": "maybe"}))
    llm = OpenAICompatibleLLM(FAST, model="fake-chat", api_key="k", base_url=fake.url)
    with pytest.raises(LLMValidationError):
        llm.generate(a_request(), JudgeVerdict)  # type: ignore[arg-type]
    assert len(fake.requests) == 2


def test_llm_errors_are_wrapped_and_retried_by_the_sdk(fake: FakeOpenAI) -> None:
    fake.push(error(500, "boom", {"retry-after-ms": "10"}), tool_call({"passed": False, "score": 0.1, "reasoning": "no"}))
    llm = OpenAICompatibleLLM(FAST, model="fake-chat", api_key="k", base_url=fake.url)
    assert not llm.generate(a_request(), JudgeVerdict).passed  # type: ignore[arg-type]
    fake.push(error(401, "bad key"))
    with pytest.raises(LLMError, match="HTTP 401"):
        llm.generate(a_request(), JudgeVerdict)  # type: ignore[arg-type]
    fake.push(text_only("I would rather chat"))
    with pytest.raises(LLMError, match="no record_judge call"):
        llm.generate(a_request(), JudgeVerdict)  # type: ignore[arg-type]


def test_memory_runs_on_the_openai_adapters(fake: FakeOpenAI, tmp_path: Path) -> None:
    emb = OpenAIEmbedder("fake-embed", dim=16, api_key="k", base_url=fake.url)
    llm = OpenAICompatibleLLM(Settings(injection_llm_judge=False), model="fake-chat", api_key="k", base_url=fake.url)
    fake.push(tool_call({"has_feedback": True, "feedback_type": "correction", "about_tool": "send_email",
                         "what_to_do_instead": "Keep emails under 3 paragraphs", "sentiment": "negative",
                         "confidence": 0.9, "learning": "Keep emails under 3 paragraphs"}))
    with Memory(tmp_path / "m.kuzu", user="alice", embedder=emb, llm=llm,
                settings=Settings(injection_llm_judge=False)) as mem:
        learned = mem.observe_message("Keep emails under 3 paragraphs please", tool="send_email")
        assert [l.content for l in learned] == ["Keep emails under 3 paragraphs"]
        ctx = mem.context("write an email", tool="send_email")
        assert [i.learning.id for i in ctx.learnings] == [learned[0].id]
