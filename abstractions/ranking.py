"""A vectorised 5-, 6- and 7-card hold'em hand evaluator.

Card ids are `4 * rank + suit` (rank 0 = deuce ... 12 = ace), as in phevaluator.
`hand_rank` returns one of the 7,462 distinct five-card hand values, 0 = 7-5-4-3-2
offsuit ... 7461 = royal flush, so it equals `7462 - phevaluator.evaluate_cards`.

How: two small tables built once on the host with NumPy.
- Without a flush the value depends on the multiset of ranks only. The ranks,
  sorted by a sorting network, r_0 <= ... <= r_{n-1}, become the strictly
  increasing s_i = r_i + i, and the colex index sum_i C(s_i, i + 1) of that
  subset of {0 .. 12 + n} addresses a table of C(13 + n - 1, n) entries (50,388 for
  seven cards, 100 KB).
- With five or more cards of one suit (at most one suit, and then neither quads
  nor a full house is possible), the value depends on the 13-bit rank mask of that
  suit: a table of 8,192 entries.
The work is elementwise integer arithmetic on [N] columns plus two gathers, written once against an
array module (`abstractions.arrays`): NumPy by default (this module imports no JAX);
`abstractions.evaluator.hand_rank` runs the same code on JAX arrays.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from abstractions.arrays import NUMPY, ArrayModule

NUM_RANKS = 13
NUM_SUITS = 4
NUM_CARDS = 52
NUM_HAND_VALUES = 7462
CATEGORIES = (
  'high card',
  'pair',
  'two pair',
  'three of a kind',
  'straight',
  'flush',
  'full house',
  'four of a kind',
  'straight flush',
)
# The first dense value of each category (high card ... straight flush), and the end.
CATEGORY_STARTS = (0, 1277, 4137, 4995, 5853, 5863, 7140, 7296, 7452, 7462)

# Optimal sorting networks (Knuth, TAOCP 5.3.4) for 5, 6 and 7 keys.
_NETWORKS = {
  5: ((0, 1), (3, 4), (2, 4), (2, 3), (0, 3), (0, 2), (1, 4), (1, 3), (1, 2)),
  6: ((1, 2), (4, 5), (0, 2), (3, 5), (0, 1), (3, 4), (2, 5), (0, 3), (1, 4), (2, 4), (1, 3), (2, 3)),
  7: (
    (1, 2), (3, 4), (5, 6), (0, 2), (3, 5), (4, 6), (0, 1), (4, 5), (2, 6), (0, 4), (1, 5), (0, 3),
    (2, 5), (1, 3), (2, 4), (2, 3),
  ),
}  # fmt: skip


def _score5(ranks: np.ndarray, flush: bool) -> np.ndarray:
  """Orderable scores of five-card hands given their ranks [M, 5] (any order).

  score = category * 13^5 + tie-break digits (ranks by count, then rank, descending).
  """
  m = ranks.shape[0]
  counts = np.zeros((m, NUM_RANKS), np.int64)  # [M, 13]
  np.add.at(counts, (np.arange(m)[:, None], ranks), 1)
  # Ranks ordered by (count, rank) descending: the tie-break digits.
  order = np.argsort(-(counts * 16 + np.arange(NUM_RANKS)), axis=1, kind='stable')[:, :5]  # [M, 5]
  pattern = np.sort(counts, axis=1)[:, ::-1][:, :5]  # [M, 5]
  distinct = pattern[:, 1] == 1
  top = ranks.max(axis=1)
  wheel = distinct & (np.sort(ranks, axis=1) == [0, 1, 2, 3, 12]).all(axis=1)
  straight = distinct & ((top - ranks.min(axis=1) == 4) & (pattern[:, 0] == 1) | wheel)
  high = np.where(wheel, 3, top)
  category = np.select(
    [
      straight & flush,
      pattern[:, 0] == 4,
      (pattern[:, 0] == 3) & (pattern[:, 1] == 2),
      np.full(m, flush),
      straight,
      pattern[:, 0] == 3,
      (pattern[:, 0] == 2) & (pattern[:, 1] == 2),
      pattern[:, 0] == 2,
    ],
    [8, 7, 6, 5, 4, 3, 2, 1],
    0,
  )
  digits = np.zeros(m, np.int64)
  for i in range(5):
    digits = digits * NUM_RANKS + order[:, i]
  digits = np.where(straight, high, digits)
  return category * NUM_RANKS**5 + digits


@functools.cache
def _tables() -> tuple[dict[int, np.ndarray], np.ndarray]:
  """(non-flush tables by hand size, flush table): dense values 0..7461, int16."""
  multisets = np.array(list(itertools.combinations_with_replacement(range(NUM_RANKS), 5)))  # [6188, 5]
  counts = np.stack([(multisets == r).sum(axis=1) for r in range(NUM_RANKS)], axis=1)
  multisets = multisets[counts.max(axis=1) <= 4]  # [6175, 5]
  subsets = np.array(list(itertools.combinations(range(NUM_RANKS), 5)))  # [1287, 5]
  plain = _score5(multisets, flush=False)
  suited = _score5(subsets, flush=True)
  classes = np.unique(np.concatenate([plain, suited]))
  assert len(classes) == NUM_HAND_VALUES, len(classes)

  plain_tables = {}
  for n in (5, 6, 7):
    ranks = np.array(list(itertools.combinations_with_replacement(range(NUM_RANKS), n)))  # [C(12+n, n), n]
    index = _colex(ranks + np.arange(n))
    legal = np.stack([(ranks == r).sum(axis=1) for r in range(NUM_RANKS)], axis=1).max(axis=1) <= 4
    if n == 5:
      best = np.searchsorted(classes, _score5(ranks, flush=False))
    else:  # the best five of n ranks: the best of the n - 1 left by dropping one (the rows stay sorted)
      smaller = plain_tables[n - 1]
      best = np.max([smaller[_colex(np.delete(ranks, k, axis=1) + np.arange(n - 1))] for k in range(n)], axis=0)
    table = np.zeros(math.comb(NUM_RANKS + n - 1, n), np.int16)
    table[index[legal]] = best[legal]
    plain_tables[n] = table

  masks = np.arange(1 << NUM_RANKS)
  best = np.full(1 << NUM_RANKS, -1, np.int64)
  subset_masks = (1 << subsets).sum(axis=1)
  for subset_mask, score in zip(subset_masks, suited, strict=True):
    best = np.where((masks & subset_mask) == subset_mask, np.maximum(best, score), best)
  flush_table = np.where(best >= 0, np.searchsorted(classes, np.maximum(best, 0)), 0).astype(np.int16)
  return plain_tables, flush_table


def _colex(increasing: np.ndarray) -> np.ndarray:
  """Colex index sum_i C(s_i, i + 1) of strictly increasing rows [M, n]."""
  n = increasing.shape[1]
  binom = np.array([[math.comb(s, k) for k in range(n + 1)] for s in range(NUM_RANKS + n)])
  return binom[increasing, np.arange(1, n + 1)].sum(axis=1)


def _binomial(s, k: int, xp: ArrayModule):
  """C(s, k) for int32 s in 0..19, k <= 7, by exact integer arithmetic."""
  product = xp.ones_like(s)
  for j in range(k):
    product = product * (s - j)
  return xp.where(s >= k, product // math.factorial(k), 0)


def hand_rank(cards, xp: ArrayModule = NUMPY):
  """Strength of the best five-card hand within each row of cards [..., 5|6|7].

  Returns int32 [...] in 0..7461, higher is stronger, equal is a tie. The cards of
  a row must be distinct ids in 0..51.
  """
  cards = xp.asarray(cards)
  n = cards.shape[-1]
  if n not in _NETWORKS:
    raise ValueError(f'hand_rank takes 5, 6 or 7 cards per hand, got {n}')
  plain_tables, flush_table = _tables()
  columns = [cards[..., i].astype(np.int32) for i in range(n)]  # n x [...]
  for i, j in _NETWORKS[n]:
    columns[i], columns[j] = xp.minimum(columns[i], columns[j]), xp.maximum(columns[i], columns[j])
  ranks = [c >> 2 for c in columns]
  suits = [c & 3 for c in columns]
  index = sum(_binomial(r + i, i + 1, xp) for i, r in enumerate(ranks))  # [...]

  # Suit counts in four nibbles; with a bias of 3 a count >= 5 sets that nibble's top bit.
  flush_bits = (sum(1 << (4 * s) for s in suits) + 0x3333) & 0x8888
  flush_suit = xp.where(flush_bits & 0x8800, 2, 0) + xp.where(flush_bits & 0x8080, 1, 0)
  mask = sum(xp.where(s == flush_suit, 1 << r, 0) for r, s in zip(ranks, suits, strict=True))
  mask = xp.where(flush_bits != 0, mask, 0)  # [...], 0 without a flush

  index, mask = xp.materialise((index, mask))
  plain = xp.asarray(plain_tables[n])[index]
  flush = xp.asarray(flush_table)[mask]
  return xp.where(mask != 0, flush, plain).astype(np.int32)
