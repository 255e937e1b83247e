"""Cards, decks, boards and the hole-card pairs a board leaves.

Card ids are `4 * rank + suit`, rank 0 = deuce ... 12 = ace, suits 'cdhs' = 0..3 (as `abstractions`,
phevaluator, ACPC and OpenSpiel's universal_poker). Hole-card pairs are positions in
`abstractions.HOLES` (`[1326, 2]`, `itertools.combinations(range(52), 2)`, low card first), the one
canonical order; arrays over a board's hands keep that order with the blocked pairs left out.

Host-side NumPy: this is input parsing, done once per spot.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

from abstractions.indexing import HOLES

RANKS = '23456789TJQKA'
SUITS = 'cdhs'
STREETS = {3: 'flop', 4: 'turn', 5: 'river'}  # board size -> street
_CARD_FORMAT = f"rank {RANKS} then suit {SUITS}, e.g. 'Td'"


class PokerInputError(ValueError):
  """Bad cards, boards or ranges given by a user; the message is one line naming the problem."""


def _is_int(value) -> bool:
  return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Deck:
  """The deck: the lowest `num_ranks` ranks (deuce upward) in the first `num_suits` suits, as
  ACPC / OpenSpiel universal_poker short decks (`numRanks`, `numSuits`)."""

  num_ranks: int = 13
  num_suits: int = 4

  def __post_init__(self):
    if not _is_int(self.num_ranks) or not 1 <= self.num_ranks <= 13:
      raise ValueError(f'Deck: num_ranks must be an integer in 1..13, got {self.num_ranks!r}')
    if not _is_int(self.num_suits) or not 1 <= self.num_suits <= 4:
      raise ValueError(f'Deck: num_suits must be an integer in 1..4, got {self.num_suits!r}')

  @property
  def cards(self) -> np.ndarray:
    """The card ids in the deck, int32 `[size]`, ascending."""
    ranks, suits = np.meshgrid(np.arange(self.num_ranks), np.arange(self.num_suits), indexing='ij')
    return (4 * ranks + suits).reshape(-1).astype(np.int32)

  @property
  def size(self) -> int:
    return self.num_ranks * self.num_suits

  def __contains__(self, card) -> bool:
    return _is_int(card) and 0 <= card < 52 and card // 4 < self.num_ranks and card % 4 < self.num_suits

  def __str__(self) -> str:
    ranks = f'{RANKS[0]}..{RANKS[self.num_ranks - 1]}'
    suits = '' if self.num_suits == 4 else f', suits {SUITS[: self.num_suits]}'
    return f'the deck of {self.num_ranks} ranks x {self.num_suits} suits ({ranks}{suits})'


FULL_DECK = Deck()


def parse_card(text: str) -> int:
  """The id of a card written rank then suit, e.g. 'Td' -> 33 (either case for both letters)."""
  token = text.strip() if isinstance(text, str) else text
  if not isinstance(token, str) or len(token) != 2:
    raise PokerInputError(f'card {text!r} is not a card ({_CARD_FORMAT})')
  rank, suit = RANKS.find(token[0].upper()), SUITS.find(token[1].lower())
  if rank < 0 or suit < 0:
    raise PokerInputError(f'card {text!r} is not a card ({_CARD_FORMAT})')
  return 4 * rank + suit


def card_text(card: int) -> str:
  """The text of a card id, e.g. 33 -> 'Td'."""
  if not _is_int(card) or not 0 <= card < 52:
    raise PokerInputError(f'card id {card!r} is not in 0..51')
  return RANKS[card // 4] + SUITS[card % 4]


def _parse_cards(text: str, what: str) -> tuple[int, ...]:
  """Cards written back to back, spaces and commas allowed between them; errors name `what`."""
  if not isinstance(text, str):
    raise PokerInputError(f'{what} {text!r} is not text')
  letters = ''.join(text.replace(',', ' ').split())
  cards = []
  for start in range(0, len(letters), 2):
    try:
      card = parse_card(letters[start : start + 2])
    except PokerInputError as error:
      raise PokerInputError(f'{what} {text!r}: {error}') from None
    if card in cards:
      raise PokerInputError(f'{what} {text!r}: card {card_text(card)} appears twice')
    cards.append(card)
  return tuple(cards)


def parse_cards(text: str) -> tuple[int, ...]:
  """Card ids of text like 'Td9d6hQc3s', 'Td 9d 6h' or 'Td,9d,6h', in the order written; a card
  given twice is an error."""
  return _parse_cards(text, 'cards')


def parse_board(text: str, deck: Deck = FULL_DECK, street: str | None = None) -> tuple[int, ...]:
  """Card ids of a flop, turn or river board (3, 4 or 5 cards of `deck`, as `parse_cards` reads
  them); with `street` ('flop', 'turn' or 'river') the board must have that street's count."""
  if street is not None and street not in STREETS.values():
    raise ValueError(f"street must be 'flop', 'turn' or 'river', got {street!r}")
  cards = _parse_cards(text, 'board')
  for card in cards:
    if card not in deck:
      raise PokerInputError(f'board {text!r}: card {card_text(card)} is not in {deck}')
  if len(cards) not in STREETS:
    raise PokerInputError(
      f'board {text!r}: a board has 3 (flop), 4 (turn) or 5 (river) cards, got {len(cards)}'
    )
  if street is not None and STREETS[len(cards)] != street:
    count = {name: size for size, name in STREETS.items()}[street]
    raise PokerInputError(f'board {text!r}: a {street} board has {count} cards, got {len(cards)}')
  return cards


def hand_indices(deck: Deck, board: Sequence[int] = ()) -> np.ndarray:
  """Positions int32 `[H]` in `HOLES` of the pairs of `deck` cards that `board` (card ids, e.g. from
  `parse_board`; empty preflop) does not block, ascending. With the full deck H = 1,326 preflop,
  1,176 on the flop, 1,128 on the turn, 1,081 on the river."""
  board = np.asarray(board, np.int64).reshape(-1)
  if np.any((board < 0) | (board >= 52)):
    raise ValueError(f'board card ids must be in 0..51, got {board.tolist()}')
  return _hand_indices(deck, tuple(board.tolist()))


@functools.lru_cache(maxsize=16)
def _hand_indices(deck: Deck, board: tuple[int, ...]) -> np.ndarray:
  """`hand_indices`, kept for the last few boards (building a spot asks for its board's several
  times), read-only."""
  usable = np.zeros(52, bool)
  usable[deck.cards] = True
  usable[list(board)] = False
  indices = np.flatnonzero(usable[HOLES[:, 0]] & usable[HOLES[:, 1]]).astype(np.int32)
  indices.flags.writeable = False
  return indices


def hands(deck: Deck, board: Sequence[int] = ()) -> np.ndarray:
  """The hole-card pairs int32 `[H, 2]` (low card first) at `hand_indices(deck, board)`."""
  return HOLES[hand_indices(deck, board)]


def hand_text(pair: Sequence[int]) -> str:
  """The text of two hole cards, higher card id first, e.g. 'AsKd', '7h7c'."""
  low, high = sorted(int(card) for card in pair)
  return card_text(high) + card_text(low)
