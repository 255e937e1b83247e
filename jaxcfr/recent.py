"""A mapping that keeps the entries used last: what a search, a policy or a re-solve keeps between
calls (leaf matrices, board tables, bucket rows), bounded so that a long match does not grow it.

    held = Recent(limit=16)
    values = held.get_many(keys, build)   # the held values, the others from build(missing keys)
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable


class Recent:
  """At most `limit` entries; each `get_many` makes its keys the newest and drops the oldest past the
  limit (after answering, so one call may ask for more than `limit` keys)."""

  def __init__(self, limit: int):
    if not (isinstance(limit, int) and limit >= 0):
      raise ValueError(f'limit must be a whole number >= 0, got {limit!r}')
    self.limit = limit
    self._held = collections.OrderedDict()

  def __len__(self) -> int:
    return len(self._held)

  def __contains__(self, key: Hashable) -> bool:
    return key in self._held

  def get_many(self, keys: Iterable[Hashable], build: Callable[[list], Iterable]) -> list:
    """[the value of each of `keys`]: those held, the others from one call `build(missing)` (the keys
    not held, each once, in order of first appearance; it returns their values in that order)."""
    keys = list(keys)
    found = {key: self._held[key] for key in keys if key in self._held}
    missing = [key for key in dict.fromkeys(keys) if key not in found]
    if missing:
      found.update(zip(missing, build(missing), strict=True))
    for key in keys:
      self._held[key] = found[key]
      self._held.move_to_end(key)
    while len(self._held) > self.limit:
      self._held.popitem(last=False)
    return [found[key] for key in keys]
