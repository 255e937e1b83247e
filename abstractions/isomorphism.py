"""Suit isomorphism on JAX arrays: `abstractions.indexing`'s canonical index (where the algorithm is
described), the same code run on JAX arrays, so that it works under jit and vmap.

Class counts: preflop 169, flop 1,286,792, turn 13,960,050, river 123,156,254.
"""

from __future__ import annotations

import functools

import jax

from abstractions import indexing
from abstractions.arrays import ArrayModule
from abstractions.evaluator import JAX
from abstractions.indexing import ROUNDS


class HandIndexer(indexing.HandIndexer):
  """Perfect index of suit-isomorphism classes for cards dealt in `rounds` (`indexing.HandIndexer`),
  on JAX arrays by default: `index` and `weight` are pure JAX.

  rounds: cards per round, e.g. (2, 5) for hole cards and a river board.
  """

  def index(self, cards: jax.Array, xp: ArrayModule = JAX) -> jax.Array:
    """Class index int32 [...] in [0, size) of hands [..., num_cards] (cards in round order)."""
    return super().index(cards, xp)

  def weight(self, cards: jax.Array, xp: ArrayModule = JAX) -> jax.Array:
    """The number of hands in the class of each hand [..., num_cards]: 24 / |suit stabiliser|, int32 [...]."""
    return super().weight(cards, xp)


@functools.cache
def hand_indexer(street: str) -> HandIndexer:
  """The indexer of (hole, board) classes on a street: 'preflop', 'flop', 'turn' or 'river'."""
  indexing.check_street(street)
  return HandIndexer(ROUNDS[street])


def canonical_index(cards: jax.Array, street: str) -> jax.Array:
  """Class index int32 [...] of deals [..., 2 + board]: hole cards, then the board (any order)."""
  return hand_indexer(street).index(cards)


def preflop_class(hole: jax.Array) -> jax.Array:
  """The 169 lossless preflop classes of hole cards [..., 2], int32 [...] in 0..168 (the 13 x 13
  grid of `indexing.preflop_class`)."""
  return indexing.preflop_class(hole, JAX)
