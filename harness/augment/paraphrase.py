"""Paraphrase sources for rules, descriptions and messages, and the checked rewrite.

``OfflineParaphraser`` is deterministic given a ``random.Random``: it rewrites
compositionally, clause by clause, combining (1) mood alternations
(imperative <-> modal <-> polite, prohibition frames), (2) moving conditional
and temporal clauses to the front or the back, (3) passive voice for commands
whose object is a tool, (4) synonym substitution from word-class sets chosen
by context (a word after a determiner is read as a noun), and (5) framings
that keep a rule's strength ("Important: ", "As a rule, "). Names of tools and
skills, numbers, placeholders, quoted text and markup are masked before
rewriting and restored after.

``checked_rewrite`` asks a rewriter (offline or ``harness.augment.llm``) for a
rewrite, checks it with :mod:`harness.augment.preserve` and retries with fresh
randomness; when every attempt breaks a constraint the original text is kept.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.augment import lexicon
from harness.augment.preserve import name_pattern, violations

_OPEN, _CLOSE = "\ue000", "\ue001"
_MASKED = re.compile(_OPEN + r"(\d+)" + _CLOSE)
_SPANS = [
    re.compile(
        r"<(\w+)>.*?</\1>", re.DOTALL
    ),  # markup with content, e.g. <tool_call>..</tool_call>
    re.compile(r"\{#[^}]*\}|\{\{|\}\}|\{[^{}]*\}"),  # rule ids and template slots
    re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|`[^`\n]*`"),  # quoted text
    re.compile(r"https?://\S+"),
    re.compile(r"\d+(?:[.,]\d+)*%?"),
    re.compile(r"\([^()]*\)"),  # parentheticals stay as written
]
_TOKEN = re.compile(_OPEN + r"\d+" + _CLOSE + r"|[A-Za-z][A-Za-z'-]*|\s+|.", re.DOTALL)
_CLAUSE_SPLIT = re.compile(r"(;\s+|(?<=[.!?])\s+(?=[A-Z" + _OPEN + r"]))")
DETERMINERS = frozenset(
    {
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "every",
        "each",
        "any",
        "its",
        "their",
        "your",
        "his",
        "her",
        "my",
        "our",
        "some",
        "another",
        "other",
        "one",
        "no",
    }
)
VERBAL_CONTEXT = frozenset(
    {
        "to",
        "will",
        "would",
        "should",
        "must",
        "can",
        "could",
        "may",
        "might",
        "you",
        "we",
        "they",
        "i",
        "not",
        "never",
        "do",
        "don't",
        "please",
        "then",
    }
)
_NOUN_CLASSES = ("noun", "adjective")
_VERB_CLASSES = ("verb", "gerund", "adverb", "connective", "adjective")


class Rewriter(Protocol):
    """Anything that proposes a rewrite of one piece of text."""

    name: str

    def rewrite(self, text: str, *, rng: random.Random, names: Sequence[str]) -> str: ...


def _build_index() -> dict[str, dict[str, tuple[str, ...]]]:
    index: dict[str, dict[str, tuple[str, ...]]] = {}
    for cls, groups in lexicon.SYNONYM_CLASSES.items():
        for group in groups:
            for member in group:
                index.setdefault(member.lower(), {}).setdefault(cls, group)
    return index


_INDEX = _build_index()
_PHRASE_LENGTHS: dict[str, int] = {}  # first word -> longest phrase starting with it
for _key in _INDEX:
    _first = _key.split()[0]
    _PHRASE_LENGTHS[_first] = max(_PHRASE_LENGTHS.get(_first, 0), len(_key.split()))


@dataclass
class _Masked:
    text: str
    spans: list[str] = field(default_factory=list)

    def restore(self, text: str) -> str:
        return _MASKED.sub(lambda m: self.spans[int(m.group(1))], text)


def mask(text: str, names: Sequence[str]) -> _Masked:
    """Replace names, numbers, slots, quotes and markup with opaque tokens."""
    out = _Masked(text)
    patterns = list(_SPANS)
    pattern = name_pattern([n for n in names if n in text])
    if pattern is not None:
        patterns.insert(0, pattern)

    def sub(m: re.Match) -> str:
        out.spans.append(m.group(0))
        return f"{_OPEN}{len(out.spans) - 1}{_CLOSE}"

    masked = text
    for p in patterns:
        masked = _sub_outside_masks(p, sub, masked)
    out.text = masked
    return out


def _sub_outside_masks(pattern: re.Pattern, repl, text: str) -> str:
    parts = re.split("(" + _OPEN + r"\d+" + _CLOSE + ")", text)
    return "".join(part if i % 2 else pattern.sub(repl, part) for i, part in enumerate(parts))


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].isalpha() else text


def _lower_first(text: str) -> str:
    if not text[:1].isalpha() or text.startswith("I ") or text[:2].isupper():
        return text
    return text[:1].lower() + text[1:]


class OfflineParaphraser:
    """Compositional rule rewriting without a model (deterministic per rng)."""

    name = "offline"

    def __init__(self, *, synonym_rate: tuple[float, float] = (0.25, 0.6)) -> None:
        self.synonym_rate = synonym_rate

    def rewrite(self, text: str, *, rng: random.Random, names: Sequence[str] = ()) -> str:
        masked = mask(text, names)
        body = masked.text
        trail = ""
        m = re.search(r"[.!?]+\s*$", body)
        if m:
            body, trail = body[: m.start()], m.group(0).strip()
        pieces = _CLAUSE_SPLIT.split(body)
        rate = rng.uniform(*self.synonym_rate)
        out = []
        for i, piece in enumerate(pieces):
            if i % 2:  # a separator
                out.append(piece)
                continue
            clause = self._clause(piece, rng=rng, rate=rate, first=(i == 0))
            if i > 0 and pieces[i - 1].startswith(";"):
                clause = _lower_first(clause)
            out.append(clause)
        result = masked.restore("".join(out) + trail)
        return re.sub(r"[ \t]{2,}", " ", result).strip()

    # -- one clause -------------------------------------------------------------------------
    def _clause(self, clause: str, *, rng: random.Random, rate: float, first: bool) -> str:
        stripped = clause.strip()
        if not stripped:
            return clause
        end = ""
        m = re.search(r"[.!?]+$", stripped)
        if m:
            stripped, end = stripped[: m.start()], m.group(0)
        front, main, back = _split_subordinate(stripped)
        main, command = self._mood(main, rng=rng)
        main = self._synonyms(main, rng=rng, rate=rate)
        if front:
            front = self._synonyms(front, rng=rng, rate=rate)
        if back:
            back = self._synonyms(back, rng=rng, rate=rate)
        sub = front or back
        if sub and rng.random() < 0.6:
            place_front = rng.random() < 0.5
        else:
            place_front = bool(front)
        if sub and place_front:
            text = f"{_cap(sub)}, {_lower_first(main)}"
        elif sub:
            text = f"{_cap(main)} {_lower_first(sub)}"
        else:
            text = _cap(main)
        if first and command and rng.random() < 0.25:  # "Rule: " frames commands only
            framing = rng.choice(lexicon.FRAMINGS)
            if framing.endswith(", "):
                text = framing + _lower_first(text)
            elif framing:
                text = framing + text
        return text + end

    def _mood(self, clause: str, *, rng: random.Random) -> tuple[str, bool]:
        """The clause in another mood, and whether it is a command at all."""
        low = clause.lower()
        for start in sorted(lexicon.PROHIBITION_STARTS, key=len, reverse=True):
            if low.startswith(start + " "):
                rest = clause[len(start) + 1 :]
                if rest.lower().startswith("ever "):
                    rest = rest[5:]
                frame = rng.choice(lexicon.PROHIBITION_FRAMES)
                return frame.format(v=_lower_first(rest), V=_cap(rest)), True
        for start in sorted(lexicon.MODAL_STARTS, key=len, reverse=True):
            if low.startswith(start + " "):
                return self._frame(clause[len(start) + 1 :], rng=rng), True
        first_word = low.split(" ", 1)[0]
        if first_word in lexicon.IMPERATIVE_STARTS:
            return self._frame(clause, rng=rng), True
        return clause, False

    def _frame(self, verb_clause: str, *, rng: random.Random) -> str:
        words = verb_clause.split(" ", 2)
        verb = words[0].lower()
        if (
            len(words) >= 2
            and verb in lexicon.PARTICIPLES
            and _MASKED.fullmatch(words[1])
            and rng.random() < 0.3
        ):
            rest = (" " + words[2]) if len(words) > 2 else ""
            modal = rng.choice(("must be", "should be", "is to be", "has to be"))
            return f"{words[1]} {modal} {lexicon.PARTICIPLES[verb]}{rest}"
        frame = rng.choice(lexicon.IMPERATIVE_FRAMES)
        return frame.format(v=_lower_first(verb_clause), V=_cap(verb_clause))

    def _synonyms(self, clause: str, *, rng: random.Random, rate: float) -> str:
        tokens = _TOKEN.findall(clause)
        words = [i for i, t in enumerate(tokens) if t[:1].isalpha()]
        out = list(tokens)
        k = 0
        while k < len(words):
            replaced = False
            longest = _PHRASE_LENGTHS.get(tokens[words[k]].lower(), 0)
            for n in range(min(longest, len(words) - k), 0, -1):
                span = words[k : k + n]
                if any(
                    not tokens[j].isspace() for j in range(span[0] + 1, span[-1]) if j not in span
                ):
                    continue  # punctuation inside: not one phrase
                phrase = " ".join(tokens[j].lower() for j in span)
                entry = _INDEX.get(phrase)
                if not entry:
                    continue
                prev = tokens[words[k - 1]].lower() if k > 0 else ""
                between = "".join(tokens[words[k - 1] + 1 : span[0]]) if k > 0 else ""
                clause_start = not prev or bool(re.search(r"[,:;(]", between))
                classes = _NOUN_CLASSES if prev in DETERMINERS else _VERB_CLASSES
                if prev in VERBAL_CONTEXT:
                    classes = ("verb", "gerund", "adverb", "connective")
                elif not clause_start:
                    # a base-form verb right after a noun is mostly a noun ("a model
                    # call") or a plural subject's verb: leave verbs alone there
                    classes = tuple(c for c in classes if c != "verb")
                group = next((entry[c] for c in classes if c in entry), None)
                if group is not None and rng.random() < rate:
                    choices = [g for g in group if g.lower() != phrase]
                    new = rng.choice(choices)
                    if tokens[span[0]][:1].isupper():
                        new = _cap(new)
                    out[span[0]] = new
                    if prev in ("a", "an"):  # keep the article in step with the new word
                        article = "an" if new[:1].lower() in "aeiou" else "a"
                        old = tokens[words[k - 1]]
                        out[words[k - 1]] = _cap(article) if old[:1].isupper() else article
                    for j in range(span[0] + 1, span[-1] + 1):
                        out[j] = ""
                k += n
                replaced = True
                break
            if not replaced:
                k += 1
        return "".join(out)


def _split_subordinate(clause: str) -> tuple[str, str, str]:
    """(front subordinate clause, main clause, back subordinate clause); one side is empty."""
    m = re.match(
        r"^((?:if|when|whenever|before|after|unless|while)\s[^,:]*?),\s+(?:then\s+)?(.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and len(m.group(2).split()) >= 2:
        return m.group(1), m.group(2), ""
    subs = "|".join(lexicon.SUBORDINATORS)
    found = list(re.finditer(rf"\s({subs})\s", clause))
    if len(found) == 1:
        at = found[0]
        before = clause[: at.start()]
        prev_word = before.rsplit(" ", 1)[-1].lower() if before else ""
        if (
            prev_word not in ("only", "even", "except", "and", "or", "just", "right", "but")
            and len(before.split()) >= 3
            and "," not in before[-2:]
        ):
            return "", before.rstrip(","), clause[at.start() + 1 :]
    return "", clause, ""


@dataclass
class RewriteResult:
    text: str
    changed: bool
    rejected: list[str] = field(default_factory=list)  # why earlier attempts were refused
    source: str = ""


def checked_rewrite(
    text: str,
    *,
    rng: random.Random,
    names: Sequence[str] = (),
    rewriter: Rewriter | None = None,
    attempts: int = 6,
) -> RewriteResult:
    """A rewrite that keeps numbers, negations, names, placeholders and quotes, or the text."""
    rewriter = rewriter or DEFAULT_PARAPHRASER
    rejected: list[str] = []
    for _ in range(attempts):
        try:
            candidate = rewriter.rewrite(text, rng=rng, names=names)
        except RewriteUnavailable as exc:
            rejected.append(f"{rewriter.name}: {exc}")
            if rewriter is DEFAULT_PARAPHRASER:
                break
            rewriter = DEFAULT_PARAPHRASER
            continue
        broken = violations(text, candidate, names=names)
        if not broken and candidate.strip() != text.strip():
            return RewriteResult(candidate, True, rejected, rewriter.name)
        if broken:
            rejected.append("; ".join(broken))
    return RewriteResult(text, False, rejected, "")


class RewriteUnavailable(RuntimeError):
    """A rewriter could not produce text (endpoint down, empty answer)."""


DEFAULT_PARAPHRASER = OfflineParaphraser()
