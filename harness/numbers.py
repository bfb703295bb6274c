"""The one reader of a whole number typed as text (a form field, a URL parameter, a tool argument).

``str.isdigit`` accepts superscripts and other scripts' digits ("²", "٣") that ``int`` then refuses
or reads differently, and ``int`` refuses strings of more than 4,300 digits with a ValueError: a
reader that checks with one and converts with the other turns such input into a traceback. This one
takes ASCII digits only, with an optional sign, up to ``max_digits``.
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"[+-]?[0-9]+")


def decimal_int(text: object, *, max_digits: int = 18) -> int | None:
    """The integer ``text`` spells (surrounding spaces ignored), or None when it is not a plain
    decimal whole number of at most ``max_digits`` digits."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not _DECIMAL.fullmatch(text) or len(text.lstrip("+-")) > max_digits:
        return None
    return int(text)
