"""Suit isomorphism: a dense canonical index of (hole, board) per street; the order of hole pairs.

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
The index is integer arithmetic on [..., cards] int arrays, written once against an array module
(`abstractions.arrays`): NumPy by default (this module imports no JAX); `abstractions.isomorphism`
runs the same code on JAX arrays, jittable. The tables it needs are built on the host with NumPy in
well under a second.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np

from abstractions.arrays import NUMPY, ArrayModule, binomial

NUM_RANKS = 13
NUM_SUITS = 4
STREETS = ('preflop', 'flop', 'turn', 'river')
# The board is one set: its strength does not depend on the order the cards came in.
ROUNDS = {'preflop': (2,), 'flop': (2, 3), 'turn': (2, 4), 'river': (2, 5)}
# The 1,326 hole-card pairs in the one canonical order (low card first): ranges and every array over
# hole pairs follow it.
HOLES = np.array(list(itertools.combinations(range(52), 2)), np.int32)  # [H, 2]
_SORT4 = ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2))
_INDEX_BITS = 21  # a suit's index within its configuration: at most C(13, 2) * C(11, 5) = 36,036 here


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
    """(suit index sizes by configuration code int64 [K], class offsets by configuration multiset
    int32, total)."""
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
    return sizes, offsets.astype(np.int32), total

  def _by_suit(self, cards, xp: ArrayModule) -> tuple[list, list, list]:
    """Of hands cards [N, num_cards]: each card's rank int32 [1, N] and whether it is of each suit
    bool [4, N], and per round each suit's ranks dealt in it as a mask int32 [4, N] (lists)."""
    suit = xp.arange(NUM_SUITS, dtype=np.int32)[:, None]
    ranks = [cards[None, :, i] >> 2 for i in range(self.num_cards)]  # [1, N]
    mine = [(cards[None, :, i] & 3) == suit for i in range(self.num_cards)]  # [4, N]
    bounds = np.cumsum((0,) + self.rounds)
    masks = [
      sum(mine[i] * (1 << ranks[i]) for i in range(bounds[r], bounds[r + 1])) for r in range(len(self.rounds))
    ]
    return ranks, mine, masks

  def _suits(self, cards, xp: ArrayModule) -> list:
    """Per suit its configuration code and index, packed as code << 21 | index: 4 x int32 [N], of
    hands cards [N, num_cards]; with `xp.tables`, from `_key_table` where it is made.

    Computed with the suit as a leading array axis [4, N] and kept in memory, so
    that XLA runs one vectorised loop instead of copying it into each consumer.
    """
    ranks, mine, masks = self._by_suit(cards, xp)
    table = self._key_table() if xp.tables else None
    if table is None:
      keys = self._keys(ranks, mine, masks, xp)
    else:
      first, keys = table
      at = (xp.take(first, masks[0], mode='clip') << NUM_RANKS * (len(masks) - 1)) | sum(masks[1:])
      keys = xp.take(keys, at, mode='clip')
    keys = xp.materialise(keys)  # [4, N]
    return [keys[s] for s in range(NUM_SUITS)]

  def _keys(self, ranks, mine, masks, xp: ArrayModule):
    """`_suits`' keys int32 [4, N] from the cards (`_by_suit`), card by card."""
    bounds = np.cumsum((0,) + self.rounds)
    zero = xp.zeros(mine[0].shape, np.int32)
    index, code, used = zero, zero, zero  # used: the suit's ranks dealt in earlier rounds
    size = xp.ones_like(zero)  # the suit's index range so far: the radix of the next round
    for r, (n, mask) in enumerate(zip(self.rounds, masks, strict=True)):
      for i in range(bounds[r], bounds[r + 1]):
        # This card's rank among the suit's ranks unused before round r, and its position in round r.
        below = (1 << ranks[i]) - 1
        free_rank = ranks[i] - xp.popcount(used & below)
        position = xp.popcount(mask & below)
        index = index + xp.where(mine[i], binomial(free_rank, position + 1, n, xp) * size, 0)
      count = xp.popcount(mask)
      size = size * binomial(NUM_RANKS - xp.popcount(used), count, n, xp)
      used = used | mask
      code = code + count * self._radix[r]
    return (code << _INDEX_BITS) | index

  @functools.cache  # noqa: B019
  def _key_table(self) -> tuple[np.ndarray, np.ndarray] | None:
    """`_keys` of a suit by its masks in each round, for `xp.tables`: (the ids int32 [2^13] of the
    masks a suit can hold in the first round, -1 elsewhere; the keys int32 at ids[mask0] << 13 | mask1,
    or ids[mask0] for one round). Made by `_keys` of hands that hold each pair of masks in their first
    suit and fill the rounds with cards of the others. None for more than two rounds or a first round
    of more than two cards (hold'em's streets have (2, n) and (2,)), where the table would be large."""
    rounds = self.rounds
    if len(rounds) > 2 or (len(rounds) == 2 and rounds[0] > 2):
      return None
    shift = NUM_RANKS * (len(rounds) - 1)
    by_size = [_rank_sets(n) for n in rounds] + [[np.zeros((1, 0), np.int32)]] * (2 - len(rounds))
    masks = [[(1 << ranks).sum(1, dtype=np.int32) for ranks in sets] for sets in by_size]
    ids = np.full(1 << NUM_RANKS, -1, np.int32)
    ids[np.concatenate(masks[0])] = np.arange(sum(map(len, masks[0])))
    keys = np.full(sum(map(len, masks[0])) << shift, -1, np.int32)
    others = np.array(
      [4 * rank + suit for suit in range(1, NUM_SUITS) for rank in range(NUM_RANKS)], np.int32
    )
    for a, mask_a in zip(by_size[0], masks[0], strict=True):
      for b, mask_b in zip(by_size[1], masks[1], strict=True):
        i, j = np.nonzero((mask_a[:, None] & mask_b[None, :]) == 0)  # the pairs with no rank in both
        fill_a = others[: rounds[0] - a.shape[1]]
        fill_b = others[rounds[0] : self.num_cards - b.shape[1]]
        cards = np.concatenate(
          [4 * a[i], np.broadcast_to(fill_a, (len(i), len(fill_a))),
           4 * b[j], np.broadcast_to(fill_b, (len(i), len(fill_b)))], axis=1,
        )  # fmt: skip
        keys[(ids[mask_a[i]] << shift) | mask_b[j]] = self._keys(*self._by_suit(cards, NUMPY), NUMPY)[0]
    return ids, keys

  def _size(self, code, xp: ArrayModule):
    """The index range int32 [N] of a suit with configuration `code` [N]."""
    if xp.tables:
      return xp.take(self._tables()[0].astype(np.int32), code, mode='clip')
    size, used = xp.ones_like(code), xp.zeros_like(code)
    for n, weight in zip(self.rounds, self._radix, strict=True):
      count = (code // weight) % (n + 1)
      size = size * binomial(NUM_RANKS - used, count, n, xp)
      used = used + count
    return size

  def _canonical(self, cards, xp: ArrayModule):
    """Suits sorted by (code, index), descending: codes, indices, index ranges (lists of 4 [N]), of
    hands cards [N, num_cards]."""
    keys = self._suits(cards, xp)
    for a, b in _SORT4:
      keys[a], keys[b] = xp.maximum(keys[a], keys[b]), xp.minimum(keys[a], keys[b])
    code = [k >> _INDEX_BITS for k in keys]
    return code, [k & ((1 << _INDEX_BITS) - 1) for k in keys], [self._size(c, xp) for c in code]

  def _rows(self, cards, xp: ArrayModule):
    """Hands [..., num_cards] as rows int32 [N, num_cards], and their leading shape [...]."""
    cards = xp.asarray(cards).astype(np.int32)
    if cards.shape[-1] != self.num_cards:
      raise ValueError(
        f'expected {self.num_cards} cards per hand for rounds {self.rounds}, got {cards.shape[-1]}'
      )
    return cards.reshape(-1, self.num_cards), cards.shape[:-1]

  def index(self, cards, xp: ArrayModule = NUMPY):
    """Class index int32 [...] in [0, size) of hands [..., num_cards] (cards in round order)."""
    cards, shape = self._rows(cards, xp)
    offsets = self._tables()[1]
    code, index, size = self._canonical(cards, xp)
    # Suits sharing a configuration: t = later positions in the same run (ascending position).
    same = [code[p] == code[p + 1] for p in range(NUM_SUITS - 1)]
    later = [xp.zeros_like(code[0])] * NUM_SUITS
    for p in range(NUM_SUITS - 2, -1, -1):
      later[p] = xp.where(same[p], later[p + 1] + 1, 0)
    max_group = NUM_SUITS
    config = sum(binomial(code[NUM_SUITS - 1 - i] + i, i + 1, NUM_SUITS, xp) for i in range(NUM_SUITS))
    within = xp.zeros_like(code[0])
    run_multiplier = next_multiplier = xp.ones_like(code[0])
    for p in range(NUM_SUITS):
      starts = xp.ones_like(same[0]) if p == 0 else ~same[p - 1]
      group_size = binomial(size[p] + later[p], later[p] + 1, max_group, xp)
      run_multiplier = xp.where(starts, next_multiplier, run_multiplier)
      next_multiplier = xp.where(starts, run_multiplier * group_size, next_multiplier)
      within = within + binomial(index[p] + later[p], later[p] + 1, max_group, xp) * run_multiplier
    config, within = xp.materialise((config, within))
    return (xp.take(xp.asarray(offsets), config, mode='clip') + within).reshape(shape)

  def weight(self, cards, xp: ArrayModule = NUMPY):
    """The number of hands in the class of each hand [..., num_cards]: 24 / |suit stabiliser|, int32 [...]."""
    cards, shape = self._rows(cards, xp)
    code, index, _ = self._canonical(cards, xp)
    stabiliser = xp.ones_like(code[0])
    run = xp.ones_like(code[0])
    for p in range(1, NUM_SUITS):
      run = xp.where((code[p] == code[p - 1]) & (index[p] == index[p - 1]), run + 1, 1)
      stabiliser = stabiliser * run
    return (24 // stabiliser).reshape(shape)


def _rank_sets(n: int) -> list[np.ndarray]:
  """The sets of k ranks for k = 0 .. n, each int32 [C(13, k), k]."""
  combinations = [list(itertools.combinations(range(NUM_RANKS), k)) for k in range(n + 1)]
  return [np.array(sets, np.int32).reshape(len(sets), k) for k, sets in enumerate(combinations)]


def check_street(street: str) -> None:
  """ValueError unless `street` is one of `STREETS`."""
  if street not in ROUNDS:
    raise ValueError(f'unknown street {street!r}; expected one of {", ".join(STREETS)}')


@functools.cache
def hand_indexer(street: str) -> HandIndexer:
  """The indexer of (hole, board) classes on a street: 'preflop', 'flop', 'turn' or 'river'."""
  check_street(street)
  return HandIndexer(ROUNDS[street])


def canonical_index(cards, street: str, xp: ArrayModule = NUMPY):
  """Class index int32 [...] of deals [..., 2 + board]: hole cards, then the board (any order)."""
  return hand_indexer(street).index(cards, xp)


def preflop_class(hole, xp: ArrayModule = NUMPY):
  """The 169 lossless preflop classes of hole cards [..., 2], int32 [...] in 0..168.

  Laid out as the usual 13 x 13 grid, class = 13 * row + column with rank 12 = ace:
  pairs on the diagonal (r, r), suited hands (high, low), offsuit hands (low, high).
  """
  hole = xp.asarray(hole).astype(np.int32)
  a, b = hole[..., 0], hole[..., 1]
  high, low = xp.maximum(a >> 2, b >> 2), xp.minimum(a >> 2, b >> 2)
  suited = (a & 3) == (b & 3)
  return xp.where(suited, 13 * high + low, 13 * low + high)
