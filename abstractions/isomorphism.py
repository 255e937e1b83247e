"""Suit isomorphism: a dense canonical index of (hole, board) per street.

Two deals are isomorphic when a permutation of the four suits maps one onto the
other, round by round (hole cards, flop, turn, river are sets). A perfect index
of the classes, after Waugh (2013, "A Fast and Optimal Hand Isomorphism
Algorithm"), so that work is done once per class:

- per suit, its ranks in each round form a *configuration* (cards per round) and
  an index among the rank sets of that configuration (colex within each round,
  of the ranks not used by earlier rounds, mixed radix across rounds);
- the suits are sorted by (configuration, index); the sorted configurations
  pick an offset, and the suits sharing a configuration form a multiset whose
  colex index is combined across groups in mixed radix.

Class counts: preflop 169, flop 1,286,792, turn 13,960,050, river 123,156,254.
`HandIndexer.index` is pure JAX on [..., cards] int arrays; the tables it needs
are built on the host with NumPy in well under a second.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from abstractions.evaluator import materialise

NUM_RANKS = 13
NUM_SUITS = 4
STREETS = ('preflop', 'flop', 'turn', 'river')
# The board is one set: its strength does not depend on the order the cards came in.
ROUNDS = {'preflop': (2,), 'flop': (2, 3), 'turn': (2, 4), 'river': (2, 5)}
_SORT4 = ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2))
_INDEX_BITS = 21  # a suit's index within its configuration: at most C(13, 2) * C(11, 5) = 36,036 here


def _binom(x: jax.Array, k: jax.Array | int, k_max: int) -> jax.Array:
  """C(x, k) elementwise for int32 x >= 0 and 0 <= k <= k_max (k may be an array)."""
  result = jnp.ones_like(x)
  product = jnp.ones_like(x)
  for j in range(1, k_max + 1):
    product = jax.lax.div(product * (x - j + 1), jnp.int32(j))  # C(x, j), exact at every step
    result = jnp.where(k == j, product, result)
  return jnp.where(x < k, 0, result)


@dataclasses.dataclass(frozen=True)
class HandIndexer:
  """Perfect index of suit-isomorphism classes for cards dealt in `rounds`.

  rounds: cards per round, e.g. (2, 5) for hole cards and a river board.
  """

  rounds: tuple[int, ...]

  @property
  def num_cards(self) -> int:
    return sum(self.rounds)

  @property
  def size(self) -> int:
    """The number of classes."""
    return int(self._tables()[2])

  @property
  def _radix(self) -> tuple[int, ...]:
    """Digit weights of a suit's configuration code (cards per round, mixed radix)."""
    weights, weight = [], 1
    for n in self.rounds:
      weights.append(weight)
      weight *= n + 1
    return tuple(weights)

  @functools.cache  # noqa: B019 (frozen, hashable, a handful of instances)
  def _tables(self) -> tuple[np.ndarray, np.ndarray, int]:
    """(suit index sizes by configuration code [K], class offsets by configuration multiset, total)."""
    configs = [c[::-1] for c in itertools.product(*[range(n + 1) for n in self.rounds[::-1]])]
    codes = [sum(c * w for c, w in zip(config, self._radix, strict=True)) for config in configs]
    sizes = np.zeros(len(configs), np.int64)
    for code, config in zip(codes, configs, strict=True):
      size, used = 1, 0
      for count in config:
        size *= math.comb(NUM_RANKS - used, count)
        used += count
      sizes[code] = size
    offsets = np.full(math.comb(len(configs) + NUM_SUITS - 1, NUM_SUITS), -1, np.int64)
    total = 0
    for multiset in itertools.combinations_with_replacement(range(len(configs)), NUM_SUITS):
      rounds = np.array([configs[codes.index(c)] for c in multiset]).sum(axis=0)
      if tuple(rounds) != self.rounds:
        continue
      count = 1
      for code, group in itertools.groupby(multiset):
        k = len(list(group))
        count *= math.comb(int(sizes[code]) + k - 1, k)
      offsets[sum(math.comb(c + i, i + 1) for i, c in enumerate(multiset))] = total
      total += count
    if sizes.max() >= 1 << _INDEX_BITS or len(configs) >= 1 << (31 - _INDEX_BITS):
      raise ValueError(f'rounds {self.rounds} are too large for this indexer')
    return sizes, offsets, total

  def _suits(self, cards: jax.Array) -> list[jax.Array]:
    """Per suit its configuration code and index, packed as code << 21 | index: 4 x int32 [...].

    Computed with the suit as a leading array axis [4, ...] and kept in memory, so
    that XLA runs one vectorised loop instead of copying it into each consumer.
    """
    cards = jnp.asarray(cards).astype(jnp.int32)
    if cards.shape[-1] != self.num_cards:
      raise ValueError(
        f'expected {self.num_cards} cards per hand for rounds {self.rounds}, got {cards.shape[-1]}'
      )
    suit = jnp.arange(NUM_SUITS, dtype=jnp.int32).reshape((NUM_SUITS,) + (1,) * (cards.ndim - 1))
    ranks = [cards[None, ..., i] >> 2 for i in range(self.num_cards)]  # [1, ...]
    mine = [(cards[None, ..., i] & 3) == suit for i in range(self.num_cards)]  # [4, ...]
    bounds = np.cumsum((0,) + self.rounds)
    zero = jnp.zeros(mine[0].shape, jnp.int32)
    index, code, used = zero, zero, zero  # used: the suit's ranks dealt in earlier rounds
    size = jnp.ones_like(zero)  # the suit's index range so far: the radix of the next round
    for r, n in enumerate(self.rounds):
      cards_r = range(bounds[r], bounds[r + 1])
      mask = sum(jnp.where(mine[i], 1 << ranks[i], 0) for i in cards_r)  # [4, ...]
      for i in cards_r:
        # This card's rank among the suit's ranks unused before round r, and its position in round r.
        below = (1 << ranks[i]) - 1
        free_rank = ranks[i] - jax.lax.population_count(used & below)
        position = jax.lax.population_count(mask & below)
        index = index + jnp.where(mine[i], _binom(free_rank, position + 1, n) * size, 0)
      count = jax.lax.population_count(mask)
      size = size * _binom(NUM_RANKS - jax.lax.population_count(used), count, n)
      used = used | mask
      code = code + count * self._radix[r]
    keys = materialise((code << _INDEX_BITS) | index)  # [4, ...]
    return [keys[s] for s in range(NUM_SUITS)]

  def _size(self, code: jax.Array) -> jax.Array:
    """The index range int32 [...] of a suit with configuration `code` [...]."""
    size, used = jnp.ones_like(code), jnp.zeros_like(code)
    for n, weight in zip(self.rounds, self._radix, strict=True):
      count = (code // weight) % (n + 1)
      size = size * _binom(NUM_RANKS - used, count, n)
      used = used + count
    return size

  def _canonical(self, cards: jax.Array):
    """Suits sorted by (code, index), descending: codes, indices, index ranges (lists of 4 [...])."""
    keys = self._suits(cards)
    for a, b in _SORT4:
      keys[a], keys[b] = jnp.maximum(keys[a], keys[b]), jnp.minimum(keys[a], keys[b])
    code = [k >> _INDEX_BITS for k in keys]
    return code, [k & ((1 << _INDEX_BITS) - 1) for k in keys], [self._size(c) for c in code]

  def index(self, cards: jax.Array) -> jax.Array:
    """Class index int32 [...] in [0, size) of hands [..., num_cards] (cards in round order)."""
    offsets = self._tables()[1]
    code, index, size = self._canonical(cards)
    # Suits sharing a configuration: t = later positions in the same run (ascending position).
    same = [code[p] == code[p + 1] for p in range(NUM_SUITS - 1)]
    later = [jnp.zeros_like(code[0])] * NUM_SUITS
    for p in range(NUM_SUITS - 2, -1, -1):
      later[p] = jnp.where(same[p], later[p + 1] + 1, 0)
    max_group = NUM_SUITS
    config = sum(_binom(code[NUM_SUITS - 1 - i] + i, i + 1, NUM_SUITS) for i in range(NUM_SUITS))
    within = jnp.zeros_like(code[0])
    run_multiplier = next_multiplier = jnp.ones_like(code[0])
    for p in range(NUM_SUITS):
      starts = jnp.ones_like(same[0]) if p == 0 else ~same[p - 1]
      group_size = _binom(size[p] + later[p], later[p] + 1, max_group)
      run_multiplier = jnp.where(starts, next_multiplier, run_multiplier)
      next_multiplier = jnp.where(starts, run_multiplier * group_size, next_multiplier)
      within = within + _binom(index[p] + later[p], later[p] + 1, max_group) * run_multiplier
    config, within = materialise((config, within))
    return jnp.asarray(offsets.astype(np.int32))[config] + within

  def weight(self, cards: jax.Array) -> jax.Array:
    """The number of hands in the class of each hand [..., num_cards]: 24 / |suit stabiliser|, int32 [...]."""
    code, index, _ = self._canonical(cards)
    stabiliser = jnp.ones_like(code[0])
    run = jnp.ones_like(code[0])
    for p in range(1, NUM_SUITS):
      run = jnp.where((code[p] == code[p - 1]) & (index[p] == index[p - 1]), run + 1, 1)
      stabiliser = stabiliser * run
    return 24 // stabiliser


@functools.cache
def hand_indexer(street: str) -> HandIndexer:
  """The indexer of (hole, board) classes on a street: 'preflop', 'flop', 'turn' or 'river'."""
  if street not in ROUNDS:
    raise ValueError(f'unknown street {street!r}; expected one of {", ".join(STREETS)}')
  return HandIndexer(ROUNDS[street])


def canonical_index(cards: jax.Array, street: str) -> jax.Array:
  """Class index int32 [...] of deals [..., 2 + board]: hole cards, then the board (any order)."""
  return hand_indexer(street).index(cards)


def preflop_class(hole: jax.Array) -> jax.Array:
  """The 169 lossless preflop classes of hole cards [..., 2], int32 [...] in 0..168.

  Laid out as the usual 13 x 13 grid, class = 13 * row + column with rank 12 = ace:
  pairs on the diagonal (r, r), suited hands (high, low), offsuit hands (low, high).
  """
  hole = jnp.asarray(hole).astype(jnp.int32)
  a, b = hole[..., 0], hole[..., 1]
  high, low = jnp.maximum(a >> 2, b >> 2), jnp.minimum(a >> 2, b >> 2)
  suited = (a & 3) == (b & 3)
  return jnp.where(suited, 13 * high + low, 13 * low + high)
