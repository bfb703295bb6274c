"""The request an agent answers: viewer comments plus the live-room context.

One request holds one comment (``mode: "single"``) or several to answer
together (``mode: "multi"``), recent dialogue history, the host's recent
utterances, the room state (current link, shelf, viewer actions), the products
in play (link ids into a catalogue, or an inline catalogue snapshot) and FAQ
entries a retriever already found. ``Request.from_dict`` validates everything
and raises ``DocumentValidationError`` listing each problem by field path.
The JSON format is documented with an example in docs/runtime.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.livestream.catalogue import Catalogue, FaqEntry
from harness.livestream.validation import DocumentValidationError, FieldReader
from harness.userfiles import read_json

MODES = ("single", "multi")
HISTORY_ROLES = ("viewer", "assistant", "anchor")
VIEWER_ACTIONS = (
    "joined",
    "left",
    "liked",
    "followed",
    "shared",
    "added_to_cart",
    "purchased",
    "gifted",
)


@dataclass(frozen=True)
class Comment:
    """One viewer comment (danmaku)."""

    text: str
    user: str = "viewer"
    ts: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"user": self.user, "text": self.text}
        if self.ts is not None:
            data["ts"] = self.ts
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> Comment | None:
        if isinstance(raw, str):  # shorthand: a bare string is a comment's text
            raw = {"text": raw}
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(data, path, {"text", "user", "ts"})
        text = reader.string(data, "text", path)
        user = reader.string(data, "user", path, required=False, default="viewer") or "viewer"
        ts = reader.number(data, "ts", path, required=False)
        return None if len(reader.problems) > before else cls(text, user, ts)


@dataclass(frozen=True)
class Turn:
    """One earlier line of the dialogue: a viewer, the assistant or the anchor (host)."""

    role: str
    text: str
    user: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = {"role": self.role, "text": self.text}
        if self.user:
            data["user"] = self.user
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> Turn | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(data, path, {"role", "text", "user"})
        role = reader.choice(data, "role", path, HISTORY_ROLES)
        text = reader.string(data, "text", path)
        user = reader.string(data, "user", path, required=False)
        return None if len(reader.problems) > before else cls(role, text, user)


@dataclass(frozen=True)
class ViewerAction:
    """Something a viewer did in the room (joined, added link #3 to cart, ...)."""

    user: str
    action: str
    link_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"user": self.user, "action": self.action}
        if self.link_id is not None:
            data["link_id"] = self.link_id
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> ViewerAction | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(data, path, {"user", "action", "link_id"})
        user = reader.string(data, "user", path)
        action = reader.choice(data, "action", path, VIEWER_ACTIONS)
        link_id = reader.integer(data, "link_id", path, required=False, minimum=1)
        return None if len(reader.problems) > before else cls(user, action, link_id)


@dataclass
class RoomState:
    """The live room right now: which link is presented, what is on the shelf."""

    current_link_id: int | None = None
    shelf: list[int] = field(default_factory=list)
    viewer_actions: list[ViewerAction] = field(default_factory=list)
    room_id: str = ""
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "current_link_id": self.current_link_id,
            "shelf": list(self.shelf),
            "viewer_actions": [a.to_dict() for a in self.viewer_actions],
        }
        if self.room_id:
            data["room_id"] = self.room_id
        if self.title:
            data["title"] = self.title
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> RoomState | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(
            data, path, {"current_link_id", "shelf", "viewer_actions", "room_id", "title"}
        )
        current = reader.integer(data, "current_link_id", path, required=False, minimum=1)
        shelf = []
        for i, link in enumerate(reader.listing(data, "shelf", path)):
            if isinstance(link, bool) or not isinstance(link, int) or link < 1:
                reader.problem(
                    f"{path}.shelf[{i}]", f"must be a link id (integer >= 1), got {link!r}"
                )
            elif link in shelf:
                reader.problem(f"{path}.shelf[{i}]", f"link id {link} is listed twice")
            else:
                shelf.append(link)
        actions = [
            ViewerAction.read(reader, a, f"{path}.viewer_actions[{i}]")
            for i, a in enumerate(reader.listing(data, "viewer_actions", path))
        ]
        room_id = reader.string(data, "room_id", path, required=False)
        title = reader.string(data, "title", path, required=False)
        if current is not None and shelf and current not in shelf:
            reader.problem(f"{path}.current_link_id", f"link {current} is not on the shelf {shelf}")
        if len(reader.problems) > before:
            return None
        return cls(current, shelf, [a for a in actions if a], room_id, title)


@dataclass
class Request:
    """Everything the agent gets for one turn. Build with ``Request.from_dict``."""

    id: str
    mode: str
    comments: list[Comment]
    room: RoomState = field(default_factory=RoomState)
    history: list[Turn] = field(default_factory=list)
    anchor_utterances: list[str] = field(default_factory=list)
    product_link_ids: list[int] = field(default_factory=list)
    catalogue: Catalogue | None = None  # inline snapshot; else the agent's catalogue
    faq: list[FaqEntry] = field(default_factory=list)
    locale: str = "en"
    intent: str = ""  # optional label (evaluation cases carry one); never shown to the model

    @property
    def text(self) -> str:
        """The comments as one block: one line per comment in multi mode."""
        if self.mode == "single":
            return self.comments[0].text
        return "\n".join(f"[{i + 1}] {c.user}: {c.text}" for i, c in enumerate(self.comments))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "mode": self.mode,
            "comments": [c.to_dict() for c in self.comments],
            "room": self.room.to_dict(),
            "history": [t.to_dict() for t in self.history],
            "anchor_utterances": list(self.anchor_utterances),
            "products": list(self.product_link_ids),
            "faq": [f.to_dict() for f in self.faq],
            "locale": self.locale,
        }
        if self.catalogue is not None:
            data["catalogue"] = self.catalogue.to_dict()
        if self.intent:
            data["intent"] = self.intent
        return data

    @classmethod
    def load(cls, path: str | Path) -> Request:
        """Read and validate a request file: ``InputFileError`` when it is not readable JSON
        (size, UTF-8, syntax, nesting), ``DocumentValidationError`` listing every bad field."""
        return cls.from_dict(read_json(path, what="request file"), source=str(path))

    @classmethod
    def from_dict(
        cls, data: Any, *, source: str = "request", catalogue: Catalogue | None = None
    ) -> Request:
        """Validate and build. ``catalogue`` (the agent's) lets link ids be checked."""
        reader = FieldReader()
        request = cls.read(reader, data, catalogue=catalogue)
        if reader.problems or request is None:
            raise DocumentValidationError(reader.problems, source=source)
        return request

    @classmethod
    def read(
        cls, reader: FieldReader, raw: Any, *, catalogue: Catalogue | None = None
    ) -> Request | None:
        data = reader.mapping(raw, "")
        if data is None:
            return None
        reader.unknown_keys(
            data,
            "",
            {
                "id",
                "mode",
                "comments",
                "room",
                "history",
                "anchor_utterances",
                "products",
                "catalogue",
                "faq",
                "locale",
                "intent",
            },
        )
        request_id = reader.string(data, "id", "", required=False, default="request") or "request"
        raw_comments = reader.listing(data, "comments", "", required=True)
        mode = reader.choice(
            data,
            "mode",
            "",
            MODES,
            required=False,
            default="multi" if len(raw_comments) > 1 else "single",
        )
        comments = [Comment.read(reader, c, f"comments[{i}]") for i, c in enumerate(raw_comments)]
        if "comments" in data and not raw_comments:
            reader.problem("comments", "must hold at least one comment")
        if mode == "single" and len(raw_comments) > 1:
            reader.problem(
                "mode",
                f"is 'single' but {len(raw_comments)} comments were given; "
                "use mode 'multi' to answer several comments together",
            )
        room = RoomState.read(reader, data.get("room", {}), "room")
        history = [
            Turn.read(reader, t, f"history[{i}]")
            for i, t in enumerate(reader.listing(data, "history", ""))
        ]
        anchors = []
        for i, utterance in enumerate(reader.listing(data, "anchor_utterances", "")):
            if isinstance(utterance, dict) and isinstance(utterance.get("text"), str):
                utterance = utterance["text"]
            if not isinstance(utterance, str) or not utterance.strip():
                reader.problem(
                    f"anchor_utterances[{i}]", "must be a non-empty string (what the host said)"
                )
            else:
                anchors.append(utterance)
        inline = None
        if "catalogue" in data and data["catalogue"] is not None:
            inline = Catalogue.read(reader, data["catalogue"], "catalogue")
        known = inline or catalogue
        link_ids = []
        for i, link in enumerate(reader.listing(data, "products", "")):
            if isinstance(link, bool) or not isinstance(link, int) or link < 1:
                reader.problem(f"products[{i}]", f"must be a link id (integer >= 1), got {link!r}")
            elif known is not None and known.product(link) is None:
                reader.problem(
                    f"products[{i}]",
                    f"no product with link id {link}; the catalogue has {known.link_ids}",
                )
            else:
                link_ids.append(link)
        if known is not None and room is not None:
            for i, link in enumerate(room.shelf):
                if known.product(link) is None:
                    reader.problem(
                        f"room.shelf[{i}]", f"no product with link id {link} in the catalogue"
                    )
        faq = [
            FaqEntry.read(reader, f, f"faq[{i}]")
            for i, f in enumerate(reader.listing(data, "faq", ""))
        ]
        locale = reader.string(data, "locale", "", required=False, default="en") or "en"
        intent = reader.string(data, "intent", "", required=False)
        if reader.problems:
            return None
        return cls(
            id=request_id,
            mode=mode,
            comments=[c for c in comments if c],
            room=room or RoomState(),
            history=[t for t in history if t],
            anchor_utterances=anchors,
            product_link_ids=link_ids,
            catalogue=inline,
            faq=[f for f in faq if f],
            locale=locale,
            intent=intent,
        )
