"""The LLM protocol every learning step calls, and the request it takes.

An :class:`LLMRequest` carries the same facts twice: ``prompt`` (the full text a real model
reads, built by :mod:`graphmem.llm.prompts`) and ``inputs`` (the facts as plain data, which the
rule-based :class:`~graphmem.llm.offline.OfflineLLM` reads). An :class:`LLM` turns a request into
a validated instance of the pydantic model it is asked for, or raises
:class:`~graphmem.errors.LLMError` / :class:`~graphmem.errors.LLMValidationError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Task = Literal[
    "feedback", "objective_eval", "reflection", "judge", "reflector", "summary", "injection", "contradiction",
    "crossover", "bullet_test", "weakness",
]
"""The kinds of request an LLM answers; each has one output model in :mod:`.schemas`."""

TASKS: tuple[str, ...] = get_args(Task)
"""All task names, in a stable order."""

T = TypeVar("T", bound=BaseModel)

if TYPE_CHECKING:
    from graphmem.llm.schemas import InjectionVerdict


class LLMRequest(BaseModel):
    """One call to an LLM: the task, the prompt text, and the same facts as structured inputs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: Task = Field(description="Which task this is; selects the offline rules and the tool name.")
    prompt: str = Field(description="The full user prompt a real model reads.")
    system: str = Field(default="", description="The system prompt (may be empty).")
    inputs: dict[str, Any] = Field(
        default_factory=dict, description="The prompt's facts as data, for rule-based models."
    )


@runtime_checkable
class LLM(Protocol):
    """Anything that answers an :class:`LLMRequest` with a validated pydantic model."""

    name: str

    def generate(self, request: LLMRequest, schema: type[T]) -> T:
        """Answer ``request`` with a validated instance of ``schema``.

        Raises :class:`~graphmem.errors.LLMError` when the model fails, times out or gives no
        usable answer, and :class:`~graphmem.errors.LLMValidationError` when its answer does not
        validate against ``schema``.
        """
        ...

    def judge_injection(self, text: str, *, channel: str = "unknown") -> InjectionVerdict:
        """Screen ``text`` (a would-be learning from ``channel``) for injected instructions.

        The curator calls it for every learning it is given (see
        :mod:`graphmem.learn.screening`); an LLM without this method is asked through
        ``generate`` with :func:`graphmem.llm.prompts.injection_request` instead.
        Raises like :meth:`generate`.
        """
        ...


__all__ = ["LLM", "TASKS", "LLMRequest", "T", "Task"]
