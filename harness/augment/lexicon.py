"""Word-class synonym sets and sentence frames for the offline paraphrase engine.

Each set holds interchangeable words or phrases *of the same class and
inflection* (base-form verbs with base-form verbs, plural nouns with plural
nouns), so a substitution never needs morphology. Sets never contain numbers
or negation words: the constraint checker would reject such a rewrite anyway,
but keeping them out means fewer retries. ``IMPERATIVE_FRAMES`` and
``PROHIBITION_FRAMES`` turn a command into its modal, emphatic or polite
variants; ``FRAMINGS`` are prefixes that keep a rule's strength.
"""

from __future__ import annotations

# Base-form verbs (imperative mood).
VERBS: list[tuple[str, ...]] = [
    ("say", "state", "mention"),
    ("call", "invoke"),
    ("keep", "hold", "maintain"),
    ("confirm", "verify", "double-check"),
    ("compare", "contrast", "weigh"),
    ("give", "provide"),
    ("describe", "explain", "present"),
    ("check", "review", "consult"),
    ("welcome", "greet", "receive"),
    ("decline", "turn down", "refuse"),
    ("direct", "refer", "send"),
    ("start", "begin", "open"),
    ("pass", "supply", "hand"),
    ("load", "open", "pull in"),
    ("quote", "cite", "repeat"),
    ("recommend", "suggest", "propose"),
    ("stay", "remain", "keep"),
    ("lead", "open", "start"),
    ("group", "cluster"),
    ("thank", "credit"),
    ("work out", "figure out", "determine", "establish"),
    ("acknowledge", "recognise", "note"),
    ("argue", "quarrel", "bicker"),
    ("blame", "accuse", "fault"),
    ("promise", "pledge", "guarantee"),
    ("reveal", "disclose", "expose"),
    ("criticise", "disparage", "knock"),
    ("claim", "assert", "allege"),
    ("guess", "speculate", "assume"),
    ("improvise", "make up", "invent"),
    ("push", "press", "pressure"),
    ("steer", "guide", "bring"),
    ("bridge", "connect"),
    ("show", "display", "present"),
    ("fetch", "retrieve", "get", "look up"),
    ("follow", "apply", "obey"),
    ("repeat", "restate", "echo"),
    ("write", "compose", "put"),
    ("finish", "complete", "wrap up"),
    ("help", "assist", "support"),
    ("move", "shift", "relocate"),
    ("explain", "clarify", "spell out"),
    ("tell", "inform", "let know"),
    ("shorten", "trim", "condense"),
]

# Gerunds and present participles.
GERUNDS: list[tuple[str, ...]] = [
    ("stating", "giving", "mentioning", "quoting"),
    ("guessing", "speculating", "assuming"),
    ("answering", "replying", "responding"),
    ("inventing", "making up", "fabricating"),
    ("following", "applying", "obeying"),
    ("moving", "shifting", "relocating"),
    ("asking", "requesting"),
]

# Past participles, used by the passive alternation and as adjectives.
PARTICIPLES: dict[str, str] = {
    "call": "called",
    "invoke": "invoked",
    "use": "used",
    "run": "run",
    "quote": "quoted",
    "ask": "asked",
    "name": "named",
    "confirm": "confirmed",
    "give": "given",
    "describe": "described",
    "check": "checked",
    "pass": "passed",
    "load": "loaded",
    "state": "stated",
    "say": "said",
    "mention": "mentioned",
    "compare": "compared",
    "fetch": "fetched",
    "retrieve": "retrieved",
    "consult": "consulted",
    "cite": "cited",
    "provide": "provided",
    "offer": "offered",
    "recommend": "recommended",
    "verify": "verified",
}

NOUNS: list[tuple[str, ...]] = [
    ("viewer", "audience member", "watcher"),
    ("viewers", "audience members", "watchers"),
    ("comment", "message", "remark"),
    ("comments", "messages", "remarks"),
    ("reply", "response", "answer"),
    ("question", "query", "request"),
    ("questions", "queries", "requests"),
    ("product", "item", "article"),
    ("products", "items", "articles"),
    ("price", "cost"),
    ("prices", "costs"),
    ("result", "output", "return value"),
    ("results", "outputs", "return values"),
    ("details", "particulars", "specifics"),
    ("problem", "issue", "trouble"),
    ("offer", "deal"),
    ("offers", "deals"),
    ("rule", "guideline", "policy"),
    ("rules", "guidelines", "policies"),
    ("team", "staff", "crew"),
    ("host", "presenter", "streamer"),
    ("stream", "broadcast", "live show"),
    ("topic", "subject", "matter"),
    ("topics", "subjects", "matters"),
    ("sentence", "line"),
    ("sentences", "lines"),
    ("reason", "justification", "rationale"),
    ("choice", "option", "alternative"),
    ("change", "update", "adjustment"),
    ("purchase", "acquisition"),
    ("instructions", "directions"),
    ("description", "wording", "phrasing"),
    ("fact", "piece of information", "detail"),
    ("candidates", "options", "possibilities"),
    ("entry", "record", "item"),
    ("complaint", "grievance", "objection"),
    ("courier", "delivery company", "carrier"),
]

ADJECTIVES: list[tuple[str, ...]] = [
    ("short", "brief", "concise"),
    ("friendly", "warm", "cordial"),
    ("clear", "unambiguous", "explicit"),
    ("exact", "precise", "accurate"),
    ("specific", "particular", "concrete"),
    ("calm", "composed", "level-headed"),
    ("factual", "objective", "matter-of-fact"),
    ("angry", "upset", "annoyed"),
    ("active", "live", "running"),
    ("similar", "comparable", "related"),
    ("public", "open", "shared"),
    ("personal", "private"),
    ("sensitive", "delicate", "touchy"),
    ("legitimate", "genuine", "valid"),
    ("relevant", "pertinent", "applicable"),
    ("ambiguous", "unclear", "vague"),
    ("correct", "right", "accurate"),
    ("internal", "private", "behind-the-scenes"),
    ("current", "present"),
    ("missing", "absent", "unavailable"),
    ("combined", "joint", "merged"),
    ("polite", "courteous", "gracious"),
]

ADVERBS: list[tuple[str, ...]] = [
    ("only", "solely", "just"),
    ("exactly", "precisely"),
    ("naturally", "smoothly", "organically"),
    ("together", "jointly", "as a group"),
    ("now", "right now", "currently", "at the moment"),
    ("always", "every time", "at all times"),
    ("immediately", "right away", "straight away"),
    ("clearly", "plainly"),
    ("briefly", "concisely", "in brief"),
    ("politely", "courteously", "graciously"),
    ("instead", "rather", "in its place"),
    ("entirely", "completely", "fully"),
]

# Prepositions, conjunctions and multi-word connectives.
CONNECTIVES: list[tuple[str, ...]] = [
    ("before", "prior to", "ahead of"),
    ("then", "after that", "afterwards"),
    ("because", "since"),
    ("about", "regarding", "concerning"),
    ("for example", "for instance", "e.g."),
    ("where possible", "when you can", "if possible"),
    ("as soon as possible", "at the earliest opportunity", "promptly"),
    ("in the public chat", "in the open chat", "in public"),
    ("rather than", "instead of"),
    ("so that", "in order that"),
    ("unless", "except when"),
    ("until", "till"),
    ("within", "inside"),
    ("as written", "verbatim", "word for word"),
    ("in a few words", "briefly", "in short"),
    ("one by one", "individually", "separately"),
]

SYNONYM_CLASSES: dict[str, list[tuple[str, ...]]] = {
    "verb": VERBS,
    "gerund": GERUNDS,
    "noun": NOUNS,
    "adjective": ADJECTIVES,
    "adverb": ADVERBS,
    "connective": CONNECTIVES,
}

# Imperative verbs a rule may start with (the imperative <-> modal alternation).
IMPERATIVE_STARTS = frozenset(w for group in VERBS for w in group if " " not in w) | frozenset(
    {
        "work",
        "be",
        "answer",
        "keep",
        "get",
        "take",
        "treat",
        "avoid",
        "prefer",
        "reply",
        "remind",
        "end",
        "add",
        "put",
        "look",
        "match",
        "send",
    }
)

# "{v}" is the lower-cased imperative clause (verb first).
IMPERATIVE_FRAMES: tuple[str, ...] = (
    "{V}",
    "You should {v}",
    "You must {v}",
    "Make sure to {v}",
    "Be sure to {v}",
    "Remember to {v}",
    "Please {v}",
    "It is your job to {v}",
    "Your task is to {v}",
    "The avatar should {v}",
    "You are expected to {v}",
    "Take care to {v}",
)

# Each frame holds exactly one negation, like the prohibition it replaces.
PROHIBITION_FRAMES: tuple[str, ...] = (
    "Never {v}",
    "Do not {v}",
    "Don't {v}",
    "You must never {v}",
    "You should never {v}",
    "You must not {v}",
    "Under no circumstances should you {v}",
    "At no point should you {v}",
    "The avatar must never {v}",
)

PROHIBITION_STARTS: tuple[str, ...] = (
    "never",
    "do not",
    "don't",
    "you must never",
    "you should never",
    "you must not",
    "you should not",
    "under no circumstances should you",
    "at no point should you",
    "the avatar must never",
)

MODAL_STARTS: tuple[str, ...] = (
    "you should",
    "you must",
    "make sure to",
    "be sure to",
    "remember to",
    "please",
    "it is your job to",
    "your task is to",
    "the avatar should",
    "you are expected to",
    "take care to",
    "always",
)

# Prefixes that frame a rule without weakening it.
FRAMINGS: tuple[str, ...] = (
    "",
    "",
    "",
    "",
    "Important: ",
    "Rule: ",
    "Remember: ",
    "Note: ",
    "As a rule, ",
    "Keep in mind: ",
    "In every case, ",
    "Policy: ",
)

# Subordinators whose clause may move to the front or the back of a sentence.
SUBORDINATORS: tuple[str, ...] = ("if", "when", "whenever", "before", "after", "unless", "while")
