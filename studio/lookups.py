"""The studio's one 404 convention.

A selector returns the object it is asked for or raises the model's own ``DoesNotExist`` (it knows
nothing of HTTP, so services, tasks and commands can call it too); a view that looks an object up
from its URL calls it through ``found_or_404``, which answers 404 with a message naming what is
missing ("no stage #12"), shown on the studio's 404 page. Django's ``get_object_or_404`` is not used
(its message names the model class, not the object). A URL part that names no object at all (an
unknown run kind, a file a version does not hold) raises ``Http404`` with such a message itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404

T = TypeVar("T")


def found_or_404(lookup: Callable[..., T], missing: str, **kwargs) -> T:
    """``lookup(**kwargs)``, or Http404(``missing``) when what it looks up does not exist."""
    try:
        return lookup(**kwargs)
    except ObjectDoesNotExist:
        raise Http404(missing) from None
