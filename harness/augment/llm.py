"""An optional paraphrase source: the paraphraser role's model, on any route.

``LLMRewriter(model=role_model("paraphraser", spec))`` (``LLMRewriter.from_spec(spec)``: an
OpenAI-compatible ``BASE_URL:MODEL`` or any policy spec) asks the model for one rewrite of a
rule, description or message, naming the tokens it must keep. Its answers go
through the same constraint check as the offline engine
(:func:`harness.augment.paraphrase.checked_rewrite`): a rewrite that drops a
number, a negation or a name is refused and asked again; when the endpoint
fails, the offline engine takes over, so augmentation never stops on a
network error. The request's ``seed`` comes from the caller's random state,
so servers that honour seeds give reproducible variants. The role's timeout, retries, key and
usage record are set in ``harness.policies.roles``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from harness.augment.paraphrase import RewriteUnavailable
from harness.augment.preserve import name_counts
from harness.policies import GenerationSettings, PolicyError, RoleModel, role_model

SYSTEM = (
    "You rewrite instructions for an AI host of a live e-commerce stream. Rewrite the user's "
    "text with different wording and sentence structure but exactly the same meaning and "
    "strength. Keep every number, every negation (not, never, no) and every placeholder in "
    "braces exactly as written. Answer with the rewritten text only, no quotes, no comments."
)


class LLMRewriter:
    """Paraphrases with the paraphraser role's model (``harness.policies.RoleModel``)."""

    def __init__(self, *, model: RoleModel, temperature: float = 0.9) -> None:
        self.model = model
        self.name = f"llm:{model.label}"
        self.temperature = temperature

    @classmethod
    def from_spec(cls, spec: str) -> LLMRewriter:
        """``BASE_URL:MODEL`` (e.g. ``http://localhost:8000/v1:Qwen2.5-7B-Instruct``) or a policy
        spec (``local``, ``torch:DIR``, ``openai:BASE_URL:MODEL``)."""
        return cls(model=role_model("paraphraser", spec))

    def rewrite(self, text: str, *, rng: random.Random, names: Sequence[str] = ()) -> str:
        keep = sorted(name_counts(text, names))
        user = text if not keep else f"{text}\n\n(Keep these names exactly: {', '.join(keep)})"
        generation = GenerationSettings(
            temperature=self.temperature,
            max_new_tokens=self.model.settings.max_new_tokens,
            seed=rng.randrange(2**31),
        )
        try:
            output = self.model.chat(
                [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                generation=generation,
            )
        except PolicyError as exc:
            raise RewriteUnavailable(f"endpoint error: {exc}") from exc
        cleaned = clean_answer(output.text)
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
        text = re.sub(
            r"^(rewritten( text)?|paraphrase|rewrite)\s*:\s*", "", text, flags=re.I
        ).strip()
    return text
