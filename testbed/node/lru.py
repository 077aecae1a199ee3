"""The task input cache's replacement policy (Pado, section 3.2.7), shared by the agents,
which keep their caches with it, and the master's pado strategy, which reads them
(``master.recovery.pado_rules.choose_executor``). Pure and light: agents import it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class LruCache:
    """An executor's task-input cache (section 3.2.7), least recently used first."""

    capacity_bytes: int
    entries: tuple[tuple[str, int], ...] = ()

    @property
    def used_bytes(self) -> int:
        return sum(size for _, size in self.entries)

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.entries)

    def cached_bytes(self, keys: Iterable[str]) -> int:
        wanted = set(keys)
        return sum(size for k, size in self.entries if k in wanted)

    def access(self, key: str, nbytes: int) -> tuple[LruCache, bool]:
        """Read ``key`` through the cache: (the cache afterwards, whether it was a hit).
        A hit becomes most recent; a miss is inserted, evicting least recent entries
        until it fits; an input larger than the whole cache is not kept."""
        rest = tuple(e for e in self.entries if e[0] != key)
        hit = len(rest) != len(self.entries)
        if hit:
            size = next(s for k, s in self.entries if k == key)
            return replace(self, entries=(*rest, (key, size))), True
        if nbytes > self.capacity_bytes:
            return self, False
        while sum(s for _, s in rest) + nbytes > self.capacity_bytes:
            rest = rest[1:]
        return replace(self, entries=(*rest, (key, nbytes))), False
