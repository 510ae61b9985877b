"""OpenAICompatibleLLM: any OpenAI-compatible chat-completions API (OpenAI, Ollama, vLLM, LiteLLM).

Every call offers exactly one function tool whose ``parameters`` are the output model's JSON schema
and forces it (``tool_choice={"type": "function", "function": {"name": ...}}``); the call's
arguments are then validated with pydantic (one retry with the validation errors, like
:class:`~graphmem.llm.anthropic_llm.AnthropicLLM`). Retries and timeouts are the ``openai`` SDK's,
configured from :class:`Settings` (``llm_max_retries``, ``llm_timeout_s``). Every SDK exception
is wrapped (``raise LLMError(...) from e``). Nothing is read from the environment here; the client
is created on first use, so constructing this class does no I/O.

    llm = OpenAICompatibleLLM(model="llama3.1", base_url="http://127.0.0.1:11434/v1", api_key="ollama")
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from graphmem.config import Settings
from graphmem.errors import LLMError, LLMValidationError
from graphmem.llm.base import LLMRequest, T
from graphmem.llm.prompts import injection_request
from graphmem.llm.schemas import InjectionVerdict


class OpenAICompatibleLLM:
    """An :class:`~graphmem.llm.base.LLM` over an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        settings: timeout and retries (``Settings()`` if omitted).
        model: the model name the server knows (e.g. ``gpt-4o-mini``, ``llama3.1``).
        api_key: the key (local servers accept any non-empty string).
        base_url: the API root, e.g. ``http://127.0.0.1:11434/v1`` (Ollama); None: OpenAI.
        client: a ready ``openai.OpenAI`` client, used with the configured retries and timeout.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        max_tokens: int | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.model = model
        self.name = f"openai:{model}"
        self.max_tokens = max_tokens or self.settings.anthropic_max_tokens
        self._api_key = api_key
        self._base_url = base_url
        self._client = (
            client.with_options(max_retries=self.settings.llm_max_retries, timeout=self.settings.llm_timeout_s)
            if client is not None else None
        )

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created on first use)."""
        if self._client is None:
            try:
                import openai

                self._client = openai.OpenAI(
                    api_key=self._api_key or "unused", base_url=self._base_url,
                    timeout=self.settings.llm_timeout_s, max_retries=self.settings.llm_max_retries,
                )
            except ImportError as e:
                raise LLMError("OpenAICompatibleLLM needs the openai package: pip install 'graphmem[integrations]'") from e
            except Exception as e:
                raise LLMError(f"could not create the OpenAI client: {e}") from e
        return self._client

    def generate(self, request: LLMRequest, schema: type[T]) -> T:
        """Ask the model for ``schema`` through a forced function call and validate its arguments."""
        tool_name = re.sub(r"[^a-zA-Z0-9_-]", "_", f"record_{request.task}")[:64]
        tool = {
            "type": "function",
            "function": {
                "name": tool_name,
                "description": f"Record your {request.task} answer. Call this function exactly once; its "
                f"arguments are your whole answer and must match the schema ({schema.__name__}).",
                "parameters": schema.model_json_schema(),
            },
        }
        arguments = self._call(request.system, request.prompt, tool)
        try:
            return schema.model_validate(arguments)
        except ValidationError as first:
            retry_prompt = (
                f"{request.prompt}\n\nYour previous call to {tool_name} was rejected because its arguments "
                f"did not match the schema:\n{_short_errors(first)}\nCall {tool_name} again with complete, "
                "valid arguments."
            )
        arguments = self._call(request.system, retry_prompt, tool)
        try:
            return schema.model_validate(arguments)
        except ValidationError as error:
            raise LLMValidationError(
                f"{self.name} answered task {request.task!r} twice with arguments that do not match "
                f"{schema.__name__}: {_short_errors(error)}"
            ) from error

    def judge_injection(self, text: str, *, channel: str = "unknown") -> InjectionVerdict:
        """Screen ``text`` for injected instructions with a forced :class:`InjectionVerdict` answer."""
        return self.generate(injection_request(text, channel), InjectionVerdict)

    def _call(self, system: str, prompt: str, tool: dict[str, Any]) -> Any:
        """One chat completion forcing ``tool``; returns its parsed arguments."""
        import openai

        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        name = tool["function"]["name"]
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, tools=[tool], max_tokens=self.max_tokens,
                tool_choice={"type": "function", "function": {"name": name}},
            )
        except openai.APITimeoutError as e:
            raise LLMError(f"{self.name} request timed out after {self.settings.llm_timeout_s:g} s") from e
        except openai.APIStatusError as e:
            raise LLMError(f"{self.name} request failed: HTTP {e.status_code}: {e.message}") from e
        except openai.OpenAIError as e:
            raise LLMError(f"{self.name} request failed: {e}") from e
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMError(f"{self.name} returned no choices")
        message = choices[0].message
        for call in getattr(message, "tool_calls", None) or []:
            if call.function.name == name:
                try:
                    return json.loads(call.function.arguments or "{}")
                except ValueError as e:
                    raise LLMError(f"{self.name} called {name} with arguments that are not JSON") from e
        text = (getattr(message, "content", None) or "").strip()
        raise LLMError(
            f"{self.name} returned no {name} call (finish_reason={choices[0].finish_reason!r})"
            + (f"; it wrote text instead: {text[:200]!r}" if text else "")
        )


def _short_errors(error: ValidationError, limit: int = 5) -> str:
    """Pydantic errors as short "field: message" lines, at most ``limit``."""
    lines = [f"- {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()[:limit]]
    more = error.error_count() - limit
    return "\n".join(lines) + (f"\n- … and {more} more" if more > 0 else "")


__all__ = ["OpenAICompatibleLLM"]
