"""Posting trajectory records to a Harness Studio deployment (docs/studio.md, "Bringing your own
traffic").

``TrafficPoster(url=..., token=...)`` collects ``Trajectory.to_dict()`` records and posts them in
batches of up to 100 to ``POST /api/v1/deployments/<name>/trajectories/`` with the deployment's
token. Records carry ``model`` ({name, fingerprint}) so the studio knows which model answered. A
request id the studio holds already is not stored twice, so posting again after a failure is safe.
Only the standard library: the harness imports no other package of this project.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import urllib.error
import urllib.request
from typing import Any

TOKEN_ENV = "HARNESS_TRAFFIC_TOKEN"
BATCH = 100


class TrafficPostError(ValueError):
    """The studio refused or could not be reached; the message says which and what it answered."""


def traffic_token(env: dict[str, str] | None = None) -> str:
    """The deployment token from $HARNESS_TRAFFIC_TOKEN; TrafficPostError when it is not set."""
    token = (env if env is not None else os.environ).get(TOKEN_ENV, "").strip()
    if not token:
        raise TrafficPostError(
            f"${TOKEN_ENV} is not set: put the deployment's token (hsd_..., made on the studio's "
            "Deployments page) there to post trajectories"
        )
    return token


def url_problem(url: str) -> str:
    """'' when ``url`` can be a deployment's trajectories URL, else what to give instead."""
    if not url.startswith(("http://", "https://")) or "/trajectories" not in url:
        return (
            "give the deployment's trajectories URL, e.g. "
            "http://studio:8000/api/v1/deployments/shop-eu/trajectories/"
        )
    return ""


def check_url(url: str) -> str:
    problem = url_problem(url)
    if problem:
        raise TrafficPostError(f"--post {url}: {problem}")
    return url


class TrafficPoster:
    def __init__(
        self, *, url: str, token: str, model: dict[str, str] | None = None, timeout_s: float = 15.0
    ) -> None:
        self.url = check_url(url)
        self.token = token
        self.model = {k: v for k, v in (model or {}).items() if v}
        self.timeout_s = timeout_s
        self.pending: list[dict[str, Any]] = []
        self.stored: list[str] = []
        self.duplicates: list[str] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def add(self, record: dict[str, Any]) -> None:
        """Queue one record (thread-safe); a full batch is posted at once. A failed post never stops
        the caller's work: it is kept for ``flush`` to raise."""
        with self._lock:
            self.pending.append({**record, "model": self.model} if self.model else record)
            batch = self.pending if len(self.pending) >= BATCH else None
            if batch is not None:
                self.pending = []
        if batch is not None:
            try:
                self._post(batch)
            except TrafficPostError as error:
                with self._lock:
                    self.errors.append(str(error))

    def flush(self) -> dict[str, list[str]]:
        """Post what is queued; returns every id stored and every duplicate so far, or raises
        TrafficPostError for any post that failed (the records it held were not stored)."""
        with self._lock:
            batch, self.pending = self.pending, []
        if batch:
            try:
                self._post(batch)
            except TrafficPostError as error:
                self.errors.append(str(error))
        if self.errors:
            raise TrafficPostError("; ".join(dict.fromkeys(self.errors)))
        return {"stored": self.stored, "duplicates": self.duplicates}

    def _post(self, batch: list[dict[str, Any]]) -> None:
        request = urllib.request.Request(
            self.url,
            data=json.dumps(batch).encode("utf-8"),
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            body = error.read()[:2000].decode("utf-8", "replace")
            with contextlib.suppress(
                ValueError, AttributeError
            ):  # the studio's JSON error, else the text
                body = json.loads(body).get("error", body)
            raise TrafficPostError(
                f"{self.url}: the studio answered {error.code}: {body}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise TrafficPostError(
                f"{self.url}: could not post ({getattr(error, 'reason', error)})"
            ) from None
        with self._lock:
            self.stored += answer.get("stored", [])
            self.duplicates += answer.get("duplicates", [])
