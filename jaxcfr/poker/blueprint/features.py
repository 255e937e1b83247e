"""Features of a hold'em information set for neural policies (Deep CFR on the blueprint's abstract game).

The default layout (372 numbers, the seed documents'), from the view of the player to act:

    [0:104]    the two hole cards, one-hot (2 x 52), lower card id first
    [104:364]  the five board slots, one-hot (5 x 52), zero before they are dealt; the flop's three
               cards in increasing id order, then the turn, then the river
    [364:368]  the street, one-hot (preflop, flop, turn, river)
    [368]      pot / starting stack (both players' chips over the hand)
    [369]      own stack / starting stack (chips behind)
    [370]      opponent's stack / starting stack
    [371]      amount to call / starting stack (capped at the own stack: an all-in call for less)

The betting-history option appends `HISTORY` = 48 numbers: for each street s (4) and raise depth r
(the r-th bet or raise of the street, 0 to 3; deeper raises share depth 3), three numbers at
`372 + 12 s + 3 r`: 1 if that bet or raise was made, its size (the raise over the top bet as a fraction
of the pot after calling, as `abstractions.betting` sizes bets), and 1 if the player to act made it.
Without it two lines to the same pot look alike. It is a function of the abstract betting node
(`history_table`, one row per decision row of the tree), gathered by row.

Card ids are 4 * rank + suit of the 52-card deck (short decks use a subset). Everything is batched
jnp (jit-able, used inside the traversal): `encode` takes arrays of any leading shape.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

SIZE = 372
HISTORY = 48
RAISE_DEPTHS = 4
HOLE, BOARD, STREET, POT, OWN, OPPONENT, TO_CALL = 0, 104, 364, 368, 369, 370, 371


def size(history: bool) -> int:
  """Numbers per information set: 372, or 420 with the betting history."""
  return SIZE + (HISTORY if history else 0)


def encode(hole, board, shown, street, committed, player, stack: float, history=None) -> jnp.ndarray:
  """Features `[..., 372]` (`[..., 420]` with `history [..., 48]`).

  hole int [..., 2] (the player to act's cards), board int [..., 5] (slots at and past `shown` are
  ignored), shown int [...] (board cards visible), street int [...], committed [..., 2] (chips each
  player has put in over the hand), player int [...] (to act), stack: the starting stack."""
  hole, board, committed = (jnp.asarray(x) for x in (hole, board, committed))
  shown, street, player = (jnp.asarray(x) for x in (shown, street, player))
  lead = jnp.broadcast_shapes(
    hole.shape[:-1], board.shape[:-1], committed.shape[:-1], shown.shape, street.shape, player.shape,
    *(() if history is None else (jnp.shape(history)[:-1],)),
  )  # fmt: skip
  hole = jnp.broadcast_to(hole, (*lead, 2)).astype(jnp.int32)
  board = jnp.broadcast_to(board, (*lead, 5)).astype(jnp.int32)
  committed = jnp.broadcast_to(committed, (*lead, 2)).astype(jnp.float32)
  shown, street = jnp.broadcast_to(shown, lead), jnp.broadcast_to(street, lead)
  player = jnp.broadcast_to(player, lead).astype(jnp.int32)
  low, high = jnp.minimum(hole[..., 0], hole[..., 1]), jnp.maximum(hole[..., 0], hole[..., 1])
  flop = jnp.sort(board[..., :3], axis=-1)
  board = jnp.concatenate([flop, board[..., 3:5]], -1)
  visible = jnp.arange(5) < shown[..., None]  # [..., 5]
  cards = jnp.concatenate(
    [
      jnp.stack([low, high], -1)[..., :, None] == jnp.arange(52),  # [..., 2, 52]
      (board[..., :, None] == jnp.arange(52)) & visible[..., None],  # [..., 5, 52]
    ],
    -2,
  ).reshape(*lead, 7 * 52)
  mine = jnp.take_along_axis(committed, player[..., None], -1)[..., 0]
  theirs = jnp.take_along_axis(committed, 1 - player[..., None], -1)[..., 0]
  own, opponent = stack - mine, stack - theirs
  to_call = jnp.minimum(jnp.maximum(theirs - mine, 0), own)
  chips = jnp.stack([mine + theirs, own, opponent, to_call], -1) / stack
  parts = [cards.astype(jnp.float32), _one_hot(street, 4), chips.astype(jnp.float32)]
  if history is not None:
    parts.append(jnp.broadcast_to(jnp.asarray(history, jnp.float32), (*lead, jnp.shape(history)[-1])))
  return jnp.concatenate(parts, -1)


def _one_hot(index, n: int) -> jnp.ndarray:
  return (jnp.asarray(index)[..., None] == jnp.arange(n)).astype(jnp.float32)


def history_table(tree) -> np.ndarray:
  """float32 `[D, 48]`: the betting-history features of each decision row of a `BettingTree`, from the
  view of the row's player to act (see the module docstring). Top down over the nodes (parents come
  first), each child's row the parent's plus the action that leads to it."""
  rows = np.zeros((tree.num_nodes, RAISE_DEPTHS * 4, 2), np.float32)  # (made, size), by street x depth
  maker = np.full((tree.num_nodes, RAISE_DEPTHS * 4), -1, np.int8)
  depth = np.zeros(tree.num_nodes, np.int64)  # bets and raises on the node's street so far
  for node in range(1, tree.num_nodes):
    up, slot = tree.parent[node], tree.parent_slot[node]
    rows[node], maker[node] = rows[up], maker[up]
    row = tree.decision[up]
    state = tree.states[up]
    same_street = tree.states[node].street == state.street
    if tree.kind[row, slot] == 2:
      top = max(state.round_bet)
      after_call = state.pot + state.to_call
      cell = 4 * min(state.street, 3) + min(depth[up], RAISE_DEPTHS - 1)
      rows[node, cell] = (1.0, (tree.amount[row, slot] - top) / after_call)
      maker[node, cell] = state.to_act
      depth[node] = depth[up] + 1
    else:
      depth[node] = depth[up] if same_street else 0
  decisions = tree.decisions
  by_me = (maker[decisions] == tree.player[decisions][:, None]).astype(np.float32)
  return np.concatenate([rows[decisions], by_me[..., None]], -1).reshape(len(decisions), HISTORY)
