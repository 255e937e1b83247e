"""The array module that the card arithmetic is written against, once for both backends.

`indexing` (suit isomorphism), `ranking` (the hand evaluator) and `lookup` (the bucket tables) take an
`ArrayModule` `xp`: `NUMPY` here, for the host and the runtime that imports no JAX, or `JAX`
(`abstractions.evaluator`), under which the same code is traceable. An `ArrayModule` is its array
namespace (`xp.where`, `xp.zeros`, ...) plus

- `popcount(x)`: set bits of non-negative ints;
- `div(x, y)`: the quotient of non-negative ints (XLA's truncating division is cheaper than a floor);
- `materialise(tree)`: computes a pytree of index arrays before the gathers that read them (XLA would
  fuse them into a scalar loop; NumPy computes everything eagerly: the identity);
- `tables`: whether to read values of the arithmetic from tables of its own results, made on the host
  once (`binomial`, `indexing.HandIndexer`'s suit keys). NumPy makes a pass over memory per
  operation, so one gather beats a few operations; XLA fuses the arithmetic into one loop, where a
  gather costs more.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from types import ModuleType

import numpy as np

_TABLE_BITS = 16  # `binomial`'s table: x below 2^16 (every x of hold'em's indices)
_TABLE_K = 7  # ... and k up to 7


@dataclasses.dataclass(frozen=True)
class ArrayModule:
  """An array namespace and what the card arithmetic needs beyond it (see the module docstring)."""

  namespace: ModuleType
  popcount: Callable
  div: Callable
  materialise: Callable
  tables: bool

  def __getattr__(self, name: str):
    if name == 'namespace':  # not set yet (a copy being made)
      raise AttributeError(name)
    return getattr(self.namespace, name)


def binomial(x, k, k_max: int, xp: ArrayModule):
  """C(x, k) elementwise for ints x >= 0 [...] and 0 <= k <= k_max (an int or an array [...]), in x's
  dtype: C(x, j) = C(x, j - 1) * (x - j + 1) / j for j = 1 .. k_max, each step exact (so exact while
  C(x, k) * k fits the dtype). With `xp.tables`, read from a table of these values where it holds x."""
  if xp.tables and k_max <= _TABLE_K and (x.size == 0 or int(x.max()) < 1 << _TABLE_BITS):
    at = (xp.asarray(k, x.dtype) << _TABLE_BITS) | x
    return xp.take(_binomial_table(), at, mode='clip').astype(x.dtype)
  result = xp.ones_like(x)
  product = xp.ones_like(x)
  for j in range(1, k_max + 1):
    product = xp.div(product * (x - j + 1), x.dtype.type(j))  # C(x, j), exact at every step
    result = xp.where(k == j, product, result)
  return xp.where(x < k, 0, result)


@functools.cache
def _binomial_table() -> np.ndarray:
  """`binomial` of every x below 2^16 and k up to 7, int32 [8 << 16] at k << 16 | x (computed in
  int64, so exact wherever the result fits int32)."""
  x = np.arange(1 << _TABLE_BITS, dtype=np.int64)
  k = np.arange(_TABLE_K + 1, dtype=np.int64)[:, None]
  return binomial(x, k, _TABLE_K, _NUMPY_ARITHMETIC).astype(np.int32).reshape(-1)


def _popcount(x: np.ndarray) -> np.ndarray:
  """Set bits of non-negative ints [...] below 2^16 (all the rank masks here), int32 [...]."""
  if hasattr(np, 'bitwise_count'):  # NumPy 2
    return np.bitwise_count(x).astype(np.int32)
  return _popcount16()[x]


@functools.cache
def _popcount16() -> np.ndarray:
  return np.array([bin(i).count('1') for i in range(1 << 16)], np.int32)


NUMPY = ArrayModule(np, _popcount, np.floor_divide, lambda tree: tree, tables=True)
_NUMPY_ARITHMETIC = dataclasses.replace(NUMPY, tables=False)  # what the tables are made with
