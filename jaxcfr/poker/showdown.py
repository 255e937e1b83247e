"""Fold and showdown values of every hand against a weighted opposing range, with card removal.

Array code, O(H) per terminal after one sort per river board (Johanson et al., AAMAS 2012, the
method postflop solvers use); never a loop over hand pairs.

For a hand h = (c1, c2) and the opponent's weights r over hands:
- compatible mass M(h) = S - B[c1] - B[c2] + r[h], where S is the total weight and B[c] the weight
  of the hands holding card c (the hand h itself holds both cards and is subtracted twice);
- at a showdown, win(h) - lose(h) = (W(h) - W_c1(h) - W_c2(h)) - (L(h) - L_c1(h) - L_c2(h)), with W
  the weight of strictly weaker hands, L of strictly stronger ones, and W_c, L_c the same among the
  hands that hold card c. Sorting the hands by strength once per board makes W and L prefix sums;
  sorting each card's hands once per board makes W_c and L_c prefix sums of those short lists.

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
  card_hands: jax.Array  # [R, 52, K] int32: the hands that hold each card, weakest first; H pads
  card_weaker: jax.Array  # [R, H, 2] int32: flat position (c * (K + 1) + count) of the weaker count per card
  card_not_stronger: jax.Array  # [R, H, 2] int32: the same for the not-stronger count
  card_end: jax.Array  # [R, H, 2] int32: flat position of each of the hand's cards' totals
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
    'card_weaker',
    'card_not_stronger',
    'card_end',
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
  # The hands that hold each card (the same on every board), then sorted by strength per board.
  holders = [np.flatnonzero((hands == c).any(axis=1)) for c in range(52)]
  width = max(1, max(len(h) for h in holders))
  card_hands = np.full((52, width), num_hands, np.int32)
  for c, h in enumerate(holders):
    card_hands[c, : len(h)] = h
  padded = np.concatenate([strength, np.full((len(boards), 1), np.iinfo(np.int32).max, np.int32)], axis=1)
  card_strength = padded[:, card_hands]  # [R, 52, K]
  card_order = np.argsort(card_strength, axis=2, kind='stable')
  card_hands = np.take_along_axis(np.broadcast_to(card_hands, card_strength.shape), card_order, axis=2)
  card_strength = np.take_along_axis(card_strength, card_order, axis=2)
  card_weaker = np.zeros((len(boards), num_hands, 2), np.int32)
  card_not_stronger = np.zeros((len(boards), num_hands, 2), np.int32)
  for j in range(2):
    cards = hands[:, j]  # [H]
    rows = card_strength[:, cards, :]  # [R, H, K]
    mine = strength[:, :, None]
    card_weaker[:, :, j] = cards * (width + 1) + (rows < mine).sum(-1)
    card_not_stronger[:, :, j] = cards * (width + 1) + (rows <= mine).sum(-1)
  card_end = np.broadcast_to(hands * (width + 1) + width, card_weaker.shape).astype(np.int32)
  return ShowdownTables(
    jnp.asarray(order),
    jnp.asarray(weaker, jnp.int32),
    jnp.asarray(not_stronger, jnp.int32),
    jnp.asarray(card_hands.astype(np.int32)),
    jnp.asarray(card_weaker),
    jnp.asarray(card_not_stronger),
    jnp.asarray(card_end),
    matrix,
  )


def showdown_difference(tables: ShowdownTables, reach: jax.Array) -> jax.Array:
  """win(h) - lose(h): [R, H, M] the opponent's compatible weight that hand h beats minus the weight
  that beats it, for the opponent's weights `reach` [R, H, M] at M showdowns on each river board.

  Hands lead and showdowns trail, so every gather moves rows of M contiguous numbers. Where the
  tables hold the sign matrix, one batched matrix product instead (exact: products with -1, 0, 1).
  """
  if tables.matrix is not None:
    return jnp.einsum(
      'rhk,rkm->rhm', tables.matrix.astype(reach.dtype), reach, precision=jax.lax.Precision.HIGHEST
    )
  boards, hands, m = reach.shape
  take = lambda x, index: jnp.take_along_axis(x, index[..., None], axis=1)
  prefix = _prefix_rows(take(reach, tables.order))  # [R, H + 1, M]
  total = prefix[:, -1:]
  weaker = take(prefix, tables.weaker)
  stronger = total - take(prefix, tables.not_stronger)
  padded = jnp.concatenate([reach, jnp.zeros((boards, 1, m), reach.dtype)], axis=1)  # H pads
  width = tables.card_hands.shape[-1]
  per_card = take(padded, tables.card_hands.reshape(boards, -1)).reshape(boards, 52, width, m)
  per_card = _prefix_rows(per_card.reshape(boards * 52, width, m)).reshape(boards, 52 * (width + 1), m)
  pair = lambda index: take(per_card, index.reshape(boards, -1)).reshape(boards, hands, 2, m).sum(2)
  weaker_card = pair(tables.card_weaker)
  stronger_card = pair(tables.card_end) - pair(tables.card_not_stronger)
  return (weaker - weaker_card) - (stronger - stronger_card)


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
