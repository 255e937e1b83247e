"""Flops for aggregated reports: the 1,755 flops distinct under suit relabelling with their weights,
their textures, and small subsets chosen to stand for all of them.

    every = flops.all_flops()                  # [Flop('2c2d2h', 4, ...), ...], weights sum to 22,100
    chosen = flops.subset(25)                  # 25 flops whose weights sum to 22,100 too
    chosen = flops.flop_set('25')              # 'all', a count, or a file of flops (one a line)

Two flops are one when a permutation of the four suits maps one onto the other; a class's weight
is the number of the 22,100 flops in it (`abstractions.indexing`'s flop index, 24 / its suit
stabiliser). The flop named is the class's first in card order, written high card first.

A subset of N flops is a stratified systematic sample: the flops split into strata by suits and
pairing (rainbow unpaired, rainbow paired or trips, two-tone unpaired, two-tone paired, monotone),
each stratum gets flops in proportion to its weight (largest remainders; at least one each where
N allows), and within a stratum, its flops in order of their ranks (high card, then the middle,
then the low), the flops at the midpoints of equal shares of the stratum's weight are taken; each
stands for its share, so that its weight is the weight of the flops it stands for.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np

from abstractions import indexing
from jaxcfr.poker.rules import cards
from jaxcfr.poker.rules.cards import PokerInputError

NUM_FLOPS = math.comb(52, 3)
CONNECTEDNESS = ('no straight', 'one straight', 'two straights', 'three straights')
STRATA = ('rainbow', 'rainbow paired', 'two-tone', 'two-tone paired', 'monotone')


@dataclasses.dataclass(frozen=True)
class Flop:
  """A flop ('Ah7d2c': high card first), how many of the 22,100 flops it stands for, and its texture."""

  board: str
  weight: float
  high: str  # the highest rank, 'A' ... '4'
  pairing: str  # 'unpaired', 'paired', 'trips'
  suits: str  # 'rainbow', 'two-tone', 'monotone'
  connectedness: str  # the straights that use all three ranks: CONNECTEDNESS[0 ... 3]

  @property
  def stratum(self) -> str:
    paired = ' paired' if self.pairing != 'unpaired' else ''
    return self.suits + paired if self.suits != 'monotone' else 'monotone'


def texture(board: tuple[int, ...]) -> dict:
  """{high, pairing, suits, connectedness} of a flop's three card ids."""
  ranks = sorted({c >> 2 for c in board}, reverse=True)
  suits = len({c & 3 for c in board})
  distinct = len(ranks)
  straights = 0
  if distinct == 3:  # five-rank windows holding all three ranks (the ace also low: the wheel)
    low_ranks = {r if r != 12 else -1 for r in ranks}
    for start in range(-1, 9):
      window = set(range(start, start + 5))
      straights += set(ranks) <= window or low_ranks <= window
  return {
    'high': cards.RANKS[ranks[0]],
    'pairing': {3: 'unpaired', 2: 'paired', 1: 'trips'}[distinct],
    'suits': {3: 'rainbow', 2: 'two-tone', 1: 'monotone'}[suits],
    'connectedness': CONNECTEDNESS[straights],
  }


def board_text(board) -> str:
  """Cards high rank first (suits 'shdc' first among equal ranks), e.g. 'Ah7d2c'."""
  return ''.join(cards.card_text(int(c)) for c in sorted(board, reverse=True))


def make_flop(board: tuple[int, ...], weight: float) -> Flop:
  return Flop(board_text(board), weight, **texture(board))


@functools.cache
def all_flops() -> tuple[Flop, ...]:
  """The 1,755 flop classes, strongest ranks first, each with its weight (they sum to 22,100)."""
  deals = np.array(list(itertools.combinations(range(52), 3)), np.int32)  # card order: lowest first
  indexer = indexing.HandIndexer((3,))
  index = np.asarray(indexer.index(deals))
  first = np.unique(index, return_index=True)[1]  # each class's first flop in card order
  weights = np.bincount(index, minlength=indexer.size)
  flops = [make_flop(tuple(deals[i]), float(weights[index[i]])) for i in first]
  return tuple(sorted(flops, key=_rank_order))


def _rank_order(flop: Flop) -> tuple:
  """Strongest ranks first (high, middle, low), then the class's suits."""
  board = cards.parse_cards(flop.board)
  return tuple(-(c >> 2) for c in board), flop.suits, flop.board


def subset(size: int) -> tuple[Flop, ...]:
  """`size` flops standing for all 1,755 (the module's stratified systematic sample); their weights
  sum to 22,100. `size` from 1 to 1,755; 1,755 is every flop."""
  every = all_flops()
  if not 1 <= size <= len(every):
    raise PokerInputError(f'a subset has 1 to {len(every):,} flops, not {size}')
  if size == len(every):
    return every
  strata = {name: [f for f in every if f.stratum == name] for name in STRATA}
  mass = {name: sum(f.weight for f in members) for name, members in strata.items()}
  counts = _allocate(size, mass, {name: len(members) for name, members in strata.items()})
  chosen = []
  for name, members in strata.items():
    n = counts[name]
    if n == 0:
      continue
    cumulative = np.cumsum([f.weight for f in members])
    total = cumulative[-1]
    # The flops at the midpoints of n equal shares of the stratum's weight, each standing for its
    # share; where two midpoints fall on one flop, the later takes the next flop not yet taken.
    taken = []
    for k in range(n):
      i = int(np.searchsorted(cumulative, (k + 0.5) / n * total))
      taken.append(max(i, taken[-1] + 1) if taken else i)
    last = len(members) - n  # pushed past the end: the k-th from the end at most there
    for i in (min(i, last + k) for k, i in enumerate(taken)):
      chosen.append((members[i], total / n))
  # Fewer flops than strata: the strata taken stand for the others too.
  scale = NUM_FLOPS / sum(weight for _, weight in chosen)
  return tuple(sorted((dataclasses.replace(f, weight=w * scale) for f, w in chosen), key=_rank_order))


def _allocate(size: int, mass: dict[str, float], room: dict[str, int]) -> dict[str, int]:
  """Flops per stratum in proportion to its weight, by largest remainder, one at least each where
  `size` allows, at most the stratum's flops (`room`)."""
  total = sum(mass.values())
  floor = 1 if size >= len(mass) else 0
  counts = {name: min(room[name], max(floor, int(size * m / total))) for name, m in mass.items()}
  while sum(counts.values()) > size:  # the floor pushed past `size`: take from the largest
    name = max(counts, key=lambda n: counts[n])
    counts[name] -= 1
  while sum(counts.values()) < size:  # the largest shortfall first, among strata with room
    name = max((n for n in mass if counts[n] < room[n]), key=lambda n: size * mass[n] / total - counts[n])
    counts[name] += 1
  return counts


SETS = ('all', 'a count such as 25', 'a file with one flop a line')


def flop_set(text: str) -> tuple[Flop, ...]:
  """The flops `--flops` names: 'all' (1,755), a count N (`subset(N)`), or a file of flops, one a line,
  each with an optional weight after it ('Qs8h3c', 'Qs8h3c 24'; blank lines and '#' comments skipped;
  the flops must be distinct; a weight is 1 where none is given). `PokerInputError` with one line for
  a bad set (a bad line named by its number)."""
  if text == 'all':
    return all_flops()
  if text.isdigit():
    return subset(int(text))
  try:
    with open(text, encoding='utf-8') as file:
      lines = file.read().splitlines()
  except (OSError, UnicodeDecodeError) as error:
    reason = getattr(error, 'strerror', None) or error
    raise PokerInputError(
      f"--flops {text!r}: not 'all', a count, or a readable file of flops ({reason})"
    ) from None
  flops, seen = [], {}
  for number, line in enumerate(lines, 1):
    line = line.split('#')[0].strip()
    if not line:
      continue
    board_text, weight = line, 1.0
    head, _, last = line.rpartition(' ')
    if head and not any(c.isalpha() for c in last):  # a weight after the cards
      try:
        weight = float(last)
      except ValueError:
        weight = -1.0
      if not (weight > 0 and math.isfinite(weight)):
        raise PokerInputError(f'--flops {text} line {number}: the weight {last!r} is not a positive number')
      board_text = head
    try:
      board = cards.parse_board(board_text, street='flop')
    except PokerInputError as error:
      raise PokerInputError(f'--flops {text} line {number}: {error}') from None
    flop = make_flop(board, weight)
    if flop.board in seen:
      raise PokerInputError(f'--flops {text} line {number}: {board_text} is line {seen[flop.board]} again')
    seen[flop.board] = number
    flops.append(flop)
  if not flops:
    raise PokerInputError(f'--flops {text}: no flops in the file')
  return tuple(flops)
