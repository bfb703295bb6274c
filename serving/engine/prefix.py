"""The prefix store: keys and values of token prefixes, shared by every request of an engine.

Every agent call of a Harness starts with the same rendered system prompt (1,200
to 2,000 tokens for the demo Harness), and a request's second model round
starts with its first round's prompt and reply. The store keeps, per engine, the
KV tensors of recent sequences keyed by their tokens; a new prompt starts from
the longest common prefix with any entry (copied into the new sequence) and only
the rest is prefilled, as SGLang's radix cache does on a GPU.

Entries reference a sequence's own tensors (positions below a sequence's length
are never rewritten), so storing costs nothing; a lookup costs one copy of the
common prefix. Entries are evicted least recently used beyond ``max_bytes``.
Only the engine's scheduler thread calls the store, so it needs no lock.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

from serving.engine.model import SequenceKV

# Reusing fewer tokens than this is not worth a lookup copy.
MIN_REUSED_PREFIX = 32


@dataclass
class _Entry:
    ids: torch.Tensor  # [n] long
    kv: SequenceKV


def common_prefix(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many leading tokens two id tensors share."""
    n = min(a.shape[0], b.shape[0])
    if n == 0:
        return 0
    differ = (a[:n] != b[:n]).nonzero()
    return int(differ[0, 0]) if differ.numel() else n


class PrefixStore:
    def __init__(self, *, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next = 0
        self.hits = 0
        self.lookups = 0
        self.reused_tokens = 0

    @property
    def nbytes(self) -> int:
        seen: set[int] = set()
        total = 0
        for entry in self._entries.values():
            if id(entry.kv.k) not in seen:
                seen.add(id(entry.kv.k))
                total += entry.kv.nbytes
        return total

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, ids: torch.Tensor) -> tuple[SequenceKV | None, int]:
        """The entry sharing the longest prefix with ``ids`` and that length (leaving one token to
        prefill)."""
        self.lookups += 1
        best_key, best = None, 0
        for key, entry in self._entries.items():
            n = min(common_prefix(entry.ids, ids), entry.kv.length, ids.shape[0] - 1)
            if n > best:
                best_key, best = key, n
        if best_key is None or best < MIN_REUSED_PREFIX:
            return None, 0
        self._entries.move_to_end(best_key)
        self.hits += 1
        self.reused_tokens += best
        return self._entries[best_key].kv, best

    def insert(self, ids: torch.Tensor, kv: SequenceKV) -> None:
        """Keep ``kv``'s first ``len(ids)`` positions under ``ids``; entries that are a prefix of it
        go."""
        n = min(ids.shape[0], kv.length)
        if n < MIN_REUSED_PREFIX:
            return
        ids = ids[:n].clone()
        for key in [
            k
            for k, e in self._entries.items()
            if e.ids.shape[0] <= n and common_prefix(e.ids, ids) == e.ids.shape[0]
        ]:
            del self._entries[key]  # the new entry answers every lookup the old one did
        self._entries[self._next] = _Entry(ids=ids, kv=kv)
        self._next += 1
        while len(self._entries) > 1 and self.nbytes > self.max_bytes:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
