"""Exact all-in preflop equities: every hole-card pair against every other, card removal included.

The table (`EQUITY_FILE`, built once by `build_table` and shipped with the package) holds, for one
representative pair of each of the 169 preflop classes (`REPRESENTATIVES`) and each of the 1,326
pairs v, twice the wins plus the ties of the representative against v over all 1,712,304 boards of
the 48 cards that neither pair holds (0 where the two pairs share a card). Every other pair of a
class is a suit permutation of its representative, so the class-against-class figures follow:

    equity, pairs = pushfold.equity.class_matrix()   # float64 [169, 169], int64 [169, 169]

`equity[H, V]` is the mean all-in equity (wins plus half the ties) of class H against class V over
the pairs of the two classes that share no card, `pairs[H, V]` their number. The build enumerates the
2,598,960 five-card boards once, ranks all 1,326 pairs on each (`abstractions.evaluator`) and
compares the representatives with every pair, board by board.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from abstractions import HOLES
from jaxcfr.poker.rules import ranges
from jaxcfr.poker.rules.hands import PAIR_INDEX

EQUITY_FILE = Path(__file__).parent / 'data' / 'preflop_equity.npz'
BOARDS_PER_MATCHUP = math.comb(48, 5)  # boards that two disjoint pairs leave: 1,712,304
_CLASS_OF = ranges.class_of_hands(HOLES)  # [1326]
# The first pair of each class in `HOLES` order.
REPRESENTATIVES = np.array([np.flatnonzero(_CLASS_OF == k)[0] for k in range(169)], np.int64)
COMBOS = np.bincount(_CLASS_OF, minlength=169).astype(np.int64)  # 6 per pair, 4 suited, 12 offsuit


def _disjoint(first: np.ndarray, second: np.ndarray) -> np.ndarray:
  """Whether pairs [..., 2] share no card, broadcast over the leading axes."""
  return ~(first[..., :, None] == second[..., None, :]).any(axis=(-1, -2))


def build_table(chunk: int = 1024, on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
  """Twice the wins plus the ties, int64 [169, 1326], of each class's representative against every
  pair over all boards that share no card with either (0 where the pairs overlap). Enumerates every
  five-card board; on_progress(boards_done, boards) after each chunk of boards."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  from abstractions.evaluator import hand_rank  # noqa: PLC0415

  holes = jnp.asarray(HOLES, jnp.int32)
  reps = jnp.asarray(REPRESENTATIVES)

  @jax.jit
  def count(boards, real):  # boards int32 [C, 5], real bool [C] (False on the padding)
    size = boards.shape[0]
    cards = jnp.concatenate(
      [jnp.broadcast_to(holes, (size, 1326, 2)), jnp.broadcast_to(boards[:, None], (size, 1326, 5))], -1
    )
    free = ~(holes[None, :, :, None] == boards[:, None, None, :]).any(axis=(-1, -2))  # [C, 1326]
    rank = jnp.where(free, hand_rank(cards), 8191)  # a pair on the board beats and ties nothing
    ours = jnp.where(free[:, reps] & real[:, None], rank[:, reps], -2)  # [C, 169]; -2: no contest

    def add(total, board):  # one board at a time: the [169, 1326] comparison vectorises
      theirs, mine = board
      wins = (theirs[None] < mine[:, None]).astype(jnp.int32)
      ties = (theirs[None] == mine[:, None]).astype(jnp.int32)
      return total + 2 * wins + ties, None

    return jax.lax.scan(add, jnp.zeros((169, 1326), jnp.int32), (rank, ours))[0]

  boards = np.array(list(itertools.combinations(range(52), 5)), np.int32)
  total = np.zeros((169, 1326), np.int64)
  for start in range(0, len(boards), chunk):
    part = boards[start : start + chunk]
    real = np.arange(chunk) < len(part)
    part = np.concatenate([part, np.repeat(boards[:1], chunk - len(part), 0)])
    total += np.asarray(count(jnp.asarray(part), jnp.asarray(real)), np.int64)
    if on_progress is not None:
      on_progress(min(start + chunk, len(boards)), len(boards))
  return np.where(_disjoint(HOLES[REPRESENTATIVES][:, None], HOLES[None]), total, 0)


def save_table(table: np.ndarray, path: str | Path = EQUITY_FILE) -> None:
  """Writes the table atomically (a temporary file, then a rename)."""
  path = Path(path)
  temporary = path.with_name(path.name + '.partial.npz')
  np.savez_compressed(temporary, twice_wins=table.astype(np.int32), representatives=REPRESENTATIVES)
  temporary.replace(path)


@functools.cache
def table() -> np.ndarray:
  """The shipped table, int64 [169, 1326] (see the module)."""
  with np.load(EQUITY_FILE) as data:
    if not np.array_equal(data['representatives'], REPRESENTATIVES):
      raise ValueError(f'{EQUITY_FILE} was built for other representatives; rebuild it with build_table')
    return data['twice_wins'].astype(np.int64)


def _suit_map(pair: int) -> np.ndarray:
  """The suit permutation int64 [4] that maps pair index `pair` (`HOLES` order) onto its class
  representative: the suits of its two cards, sorted by rank (card ids are rank-major, so the two line
  up), go to the representative's, the unused suits to its unused ones in order."""
  cards = np.sort(HOLES[pair])
  rep = np.sort(HOLES[REPRESENTATIVES[_CLASS_OF[pair]]])
  permutation = np.arange(4)
  for mine, theirs in zip(cards, rep, strict=True):
    permutation[mine % 4] = theirs % 4
  unused_from = [s for s in range(4) if s not in {c % 4 for c in cards}]
  unused_to = [s for s in range(4) if s not in {c % 4 for c in rep}]
  for source, target in zip(unused_from, unused_to, strict=True):
    permutation[source] = target
  return permutation


def pair_equity(first: int, second: int) -> float:
  """Exact all-in equity of pair index `first` against pair index `second` (`HOLES` order), from the
  table: the first pair's class representative, with the suit permutation that maps it there."""
  if not _disjoint(HOLES[first], HOLES[second]):
    raise ValueError(f'pairs {first} and {second} share a card')
  permutation = _suit_map(first)
  mapped = 4 * (HOLES[second] // 4) + permutation[HOLES[second] % 4]
  index = PAIR_INDEX[mapped[0], mapped[1]]
  return float(table()[_CLASS_OF[first], index]) / (2 * BOARDS_PER_MATCHUP)


@functools.cache
def pair_matrix() -> np.ndarray:
  """Exact all-in equity of every pair against every other, float64 [1326, 1326] (`HOLES` order; 0
  where the two share a card): row h is its class representative's row of the table, read through the
  suit permutation that maps h onto the representative (`pair_equity` for all pairs at once)."""
  twice_wins = table()
  result = np.zeros((len(HOLES), len(HOLES)))
  for first in range(len(HOLES)):
    permutation = _suit_map(first)
    mapped = 4 * (HOLES // 4) + permutation[HOLES % 4]
    index = PAIR_INDEX[mapped[:, 0], mapped[:, 1]]  # [1326]
    result[first] = twice_wins[_CLASS_OF[first], index]
  return result / (2 * BOARDS_PER_MATCHUP)


@functools.cache
def class_matrix() -> tuple[np.ndarray, np.ndarray]:
  """(equity float64 [169, 169], pairs int64 [169, 169]): class H's mean all-in equity against class V
  over their pairs that share no card, and the number of such pairs (see the module)."""
  twice_wins = table()
  free = _disjoint(HOLES[REPRESENTATIVES][:, None], HOLES[None]).astype(np.int64)  # [169, 1326]
  one_hot = (_CLASS_OF[:, None] == np.arange(169)).astype(np.int64)  # [1326, 169]
  wins = twice_wins @ one_hot  # [169, 169], per representative
  pairs = free @ one_hot
  equity = wins / (2.0 * BOARDS_PER_MATCHUP * np.maximum(pairs, 1))
  return equity, COMBOS[:, None] * pairs
