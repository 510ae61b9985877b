"""AnthropicLLM: the Messages API with forced structured output, the SDK's retries, wrapped errors.

Every call offers exactly one tool whose ``input_schema`` is the output model's JSON schema and
forces it (``tool_choice={"type": "tool", "name": ...}``); the tool_use input is then validated
with pydantic. Retries and timeouts are the SDK's own, configured from :class:`Settings`
(``llm_max_retries``, ``llm_timeout_s``): it retries 408, 409, 429, 5xx, connection errors and
timeouts with exponential backoff and jitter, honouring the API's ``Retry-After`` headers. Every
SDK exception is wrapped (``raise LLMError(...) from e``).

Nothing is read from the environment here: pass ``api_key`` (the CLI does). Note that the SDK
itself falls back to ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL`` when they are not passed.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
from pydantic import ValidationError

from graphmem.config import Settings
from graphmem.errors import LLMError, LLMValidationError
from graphmem.llm.base import LLMRequest, T
from graphmem.llm.prompts import injection_request
from graphmem.llm.schemas import InjectionVerdict

_RETRY_STATUS = {408, 409, 429}


def _retryable(error: anthropic.AnthropicError) -> bool:
    """Whether the SDK retried it: 408, 409, 429, any 5xx, connection errors and timeouts."""
    if isinstance(error, anthropic.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, anthropic.APIStatusError):
        return error.status_code in _RETRY_STATUS or error.status_code >= 500
    return False


def _describe(error: anthropic.AnthropicError, timeout_s: float) -> str:
    if isinstance(error, anthropic.APITimeoutError):
        return f"timed out after {timeout_s:g} s"
    if isinstance(error, anthropic.APIConnectionError):
        return f"connection error ({error.message})"
    if isinstance(error, anthropic.APIStatusError):
        detail = getattr(error, "api_message", None) or error.message
        return f"HTTP {error.status_code}: {detail}"
    return f"{type(error).__name__}: {error}"


class AnthropicLLM:
    """An :class:`~graphmem.llm.base.LLM` backed by Anthropic's Messages API.

    Args:
        settings: model, max tokens, timeout, retries and backoff (``Settings()`` if omitted).
        api_key: the API key; the caller reads it from wherever it lives.
        base_url: another endpoint (a proxy, or a local fake server in tests).
        client: a ready client; used with the retries and timeout from ``settings``.

    The client is created on the first call, so constructing this class does no I/O.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.name = f"anthropic:{self.settings.anthropic_model}"
        self._api_key = api_key
        self._base_url = base_url
        self._client = (
            client.with_options(max_retries=self.settings.llm_max_retries, timeout=self.settings.llm_timeout_s)
            if client is not None else None
        )

    @property
    def client(self) -> anthropic.Anthropic:
        """The SDK client (created on first use, with the configured retries and timeout)."""
        if self._client is None:
            try:
                self._client = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    timeout=self.settings.llm_timeout_s,
                    max_retries=self.settings.llm_max_retries,
                )
            except (anthropic.AnthropicError, ValueError, TypeError) as e:
                raise LLMError(f"could not create the Anthropic client: {e}") from e
        return self._client

    def generate(self, request: LLMRequest, schema: type[T]) -> T:
        """Ask the model for ``schema`` through a forced tool call and validate its input.

        A refusal or an answer without the tool call raises :class:`LLMError`. An answer that
        does not validate is retried once with the validation errors appended to the prompt,
        then raises :class:`LLMValidationError`.
        """
        tool_name = re.sub(r"[^a-zA-Z0-9_-]", "_", f"record_{request.task}")[:64]
        tool: dict[str, Any] = {
            "name": tool_name,
            "description": f"Record your {request.task} answer. Call this tool exactly once; its input "
            f"is your whole answer and must match the schema ({schema.__name__}).",
            "input_schema": schema.model_json_schema(),
        }
        message = self._create(request.system, request.prompt, tool)
        try:
            return schema.model_validate(self._tool_input(message, tool_name))
        except ValidationError as first:
            retry_prompt = (
                f"{request.prompt}\n\nYour previous call to {tool_name} was rejected because its input "
                f"did not match the schema:\n{_short_errors(first)}\nCall {tool_name} again with a "
                "complete, valid input."
            )
        message = self._create(request.system, retry_prompt, tool)
        try:
            return schema.model_validate(self._tool_input(message, tool_name))
        except ValidationError as error:
            raise LLMValidationError(
                f"{self.name} answered task {request.task!r} twice with input that does not match "
                f"{schema.__name__}: {_short_errors(error)}"
            ) from error

    def judge_injection(self, text: str, *, channel: str = "unknown") -> InjectionVerdict:
        """Screen ``text`` for injected instructions with a forced :class:`InjectionVerdict` answer."""
        return self.generate(injection_request(text, channel), InjectionVerdict)

    def _create(self, system: str, prompt: str, tool: dict[str, Any]) -> Any:
        """One Messages API call; the SDK retries it (1 + llm_max_retries attempts at most)."""
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.anthropic_model,
            "max_tokens": s.anthropic_max_tokens,
            "messages": [{"role": "user", "content": prompt}],
            "tools": [tool],
            "tool_choice": {"type": "tool", "name": tool["name"]},
        }
        if system:
            kwargs["system"] = system
        client = self.client
        try:
            return client.messages.create(**kwargs)
        except anthropic.AnthropicError as e:
            tries = f" after {1 + s.llm_max_retries} attempt(s)" if _retryable(e) and s.llm_max_retries else ""
            raise LLMError(f"{self.name} request failed{tries}: {_describe(e, s.llm_timeout_s)}") from e
        except TypeError as e:  # the SDK's way of saying it found no credentials
            if "authentication" not in str(e).lower():
                raise
            raise LLMError(f"{self.name} has no credentials: pass api_key=... to AnthropicLLM") from e

    def _tool_input(self, message: Any, tool_name: str) -> Any:
        """The input of the forced tool call, or LLMError saying what came back instead."""
        stop = getattr(message, "stop_reason", None)
        blocks = list(getattr(message, "content", None) or [])
        for block in blocks:
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", tool_name) == tool_name:
                return block.input
        text = " ".join(str(getattr(b, "text", "")) for b in blocks if getattr(b, "type", None) == "text").strip()
        if stop == "refusal":
            raise LLMError(f"{self.name} refused to answer" + (f": {text[:200]}" if text else ""))
        if stop == "max_tokens":
            raise LLMError(
                f"{self.name} hit max_tokens ({self.settings.anthropic_max_tokens}) before finishing "
                "the tool call; raise Settings.anthropic_max_tokens"
            )
        raise LLMError(
            f"{self.name} returned no {tool_name} tool call (stop_reason={stop!r})"
            + (f"; it wrote text instead: {text[:200]!r}" if text else "")
        )


def _short_errors(error: ValidationError, limit: int = 5) -> str:
    """Pydantic errors as short "field: message" lines, at most ``limit``."""
    lines = [
        f"- {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()[:limit]
    ]
    more = error.error_count() - limit
    return "\n".join(lines) + (f"\n- … and {more} more" if more > 0 else "")


__all__ = ["AnthropicLLM"]
