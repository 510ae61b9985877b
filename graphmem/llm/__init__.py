"""LLM access for graphmem: the :class:`LLM` protocol, its request, its output models, two LLMs.

- :class:`OfflineLLM`: deterministic, rule-based, no network; the embedded default and what tests use.
- :class:`AnthropicLLM`: Anthropic's Messages API with forced structured output (tool use).
- :class:`OpenAICompatibleLLM`: any OpenAI-compatible chat API (OpenAI, Ollama, vLLM, LiteLLM).

Prompt texts and the request builders live in :mod:`graphmem.llm.prompts`. Importing this package
creates no client and reads no environment variable; the anthropic SDK itself is imported only
when :class:`AnthropicLLM` is first used.
"""

from typing import TYPE_CHECKING, Any

from graphmem.llm.base import LLM, TASKS, LLMRequest, Task
from graphmem.llm.offline import OfflineLLM
from graphmem.llm.prompts import (
    feedback_request,
    injection_request,
    judge_request,
    objective_eval_request,
    reflection_request,
    reflector_request,
    summary_request,
)
from graphmem.llm.schemas import (
    EpisodeReflection,
    EvaluationLearning,
    FeedbackAnalysis,
    InjectionVerdict,
    JudgeVerdict,
    ObjectiveEvaluation,
    ReflectorBullet,
    ReflectorOutput,
    SummaryOutput,
)

if TYPE_CHECKING:
    from graphmem.llm.anthropic_llm import AnthropicLLM
    from graphmem.llm.openai_llm import OpenAICompatibleLLM


def __getattr__(name: str) -> Any:
    if name == "AnthropicLLM":
        from graphmem.llm.anthropic_llm import AnthropicLLM

        return AnthropicLLM
    if name == "OpenAICompatibleLLM":
        from graphmem.llm.openai_llm import OpenAICompatibleLLM

        return OpenAICompatibleLLM
    raise AttributeError(f"module 'graphmem.llm' has no attribute {name!r}")


__all__ = [
    "LLM",
    "TASKS",
    "AnthropicLLM",
    "EpisodeReflection",
    "EvaluationLearning",
    "FeedbackAnalysis",
    "InjectionVerdict",
    "JudgeVerdict",
    "LLMRequest",
    "ObjectiveEvaluation",
    "OfflineLLM",
    "OpenAICompatibleLLM",
    "ReflectorBullet",
    "ReflectorOutput",
    "SummaryOutput",
    "Task",
    "feedback_request",
    "injection_request",
    "judge_request",
    "objective_eval_request",
    "reflection_request",
    "reflector_request",
    "summary_request",
]
