"""`jaxcfr.recent.Recent`: the bounded mapping of what searches and policies keep between calls."""

import pytest

from jaxcfr.recent import Recent


def test_recent_builds_only_what_it_lacks_and_drops_the_oldest_past_its_limit():
  built = []

  def build(missing):
    built.append(list(missing))
    return [key * 10 for key in missing]

  held = Recent(2)
  assert held.get_many([1, 2, 1], build) == [10, 20, 10] and built == [[1, 2]]
  assert held.get_many([2, 3], build) == [20, 30] and built[-1] == [3]  # 1 was the oldest: dropped
  assert len(held) == 2 and 1 not in held and 2 in held and 3 in held
  assert held.get_many([4, 5, 6], build) == [40, 50, 60] and len(held) == 2  # more than the limit, answered
  assert held.get_many([], build) == [] and len(built) == 3
  with pytest.raises(ValueError, match='limit'):
    Recent(-1)
