"""Text a deployment sent, shown so that what a reader sees is what was sent."""

from __future__ import annotations

import unicodedata

from django import template

register = template.Library()


@register.filter
def visible(text) -> str:
    """``text`` with each control or format character (a right-to-left override U+202E, a zero-width
    space, a bidi isolate) written as ``<U+202E>``: such characters could make a request id read as
    another one. Autoescaping still applies."""
    text = "" if text is None else str(text)
    return "".join(
        f"<U+{ord(c):04X}>" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text
    )
