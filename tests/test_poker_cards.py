"""Cards, boards and ranges of the poker layer, against brute-force enumerations by rank and suit."""

import itertools

import numpy as np
import pytest

import abstractions
from jaxcfr.poker import cards
from jaxcfr.poker.cards import Deck, PokerInputError

RANKS = '23456789TJQKA'


def combos(name: str) -> set[frozenset[int]]:
  """The combos of a class name ('AA', 'AKs', 'AKo', 'AK'), enumerated by suits."""
  high, low, kind = RANKS.index(name[0]), RANKS.index(name[1]), name[2:]
  found = set()
  for s1, s2 in itertools.product(range(4), repeat=2):
    first, second = 4 * high + s1, 4 * low + s2
    if first == second or (kind == 's' and s1 != s2) or (kind == 'o' and s1 == s2):
      continue
    found.add(frozenset((first, second)))
  return found


def chosen(weights: np.ndarray) -> dict[frozenset[int], float]:
  """Combo -> weight of the combos with positive weight."""
  return {frozenset(map(int, abstractions.HOLES[h])): float(weights[h]) for h in np.flatnonzero(weights)}


def expected(*items: tuple[list[str], float]) -> dict[frozenset[int], float]:
  return {combo: weight for names, weight in items for name in names for combo in combos(name)}


# Cards and boards.


def test_card_round_trip_and_spellings():
  for card in range(52):
    assert cards.parse_card(cards.card_text(card)) == card
  assert cards.parse_card('Td') == 4 * 8 + 1
  assert cards.parse_card('tD') == cards.parse_card('TD') == 33
  assert cards.parse_card('2c') == 0 and cards.parse_card('As') == 51
  assert cards.parse_cards('Td9d6hQc3s') == cards.parse_cards('Td 9d, 6h,Qc 3s') == (33, 29, 18, 40, 7)


def test_deck():
  assert Deck().size == 52 and np.array_equal(Deck().cards, np.arange(52))
  short = Deck(6, 4)
  assert short.size == 24 and short.cards.dtype == np.int32
  assert np.array_equal(short.cards, np.arange(24))  # deuce through seven
  assert np.array_equal(Deck(3, 2).cards, [0, 1, 4, 5, 8, 9])
  assert 51 in Deck() and 51 not in short and 23 in short
  for bad in [(0, 4), (14, 4), (6, 0), (6, 5), (6.0, 4)]:
    with pytest.raises(ValueError, match='num_'):
      Deck(*bad)


@pytest.mark.parametrize(
  'text, deck, street, message',
  [
    ('Td9dTd', Deck(), None, "board 'Td9dTd': card Td appears twice"),
    ('Td9d', Deck(), None, "board 'Td9d': a board has 3 (flop), 4 (turn) or 5 (river) cards, got 2"),
    ('Td9d6hQc3s2c', Deck(), None, 'got 6'),
    ('XxTd9d', Deck(), None, "card 'Xx' is not a card (rank 23456789TJQKA then suit cdhs, e.g. 'Td')"),
    ('Td9d6', Deck(), None, "card '6' is not a card"),
    ('As7d6h', Deck(6, 4), None, 'card As is not in the deck of 6 ranks x 4 suits (2..7)'),
    ('7s7d6h', Deck(6, 2), None, 'card 7s is not in the deck of 6 ranks x 2 suits (2..7, suits cd)'),
    ('Td9d6h', Deck(), 'turn', "board 'Td9d6h': a turn board has 4 cards, got 3"),
  ],
)
def test_board_errors(text, deck, street, message):
  with pytest.raises(PokerInputError) as error:
    cards.parse_board(text, deck, street)
  assert message in str(error.value) and '\n' not in str(error.value)


def test_boards():
  assert cards.parse_board('Td9d6h', street='flop') == (33, 29, 18)
  assert cards.parse_board('7d 6h 2c 3s', Deck(6, 4), 'turn') == (21, 18, 0, 7)
  with pytest.raises(ValueError, match='street'):
    cards.parse_board('Td9d6h', street='preflop')


@pytest.mark.parametrize(
  'board, count', [('', 1326), ('Td9d6h', 1176), ('Td9d6hQc', 1128), ('Td9d6hQc3s', 1081)]
)
def test_hands_a_board_leaves(board, count):
  board = cards.parse_cards(board)
  pairs = cards.hands(Deck(), board)
  indices = cards.hand_indices(Deck(), board)
  assert pairs.shape == (count, 2) and indices.shape == (count,) and indices.dtype == np.int32
  assert np.all(np.diff(indices) > 0) and np.array_equal(pairs, abstractions.HOLES[indices])
  rest = sorted(set(range(52)) - set(board))
  assert [tuple(pair) for pair in pairs.tolist()] == list(itertools.combinations(rest, 2))


def test_short_deck_hands():
  deck = Deck(6, 4)
  assert len(cards.hands(deck)) == 276
  board = cards.parse_board('7d6h2c', deck)
  pairs = cards.hands(deck, board)
  assert len(pairs) == 21 * 20 // 2 and set(pairs.ravel()) <= set(deck.cards) - set(board)


def test_hand_text():
  assert cards.hand_text((cards.parse_card('Kd'), cards.parse_card('As'))) == 'AsKd'
  assert cards.hand_text(cards.parse_cards('7c7h')) == '7h7c'
  assert [cards.hand_text(pair) for pair in cards.hands(Deck(1, 2))] == ['2d2c']
