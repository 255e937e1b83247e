"""Fold and showdown values of every hand against a weighted opposing range, with card removal.

Array code, O(H) per terminal after one sort per river board (Johanson et al., AAMAS 2012, the
method postflop solvers use); never a loop over hand pairs.

For a hand h = (c1, c2) and the opponent's weights r over hands:
- compatible mass M(h) = S - B[c1] - B[c2] + r[h], where S is the total weight and B[c] the weight
  of the hands holding card c (the hand h itself holds both cards and is subtracted twice);
- at a showdown, win(h) - lose(h) = (W(h) - L(h)) - (D_c1(h) + D_c2(h)), with W the weight of
  strictly weaker hands, L of strictly stronger ones, and D_c(h) the same difference among the hands
  that hold card c (the hands that share a card with h hold c1 or c2; h itself, in both, ties with
  itself). Sorting the hands by strength once per board makes W and L prefix sums; D_c is a small
  product per card and board, [K, K] signs times the K weights of the hands that hold c, which a
  CPU's matrix units do faster than the per-card sorted sweeps and the scattered reads they need.

Glossary: H hands (the hole pairs the starting board leaves), T terminals, R river boards,
K the most hands that hold one card (deck size - board size - 1).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from abstractions import hand_rank


@dataclasses.dataclass(frozen=True)
class ShowdownTables:
  """Per river board: the hands in order of strength and where each hand's groups begin and end."""

  order: jax.Array  # [R, H] int32: hands by increasing strength (hands the board blocks first)
  weaker: jax.Array  # [R, H] int32: how many hands are strictly weaker than hand h (its group's start)
  not_stronger: jax.Array  # [R, H] int32: how many are not stronger (its group's end)
  card_hands: jax.Array  # [52 * K] int32: the hands that hold each card (K per card); H pads
  card_position: jax.Array  # [H, 2] int32: where each of a hand's cards lists it (c * K + k)
  strength: jax.Array  # [R, H] int32: each hand's value on each river board, -1 where the board blocks it
  # [R, H, H] sign(strength(h) - strength(h')) between hands that share no card (0 otherwise), for
  # the masked matrix product that replaces the sweep where matrix units pay (GPUs); else None.
  matrix: jax.Array | None = None


jax.tree_util.register_dataclass(
  ShowdownTables,
  data_fields=[
    'order',
    'weaker',
    'not_stronger',
    'card_hands',
    'card_position',
    'strength',
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
  values = np.asarray(jax.jit(hand_rank)(jnp.asarray(safe, jnp.int32)))
  return np.where(blocked, -1, values).astype(np.int32)


def showdown_tables(hands: np.ndarray, boards: np.ndarray, matrix_dtype=None) -> ShowdownTables:
  """The sweep's tables for hands [H, 2] on river boards [R, 5] (host NumPy, once per spot); with a
  `matrix_dtype`, also the sign matrix of the matrix-product method in that dtype."""
  num_hands = len(hands)
  strength = strengths(hands, boards)  # [R, H]
  matrix = None
  if matrix_dtype is not None:
    disjoint = ~(hands[:, None, :, None] == hands[None, :, None, :]).any(axis=(-1, -2))  # [H, H]
    valid = strength >= 0
    sign = np.sign(strength[:, :, None] - strength[:, None, :]).astype(np.int8)
    sign = np.where(disjoint[None] & valid[:, :, None] & valid[:, None, :], sign, 0)
    matrix = jnp.asarray(sign, matrix_dtype)
  order = np.argsort(strength, axis=1, kind='stable').astype(np.int32)
  sorted_strength = np.take_along_axis(strength, order, axis=1)
  weaker = np.stack(
    [np.searchsorted(row, s, 'left') for row, s in zip(sorted_strength, strength, strict=True)]
  )
  not_stronger = np.stack(
    [np.searchsorted(row, s, 'right') for row, s in zip(sorted_strength, strength, strict=True)]
  )
  # The hands that hold each card (the same on every board), and their signs per board and card.
  holders = [np.flatnonzero((hands == c).any(axis=1)) for c in range(52)]
  width = max(1, max(len(h) for h in holders))
  card_hands = np.full((52, width), num_hands, np.int32)
  card_position = np.zeros((num_hands, 2), np.int32)
  for c, h in enumerate(holders):
    card_hands[c, : len(h)] = h
    for k, hand in enumerate(h):
      card_position[hand, int(hands[hand, 1] == c)] = c * width + k
  return ShowdownTables(
    jnp.asarray(order),
    jnp.asarray(weaker, jnp.int32),
    jnp.asarray(not_stronger, jnp.int32),
    jnp.asarray(card_hands.reshape(-1)),
    jnp.asarray(card_position),
    jnp.asarray(strength),
    matrix,
  )


def showdown_difference(tables: ShowdownTables, reach: jax.Array) -> jax.Array:
  """win(h) - lose(h): [R, H, M] the opponent's compatible weight that hand h beats minus the weight
  that beats it, for the opponent's weights `reach` [R, H, M] at M showdowns on each river board.

  The sweep runs one river board at a time (`lax.map`), so that a board's [H, M] arrays stay in
  cache between its steps (2x faster on a CPU than whole [R, H, M] steps). Where the tables hold the
  sign matrix, one batched matrix product instead (exact: products with -1, 0, 1).
  """
  if tables.matrix is not None:
    return jnp.einsum(
      'rhk,rkm->rhm', tables.matrix.astype(reach.dtype), reach, precision=jax.lax.Precision.HIGHEST
    )
  return jax.lax.map(
    lambda args: board_difference(tables, *args),
    (tables.order, tables.weaker, tables.not_stronger, tables.strength, reach),
  )


def showdown_values(
  tables: ShowdownTables, opponent: jax.Array, source: jax.Array, amount: jax.Array, mask: jax.Array
) -> jax.Array:
  """[R, M, H]: amount * (win(h) - lose(h)) * mask at the M showdowns of each river board, from the
  opponent's weights at the showdown nodes `opponent` [S + 1, H] (the last row zeros), `source`
  [R, M] the row of each board's showdowns (S pads), `amount` [R, 1, M] what a showdown's loser
  loses, `mask` [R, H] 0 where the river board blocks the hand.

  Per board (`lax.map`): the board's rows are gathered and turned to [H, M] (hands leading, so that
  the sweep's gathers move rows), swept, and turned back while they are in cache.
  """
  if tables.matrix is not None:
    grouped = jnp.swapaxes(opponent[source], 1, 2)  # [R, H, M]
    difference = showdown_difference(tables, grouped) * amount * mask[..., None]
    return jnp.swapaxes(difference, 1, 2)

  def one(args):
    rows, order, weaker, not_stronger, strength, board_amount, board_mask = args
    reach = jnp.take(opponent, rows, axis=0).T  # [H, M]
    difference = board_difference(tables, order, weaker, not_stronger, strength, reach)
    return (difference * board_amount * board_mask[:, None]).T

  return jax.lax.map(
    one, (source, tables.order, tables.weaker, tables.not_stronger, tables.strength, amount, mask)
  )


def board_difference(
  tables: ShowdownTables,
  order: jax.Array,
  weaker: jax.Array,
  not_stronger: jax.Array,
  strength: jax.Array,
  reach: jax.Array,
) -> jax.Array:
  """win(h) - lose(h) [H, M] on one river board (its rows of the tables' per-board arrays: `order`,
  `weaker`, `not_stronger`, `strength` [H]) for the opponent's weights `reach` [H, M].

  The per-card [K, K] signs are made here from the strengths (a few hundred kilobytes per board,
  in cache) rather than kept as an [R, 52, K, K] table (5.5 MB on the turn spot).
  """
  hands, m = reach.shape
  prefix = _prefix_rows(jnp.take(reach, order, axis=0)[None])[0]  # [H + 1, M]
  total = prefix[-1:]
  main = jnp.take(prefix, weaker, axis=0) - (total - jnp.take(prefix, not_stronger, axis=0))
  # The hands that share a card with h: per card c, the [K, K] signs times the weights of c's hands.
  padded = jnp.concatenate([reach, jnp.zeros((1, m), reach.dtype)])  # H pads
  width = tables.card_hands.shape[0] // 52
  card_strength = jnp.take(jnp.append(strength, -1), tables.card_hands, mode='clip').reshape(52, width)
  valid = card_strength >= 0  # not padding, not blocked by the board
  card_sign = jnp.where(
    valid[:, :, None] & valid[:, None, :], jnp.sign(card_strength[:, :, None] - card_strength[:, None, :]), 0
  )  # [52, K, K]: sign(strength(h) - strength(h')) within card c's hands
  per_card = jnp.take(padded, tables.card_hands, axis=0, mode='clip').reshape(52, width, m)
  shared = jnp.einsum(
    'cij,cjm->cim', card_sign.astype(reach.dtype), per_card, precision=jax.lax.Precision.HIGHEST
  )
  # (`jnp.take` along an axis: about twice as fast on XLA:CPU as indexing with an array.)
  shared = jnp.take(shared.reshape(52 * width, m), tables.card_position.reshape(-1), axis=0, mode='clip')
  return main - shared.reshape(hands, 2, m).sum(1)


def _prefix_rows(x: jax.Array) -> jax.Array:
  """Prefix sums along axis 1 with a leading zero row: [B, n, M] -> [B, n + 1, M].

  On a CPU `cumsum` is the slowest way: a scan over the rows (each step adds [B, M]) is about 2x
  faster for the hands (n ~ 1,100), and a parallel prefix (`associative_scan`) about 3x faster for
  the short per-card lists (n ~ 50), where a scan's per-step cost dominates.
  """
  zero = jnp.zeros((x.shape[0], 1) + x.shape[2:], x.dtype)
  if x.shape[1] <= 64:
    return jnp.concatenate([zero, jax.lax.associative_scan(jnp.add, x, axis=1)], axis=1)

  def step(total, row):
    total = total + row
    return total, total

  _, rows = jax.lax.scan(step, zero[:, 0], jnp.moveaxis(x, 1, 0))
  return jnp.concatenate([zero, jnp.moveaxis(rows, 0, 1)], axis=1)


def compatible_mass(hands: jax.Array, reach: jax.Array) -> jax.Array:
  """M(h): [T, H] the opponent's weight on hands that share no card with hand h, hands [H, 2]."""
  holding = jax.nn.one_hot(hands, 52, dtype=reach.dtype).sum(1)  # [H, 52]
  per_card = reach @ holding  # [T, 52]
  return reach.sum(-1, keepdims=True) - per_card[:, hands[:, 0]] - per_card[:, hands[:, 1]] + reach
