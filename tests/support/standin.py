"""Stand-in abstraction tables: full-size tables of a few buckets, each class's bucket its index modulo
the street's count (written directly, not built by k-means: milliseconds, not minutes).

    from standin import write_tables             # tests/support is on sys.path (conftest.py)
    directory = write_tables(tmp_path / 'tables')  # buckets (3, 2, 2, 2)
"""

from __future__ import annotations

import numpy as np

import abstractions
from abstractions.isomorphism import hand_indexer

STREETS = ('preflop', 'flop', 'turn', 'river')


def write_tables(directory, sizes: tuple[int, int, int, int] = (3, 2, 2, 2)) -> str:
  """Writes the tables to `directory` (as `jaxcfr abstract` would) and returns its path as a string."""
  arrays = {}
  for street, k in zip(STREETS, sizes, strict=True):
    count = 169 if street == 'preflop' else hand_indexer(street).size  # 123 M on the river
    arrays[street] = np.tile(np.arange(k, dtype=np.uint8), count // k + 1)[:count]  # not as int64
  abstractions.save(arrays, {'buckets': list(sizes)}, str(directory))
  return str(directory)
