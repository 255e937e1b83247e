"""Fold and showdown values of every hand against a weighted opposing range, with card removal.

O(H) per terminal after one sort per river board (Johanson et al., AAMAS 2012, the method postflop
solvers use); never a loop over hand pairs. On a CPU a native kernel walks the sorted hands
(`native`, faster river and turn iterations); elsewhere, and as its fallback, the
same values come from array code (`prefix_difference`), or from a masked matrix product where matrix
units pay (GPUs).

For a hand h = (c1, c2) and the opponent's weights r over hands:
- compatible mass M(h) = S - B[c1] - B[c2] + r[h], where S is the total weight and B[c] the weight
  of the hands holding card c (the hand h itself holds both cards and is subtracted twice);
- at a showdown, win(h) - lose(h) = (W(h) - L(h)) - (D_c1(h) + D_c2(h)), with W the weight of
  strictly weaker hands, L of strictly stronger ones, and D_c(h) the same difference among the hands
  that hold card c (the hands that share a card with h hold c1 or c2; h itself, in both, ties with
  itself). Sorting the hands by strength once per board makes W and L prefix sums, and sorting
  each card's K hands by strength makes each D_c a difference of prefix sums too (O(52 K) per
  board; a [K, K] sign product per card costs O(52 K^2) and made the showdown slower).
  The hands the river board blocks must weigh 0 (a tree's deal removes them).

Glossary: H hands (the hole pairs the starting board leaves), T terminals, R river boards,
K the most hands that hold one card (deck size - board size - 1).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from abstractions import hand_rank
from jaxcfr.poker.subgame import native

BOARDS_PER_STEP = 2  # river boards swept together per step of the loop over boards (turn iterations
# a little faster than with 1; 4 and more are slower)
INDEX = jnp.int16  # the tables' positions: below 52 * (K + 1) <= 2,600 and H + 1 <= 1,327


@dataclasses.dataclass(frozen=True)
class ShowdownTables:
  """Per river board: the hands in order of strength and where each hand's groups begin and end."""

  order: jax.Array  # [R, H] int16: hands by increasing strength (hands the board blocks first)
  weaker: jax.Array  # [R, H] int16: how many hands are strictly weaker than hand h (its group's start)
  not_stronger: jax.Array  # [R, H] int16: how many are not stronger (its group's end)
  # Per river board, each card's hands in order of strength, and where each hand's groups begin and
  # end in the lists of its two cards (positions in the per-card prefix sums, c * (K + 1) + count).
  card_order: jax.Array  # [R, 52 * K] int16: card c's hands by increasing strength; H pads (at the end)
  card_weaker: jax.Array  # [R, 2 * H] int16: per hand and card, c * (K + 1) + its strictly weaker hands
  card_not_stronger: jax.Array  # [R, 2 * H] int16: the same, + the hands not stronger than it
  # [R, H, H] sign(strength(h) - strength(h')) between hands that share no card (0 otherwise), for
  # the masked matrix product that replaces the sweep where matrix units pay (GPUs); else None.
  matrix: jax.Array | None = None


jax.tree_util.register_dataclass(
  ShowdownTables,
  data_fields=[
    'order',
    'weaker',
    'not_stronger',
    'card_order',
    'card_weaker',
    'card_not_stronger',
    'matrix',
  ],
  meta_fields=[],
)


def strengths(hands: np.ndarray, boards: np.ndarray) -> np.ndarray:
  """Hand values [R, H] int32 of hands [H, 2] on river boards [R, 5]; -1 where the board holds a
  card of the hand."""
  seven = np.concatenate(
    [
      np.broadcast_to(hands[None], (len(boards), len(hands), 2)),
      np.broadcast_to(boards[:, None], (len(boards), len(hands), 5)),
    ],
    axis=-1,
  )
  blocked = (hands[None, :, :, None] == boards[:, None, None, :]).any(axis=(-1, -2))
  safe = np.where(
    blocked[..., None], np.array([0, 1, 2, 3, 4, 5, 6])[None, None], seven
  )  # any distinct cards
  values = np.asarray(_hand_rank(safe.astype(np.int32)))
  return np.where(blocked, -1, values).astype(np.int32)


_hand_rank = jax.jit(hand_rank)


def disjoint_pairs(hands: np.ndarray) -> np.ndarray:
  """[H, H] bool: True where two of `hands` [H, 2] share no card (their cards as bits of a 64-bit
  mask: one AND per pair instead of four card comparisons)."""
  hands = np.asarray(hands, np.uint64)
  bits = (np.uint64(1) << hands[:, 0]) | (np.uint64(1) << hands[:, 1])
  return (bits[:, None] & bits[None, :]) == 0


def sign_matrix(hands: np.ndarray, strength: np.ndarray) -> np.ndarray:
  """[R, H, H] int8: sign(strength(h) - strength(h')) on each river board between hands that share no
  card and that the board leaves, 0 otherwise; `strength` [R, H] from `strengths`."""
  valid = strength >= 0
  sign = np.sign(strength[:, :, None] - strength[:, None, :]).astype(np.int8)
  return np.where(disjoint_pairs(hands)[None] & valid[:, :, None] & valid[:, None, :], sign, 0).astype(
    np.int8
  )


def showdown_tables(
  hands: np.ndarray, boards: np.ndarray, matrix_dtype=None, width_multiple: int = 1, strength=None
) -> ShowdownTables:
  """The sweep's tables for hands [H, 2] on river boards [R, 5] (host NumPy, once per spot); with a
  `matrix_dtype`, also the sign matrix of the matrix-product method in that dtype. Each card's list
  of hands is padded to the longest, rounded up to a multiple of `width_multiple` (so that spots on
  other boards share shapes). `strength` [R, H]: `strengths(hands, boards)` where the caller has it."""
  num_hands = len(hands)
  strength = strengths(hands, boards) if strength is None else np.asarray(strength, np.int32)  # [R, H]
  matrix = None
  if matrix_dtype is not None:
    matrix = jnp.asarray(sign_matrix(hands, strength), matrix_dtype)
  order = np.argsort(strength, axis=1, kind='stable').astype(np.int32)
  sorted_strength = np.take_along_axis(strength, order, axis=1)
  weaker = np.stack(
    [np.searchsorted(row, s, 'left') for row, s in zip(sorted_strength, strength, strict=True)]
  )
  not_stronger = np.stack(
    [np.searchsorted(row, s, 'right') for row, s in zip(sorted_strength, strength, strict=True)]
  )
  # The hands that hold each card (the same on every board), in hand order, then sorted by strength
  # on each board: each (card, hand) pair sorted by card, placed at its position among its card's.
  held = hands.reshape(-1).astype(np.int64)  # [2H]: hand h's cards at 2h, 2h + 1
  by_card = np.argsort(held, kind='stable')
  counts = np.bincount(held, minlength=52)
  width = max(1, int(counts.max(initial=0)))
  width = -(-width // width_multiple) * width_multiple
  card_hands = np.full((52, width), num_hands, np.int32)
  position = np.arange(len(held)) - np.repeat(np.cumsum(counts) - counts, counts)
  card_hands[held[by_card], position] = by_card // 2
  padded = np.concatenate([strength, np.full((len(strength), 1), np.iinfo(np.int32).max, np.int32)], 1)
  card_strength = padded[:, card_hands]  # [R, 52, K]: padding sorts last
  card_sort = np.argsort(card_strength, axis=2, kind='stable')
  card_order = np.take_along_axis(np.broadcast_to(card_hands, card_strength.shape), card_sort, axis=2)
  sorted_card = np.take_along_axis(card_strength, card_sort, axis=2)
  base = hands.astype(np.int64) * (width + 1)  # [H, 2]
  card_weaker = np.empty((len(strength), num_hands, 2), np.int64)
  card_not_stronger = np.empty_like(card_weaker)
  for r in range(len(strength)):  # board by board: a flop tree has thousands of river boards
    own = sorted_card[r, hands]  # [H, 2, K]: the sorted strengths of the lists of each hand's cards
    mine = strength[r, :, None, None]
    card_weaker[r] = base + (own < mine).sum(-1)
    card_not_stronger[r] = base + (own <= mine).sum(-1)
  boards_count = len(strength)
  tables = (order, weaker, not_stronger, card_order, card_weaker, card_not_stronger)
  # Converted here and moved in one call: an array at a time through jnp costs more than the rest.
  moved = jax.device_put([table.reshape(boards_count, -1).astype(INDEX) for table in tables])
  return ShowdownTables(*moved, matrix)


def showdown_difference(tables: ShowdownTables, reach: jax.Array) -> jax.Array:
  """win(h) - lose(h): [R, H, M] the opponent's compatible weight that hand h beats minus the weight
  that beats it, for the opponent's weights `reach` [R, H, M] at M showdowns on each river board.

  The sweep runs one river board at a time (`lax.map`), so that a board's [H, M] arrays stay in
  cache between its steps (faster on a CPU than whole [R, H, M] steps). Where the tables hold the
  sign matrix, one batched matrix product instead (exact: products with -1, 0, 1).
  """
  if tables.matrix is not None:
    return jnp.einsum(
      'rhk,rkm->rhm', tables.matrix.astype(reach.dtype), reach, precision=jax.lax.Precision.HIGHEST
    )
  return jax.lax.map(lambda args: board_difference(*args), (*_per_board(tables), reach))


def one_board_difference(tables: ShowdownTables, reach: jax.Array) -> jax.Array:
  """`showdown_difference` [M, H] of tables with one river board, for the opponent's weights `reach`
  [M, H] at M showdowns (no loop over boards; the showdowns leading, as the trees lay them out)."""
  if tables.matrix is not None:
    return jnp.matmul(reach, tables.matrix[0].T.astype(reach.dtype), precision=jax.lax.Precision.HIGHEST)
  return board_difference(*(table[0] for table in _per_board(tables)), reach, transposed=True)


def _per_board(tables: ShowdownTables) -> tuple[jax.Array, ...]:
  """The tables' per-board arrays, in `board_difference`'s order."""
  return (
    tables.order,
    tables.weaker,
    tables.not_stronger,
    tables.card_order,
    tables.card_weaker,
    tables.card_not_stronger,
  )


def showdown_values(
  tables: ShowdownTables, opponent: jax.Array, source: jax.Array, amount: jax.Array, mask: jax.Array
) -> jax.Array:
  """[R, M, H]: amount * (win(h) - lose(h)) * mask at the M showdowns of each river board, from the
  opponent's weights at the showdown nodes `opponent` [S + 1, H] (the last row zeros), `source`
  [R, M] the row of each board's showdowns (S pads), `amount` [R, 1, M] what a showdown's loser
  loses, `mask` [R, H] 0 where the river board blocks the hand.

  Per board (`lax.map`, `BOARDS_PER_STEP` boards at a time): the board's rows are gathered [M, H]
  and swept while they are in cache (the array form turns them to [H, M] and back, so that its
  gathers move rows; the native kernel does that itself).
  """
  if tables.matrix is not None:
    grouped = jnp.swapaxes(opponent[source], 1, 2)  # [R, H, M]
    difference = showdown_difference(tables, grouped) * amount * mask[..., None]
    return jnp.swapaxes(difference, 1, 2)

  def one(args):
    rows, board_amount, board_mask, *board = args
    reach = jnp.take(opponent, rows, axis=0)  # [M, H]
    return board_difference(*board, reach, transposed=True) * board_amount.T * board_mask[None]

  boards = (source, amount, mask, *_per_board(tables))
  if source.shape[0] == 1:  # a river spot: no loop around its one board
    return one(jax.tree.map(lambda x: x[0], boards))[None]
  return jax.lax.map(one, boards, batch_size=BOARDS_PER_STEP)


def board_difference(
  order: jax.Array,
  weaker: jax.Array,
  not_stronger: jax.Array,
  card_order: jax.Array,
  card_weaker: jax.Array,
  card_not_stronger: jax.Array,
  reach: jax.Array,
  transposed: bool = False,
) -> jax.Array:
  """win(h) - lose(h) [H, M] on one river board (its rows of the tables' per-board arrays) for the
  opponent's weights `reach` [H, M] ([M, H] in and out with `transposed`, the trees' layout): by the
  native kernel where it serves (`native.available`: on a CPU), else `prefix_difference`."""
  tables = (order, weaker, not_stronger, card_order, card_weaker)
  if native.available(reach.dtype):  # the kernel takes the showdowns leading
    if transposed:
      return native.board_difference(*tables, reach)
    return native.board_difference(*tables, reach.T).T
  if transposed:  # the array form's gathers move rows of hands
    return prefix_difference(*tables, card_not_stronger, reach.T).T
  return prefix_difference(*tables, card_not_stronger, reach)


def prefix_difference(
  order: jax.Array,
  weaker: jax.Array,
  not_stronger: jax.Array,
  card_order: jax.Array,
  card_weaker: jax.Array,
  card_not_stronger: jax.Array,
  reach: jax.Array,
) -> jax.Array:
  """`board_difference` as array code (any backend).

  Both terms are differences of prefix sums over hands sorted by strength: over all hands, and per
  card over the K hands that hold it (O(52 K M) per board, where a [K, K] sign product per card
  costs O(52 K^2 M)).
  """
  hands, m = reach.shape
  # weaker - stronger = P[a] - (T - P[b]) = (P[a] - T / 2) + (P[b] - T / 2) for the prefix sums P over
  # the hands by strength, T their total and [a, b) the hand's group: two gathers, not three.
  prefix = _prefix_rows(jnp.take(reach, order, axis=0)[None])[0]  # [H + 1, M]
  prefix = prefix - prefix[-1:] / 2
  main = jnp.take(prefix, weaker, axis=0) + jnp.take(prefix, not_stronger, axis=0)
  # The hands that share a card with h hold c1 or c2: the same difference within each card's hands.
  per_card = _card_rows(reach, card_order)  # [52, K, M]
  card_prefix = _prefix_rows(per_card)  # [52, K + 1, M]
  card_prefix = (card_prefix - card_prefix[:, -1:] / 2).reshape(-1, m)
  shared = jnp.take(card_prefix, card_weaker, axis=0, mode='clip') + jnp.take(
    card_prefix, card_not_stronger, axis=0, mode='clip'
  )  # [2 * H, M]: weaker minus stronger among the hands that hold each of the hand's cards
  return main - shared.reshape(hands, 2, m).sum(1)


PREFIX_RUN = 8  # rows per run of the long prefix sums (of 4, 8 and 16, 8 gave the fastest showdowns)
NARROW = 16  # at most this many columns (showdowns), every prefix sum is a parallel prefix


def _prefix_rows(x: jax.Array) -> jax.Array:
  """Prefix sums along axis 1 with a leading zero row: [B, n, M] -> [B, n + 1, M].

  On a CPU `cumsum` over a long axis is the slowest way. The lists of a turn tree's blocks (M ~ 50
  showdowns) are summed in runs of `PREFIX_RUN` rows, and the runs' totals give each run its offset:
  over the hands (n ~ 1,100) by a scan (faster showdowns than one scan over the rows, each of whose
  steps adds [B, M], and faster turn iterations than a parallel prefix), over each card's hands
  (n ~ 50, a few runs) by `cumsum` (turn iterations a little faster than with a parallel prefix).
  The lists of a narrow river spot (M <= `NARROW`: 9 on the benchmark spot) take a parallel prefix
  (`associative_scan`: faster river iterations).
  """
  b, n, m = x.shape
  zero = jnp.zeros((b, 1, m), x.dtype)
  if m <= NARROW:
    return jnp.concatenate([zero, jax.lax.associative_scan(jnp.add, x, axis=1)], axis=1)
  runs = jnp.pad(x, ((0, 0), (0, -n % PREFIX_RUN), (0, 0))).reshape(b, -1, PREFIX_RUN, m)
  within = jnp.cumsum(runs, axis=2)
  totals = within[:, :, -1]  # [B, runs, M]
  if totals.shape[1] <= 8:  # a card's list
    before = jnp.cumsum(totals, axis=1) - totals
  else:

    def step(total, run):
      total = total + run
      return total, total

    _, ends = jax.lax.scan(step, zero[:, 0], jnp.moveaxis(totals, 1, 0))  # [runs, B, M]
    before = jnp.concatenate([zero, jnp.moveaxis(ends, 0, 1)[:, :-1]], axis=1)  # [B, runs, M]
  rows = (within + before[:, :, None]).reshape(b, -1, m)[:, :n]
  return jnp.concatenate([zero, rows], axis=1)


def compatible_mass(hands: jax.Array, reach: jax.Array, card_lists: jax.Array | None = None) -> jax.Array:
  """M(h): [T, H] the opponent's weight on hands that share no card with hand h, hands [H, 2].

  With `card_lists` (each card's hands, [52 * K] padded with H: `card_hands(tables)`, a row of
  `ShowdownTables.card_order`, the same hands on every board), each card's weight B[c] is a sum over
  its K hands, gathered with the hands leading, and B[c1] + B[c2] two row gathers (faster turn
  and river iterations on a CPU); without, two matrix products by the [H, 52]
  card indicator (for matrix units)."""
  total = reach.sum(-1, keepdims=True)
  if card_lists is not None:
    per_card = _card_rows(reach.T, card_lists).sum(1)  # [52, T]
    both = jnp.take(per_card, hands[:, 0], axis=0) + jnp.take(per_card, hands[:, 1], axis=0)  # [H, T]
    return total - both.T + reach
  holding = jax.nn.one_hot(hands, 52, dtype=reach.dtype).sum(1)  # [H, 52]
  per_card = reach @ holding  # [T, 52]
  # per_card[:, c1] + per_card[:, c2] as a second product: faster on a CPU than two column gathers.
  return total - per_card @ holding.T + reach


def _card_rows(x: jax.Array, card_lists: jax.Array) -> jax.Array:
  """[52, K, M]: the rows of `x` [H, M] of each card's K hands, `card_lists` [52 * K] (H pads: zeros)."""
  padded = jnp.concatenate([x, jnp.zeros((1, x.shape[1]), x.dtype)])
  return jnp.take(padded, card_lists, axis=0, mode='clip').reshape(52, card_lists.shape[0] // 52, -1)


def card_hands(tables: ShowdownTables) -> jax.Array | None:
  """Each card's hands for `compatible_mass` where the tables serve the sweep (CPUs); None where
  they hold the sign matrix (the matrix products suit its backend)."""
  return tables.card_order[0] if tables.matrix is None else None
