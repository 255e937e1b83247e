"""Suit isomorphism: the cards of a deal that differ only by interchangeable suits lead to the same game
up to relabelling the suits, so the solver keeps and runs one block per class and maps the others.

A permutation of the suits is a symmetry of a spot when it maps the board onto itself (each suit's
board ranks equal its image's: two-tone flops swap their two absent suits, monotone flops permute
their three, a paired board swaps the suits of its pair) and leaves both ranges and the spot's hands
unchanged. The symmetries form a group; its orbits split the cards the first deal of a blocked tree
can bring (a flop's turn cards, a turn's river cards) into classes, whose first card is solved. The
subtree under card sigma(c) is the one under c with every hand h played as sigma^-1(h): its values
at the roots for hand h are the solved card's for sigma^-1(h) (`Merged.block_mates`), and so are its
strategies (`Merged.decision_pull`). The regrets above the deal see the sum over every card, as in
the plain solve: the results are the same numbers, up to rounding.

    symmetry = isomorphism.symmetry(board, hands, ranges, deck)   # None: no symmetry
    symmetry.classes(cards)                                        # each card's class and pull

Only the first deal merges its cards: the river cards inside a flop's turn card stay apart (a turn card
of an absent suit breaks the symmetry of the river cards below it, one of a present suit keeps it;
postflop-solver merges those too).
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import numpy as np


@dataclasses.dataclass(frozen=True)
class Symmetry:
  """The suit permutations that fix a spot, and how each moves its hands."""

  permutations: tuple[tuple[int, ...], ...]  # [P] sigma[s] = the suit s goes to; the identity first
  pulls: np.ndarray  # [P, H] int32: pulls[p][h] = the position of sigma_p^-1(hand h)

  def classes(self, dealt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([n] the first card of each card's class (an index into `dealt`), [n] the permutation p with
    dealt[i] = sigma_p(dealt[first])) for the card ids `dealt`."""
    dealt = [int(card) for card in dealt]
    position = {card: i for i, card in enumerate(dealt)}
    first = np.arange(len(dealt))
    pull = np.zeros(len(dealt), np.int32)
    for i, card in enumerate(dealt):
      if first[i] != i:
        continue
      for p, sigma in enumerate(self.permutations):
        j = position.get(move(card, sigma))
        if j is not None and j > i and first[j] == j:
          first[j], pull[j] = i, p
    return first, pull


def move(card: int, sigma) -> int:
  """The card id `card` with its suit moved by the suit map `sigma` (sigma[s] = the suit s goes to)."""
  return 4 * (card // 4) + sigma[card % 4]


def symmetry(board, hands: np.ndarray, ranges: np.ndarray, num_suits: int = 4) -> Symmetry | None:
  """The spot's symmetries (`Symmetry`), or None where the identity is the only one: `board` card ids,
  `hands` [H, 2] the spot's hands, `ranges` [2, H] their weights, `num_suits` the deck's (its suits
  are the first ones)."""
  board = {int(card) for card in board}
  hands = np.asarray(hands)
  position = {tuple(sorted(map(int, pair))): h for h, pair in enumerate(hands)}
  ranges = np.asarray(ranges)
  permutations, pulls = [], []
  for order in itertools.permutations(range(num_suits)):
    sigma = tuple(order) + tuple(range(num_suits, 4))
    if {move(card, sigma) for card in board} != board:
      continue
    inverse = tuple(int(s) for s in np.argsort(sigma))
    pull = [position.get(tuple(sorted(move(int(card), inverse) for card in pair))) for pair in hands]
    if any(p is None for p in pull) or not np.array_equal(ranges[:, pull], ranges):
      continue
    permutations.append(sigma)
    pulls.append(pull)
  if len(permutations) < 2:
    return None
  return Symmetry(tuple(permutations), np.asarray(pulls, np.int32))


@dataclasses.dataclass(frozen=True)
class Merged:
  """A blocked tree's merged cards (`blocked.Blocks.merged`): what the solver needs to stand each
  solved block in for its class."""

  pulls: jax.Array  # [P, H] int32: `Symmetry.pulls`
  decision_pull: jax.Array  # [D] int32: the permutation that maps each whole-tree decision row's
  # hands to its solved block's (0 above the deal and on the solved cards)
  block_mates: jax.Array  # [B, M, H] int32: per solved block, the pulls of the other cards of its class
  mate_weight: jax.Array  # [B, M]: 1 for a card of the class, 0 for padding
  cards: int  # the deal's cards (solved and mapped)


jax.tree_util.register_dataclass(
  Merged,
  data_fields=['pulls', 'decision_pull', 'block_mates', 'mate_weight'],
  meta_fields=['cards'],
)


def mates(symmetry: Symmetry, first: np.ndarray, pull: np.ndarray, kept: list[int], padding: int):
  """([B, M, H] int32, [B, M] weights) of `Merged` for the solved blocks `kept` (indices into the
  deal's cards) and `padding` blocks after them."""
  members = [[symmetry.pulls[pull[j]] for j in np.flatnonzero(first == i) if j != i] for i in kept]
  width = max(1, max(map(len, members)))
  hands = symmetry.pulls.shape[1]
  table = np.tile(np.arange(hands, dtype=np.int32), (len(kept) + padding, width, 1))
  weight = np.zeros((len(kept) + padding, width))
  for b, rows in enumerate(members):
    for m, row in enumerate(rows):
      table[b, m], weight[b, m] = row, 1.0
  return table, weight
