"""An optional paraphrase source: any OpenAI-compatible chat-completions endpoint.

``LLMRewriter(base_url=..., model=...)`` asks the model for one rewrite of a
rule, description or message, naming the tokens it must keep. Its answers go
through the same constraint check as the offline engine
(:func:`harness.augment.paraphrase.checked_rewrite`): a rewrite that drops a
number, a negation or a name is refused and asked again; when the endpoint
fails, the offline engine takes over, so augmentation never stops on a
network error. The request's ``seed`` comes from the caller's random state,
so servers that honour seeds give reproducible variants.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Sequence

from harness.augment.paraphrase import RewriteUnavailable
from harness.augment.preserve import name_counts

SYSTEM = (
    "You rewrite instructions for an AI host of a live e-commerce stream. Rewrite the user's "
    "text with different wording and sentence structure but exactly the same meaning and "
    "strength. Keep every number, every negation (not, never, no) and every placeholder in "
    "braces exactly as written. Answer with the rewritten text only, no quotes, no comments."
)


class LLMRewriter:
    """Paraphrases through ``POST {base_url}/chat/completions``."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None,
                 temperature: float = 0.9, timeout_s: float = 30.0) -> None:
        from openai import OpenAI

        self.name = f"llm:{model}"
        self.model = model
        self.temperature = temperature
        self.client = OpenAI(base_url=base_url.rstrip("/"),
                             api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                             timeout=timeout_s, max_retries=0)

    @classmethod
    def from_spec(cls, spec: str) -> LLMRewriter:
        """``BASE_URL:MODEL``, e.g. ``http://localhost:8000/v1:Qwen2.5-7B-Instruct``."""
        base, sep, model = spec.rpartition(":")
        if not sep or not base.startswith(("http://", "https://")) or not model or "/" in model \
                and model.startswith("/"):
            raise ValueError(f"{spec!r} is not BASE_URL:MODEL (e.g. http://localhost:8000/v1:qwen)")
        return cls(base_url=base, model=model)

    def rewrite(self, text: str, *, rng: random.Random, names: Sequence[str] = ()) -> str:
        from openai import OpenAIError

        keep = sorted(name_counts(text, names))
        user = text if not keep else f"{text}\n\n(Keep these names exactly: {', '.join(keep)})"
        try:
            response = self.client.chat.completions.create(
                model=self.model, temperature=self.temperature, max_tokens=400,
                seed=rng.randrange(2**31),
                messages=[{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": user}])
        except OpenAIError as exc:
            raise RewriteUnavailable(f"endpoint error: {exc}") from exc
        content = (response.choices[0].message.content or "") if response.choices else ""
        cleaned = clean_answer(content)
        if not cleaned:
            raise RewriteUnavailable("the endpoint returned no text")
        return cleaned


def clean_answer(content: str) -> str:
    """The rewrite alone: reasoning, fences, labels and wrapping quotes removed."""
    text = re.sub(r"<think>.*?</think>", "", content, flags=re.DOTALL).strip()
    text = re.sub(r"^```\w*\n?|\n?```$", "", text).strip()
    for _ in range(2):  # '"Rewritten: ..."' and 'Rewritten: "..."' alike
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1].strip()
        text = re.sub(r"^(rewritten( text)?|paraphrase|rewrite)\s*:\s*", "", text,
                      flags=re.I).strip()
    return text
