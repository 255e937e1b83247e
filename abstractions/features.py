"""Hand-strength features: equity against a uniformly random opponent hand,
equity histograms over the next street's cards, expected hand strength.

Glossary: B boards, H = 1,326 hole-card pairs (`HOLES`), S runout samples.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from abstractions.evaluator import hand_rank
from abstractions.indexing import HOLES

# For each card the 51 hole pairs that hold it.
_PAIRS_WITH = np.stack([np.flatnonzero((HOLES == c).any(1)) for c in range(52)]).astype(np.int32)  # [52, 51]
_PAIR_INDEX = np.full((52, 52), -1, np.int32)
_PAIR_INDEX[HOLES[:, 0], HOLES[:, 1]] = np.arange(len(HOLES))
_PAIR_INDEX[HOLES[:, 1], HOLES[:, 0]] = np.arange(len(HOLES))


def hole_index(hole: jax.Array) -> jax.Array:
  """Position int32 [...] in `HOLES` of hole cards [..., 2] (either order)."""
  hole = jnp.asarray(hole)
  return jnp.asarray(_PAIR_INDEX)[hole[..., 0], hole[..., 1]]


def _count_below(x: jax.Array) -> tuple[jax.Array, jax.Array]:
  """For each entry of rows x [..., n] (values in 0..8191, n <= 1326): how many
  entries of its row are smaller, and how many equal (itself included).

  Two single-key sorts of packed uint32 keys (several-operand sorts are far slower
  on CPU): by (value, position), tie groups found with running extrema; then back
  by position carrying (below, tied).
  """
  n = x.shape[-1]
  axis = x.ndim - 1
  position = jnp.broadcast_to(jnp.arange(n, dtype=jnp.uint32), x.shape)
  packed = jnp.sort((x.astype(jnp.uint32) << 11) | position, axis=-1)
  value, order = packed >> 11, packed & 0x7FF
  new = jnp.concatenate([jnp.ones_like(value[..., :1], bool), value[..., 1:] != value[..., :-1]], axis=-1)
  first = jax.lax.cummax(jnp.where(new, position, 0), axis=axis)  # start of each tie group
  ends = jnp.concatenate([new[..., 1:], jnp.ones_like(new[..., :1])], axis=-1)
  end = jnp.flip(jax.lax.cummin(jnp.flip(jnp.where(ends, position + 1, n), -1), axis=axis), -1)
  payload = first * (n + 1) + (end - first)  # < 2^21
  back = jnp.sort((order << 21) | payload, axis=-1) & 0x1FFFFF
  return (back // (n + 1)).astype(jnp.int32), (back % (n + 1)).astype(jnp.int32)


# Where each pair sits in the rows of `_PAIRS_WITH` of its two cards (flat [52 * 51] positions).
_ROW_POSITION = np.zeros((len(HOLES), 2), np.int32)
for _card in range(52):
  for _position, _pair in enumerate(_PAIRS_WITH[_card]):
    _ROW_POSITION[_pair, int(HOLES[_pair, 1] == _card)] = 51 * _card + _position


def board_equities(boards: jax.Array) -> tuple[jax.Array, jax.Array]:
  """River equity of every hole pair on each board, against one uniformly random opponent.

  boards: int [B, 5]. Returns (equity float32 [B, H], valid bool [B, H]); a pair is
  valid when it shares no card with the board, and its equity is exact: wins plus
  half the ties, over the 990 opponent pairs that share no card with board or hole.
  The counts come from sorts of all pairs with card-removal corrections, not from
  pairwise comparison: beaten(h) = below(v_h) - below_with(a, v_h) - below_with(b, v_h)
  for h = {a, b}, where below_with(c, .) counts the 51 pairs holding card c.
  """
  boards = jnp.asarray(boards).astype(jnp.int32)
  num_boards = boards.shape[0]
  holes = jnp.asarray(HOLES)
  cards = jnp.concatenate(
    [
      jnp.broadcast_to(holes, (num_boards, *holes.shape)),
      jnp.broadcast_to(boards[:, None], (num_boards, len(HOLES), 5)),
    ],
    axis=-1,
  )  # [B, H, 7]
  valid = ~(holes[None, :, :, None] == boards[:, None, None, :]).any(axis=(-1, -2))  # [B, H]
  value = jnp.where(valid, hand_rank(cards), 8191)  # [B, H]; invalid pairs beat and tie nothing
  below, equal = _count_below(value)  # [B, H]
  row_below, row_equal = _count_below(value[:, jnp.asarray(_PAIRS_WITH)])  # [B, 52, 51]
  flat = lambda x: x.reshape(num_boards, -1)[:, jnp.asarray(_ROW_POSITION)].sum(-1)  # [B, H]
  beaten = below - flat(row_below)
  tied = equal - flat(row_equal) + 1  # the pair itself holds both cards: removed twice
  equity = (beaten + 0.5 * tied) / 990.0
  return jnp.where(valid, equity, 0.0).astype(jnp.float32), valid


def equity(hole: jax.Array, board: jax.Array) -> jax.Array:
  """Exact river equity float32 [...] of hole cards [..., 2] on a board [..., 5] against
  one uniformly random opponent pair (the 990 sharing no card): wins plus half the ties.

  Evaluates all opponents directly (990 hand evaluations per hand); for every pair on
  many boards at once `board_equities` is faster.
  """
  hole, board = jnp.asarray(hole).astype(jnp.int32), jnp.asarray(board).astype(jnp.int32)
  ours = hand_rank(jnp.concatenate([hole, board], axis=-1))  # [...]
  opponents = jnp.asarray(HOLES)  # [H, 2]
  shape = (*board.shape[:-1], len(HOLES))
  theirs = hand_rank(
    jnp.concatenate(
      [jnp.broadcast_to(opponents, (*shape, 2)), jnp.broadcast_to(board[..., None, :], (*shape, 5))], -1
    )
  )  # [..., H]
  used = jnp.concatenate([hole, board], axis=-1)[..., None, None, :]  # [..., 1, 1, 7]
  free = ~(opponents[..., None] == used).any(axis=(-1, -2))  # [..., H]
  score = jnp.where(theirs < ours[..., None], 1.0, jnp.where(theirs == ours[..., None], 0.5, 0.0))
  return (jnp.sum(jnp.where(free, score, 0.0), axis=-1) / jnp.sum(free, axis=-1)).astype(jnp.float32)
