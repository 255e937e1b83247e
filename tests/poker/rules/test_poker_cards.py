"""Cards, boards and ranges of the poker layer, against brute-force enumerations by rank and suit."""

import itertools

import numpy as np
import pytest

import abstractions
from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.rules.cards import Deck, PokerInputError

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


# Ranges.


@pytest.mark.parametrize(
  'text, classes',
  [
    ('AA', ['AA']),
    ('AKs', ['AKs']),
    ('AKo', ['AKo']),
    ('AK', ['AK']),
    ('KAs', ['AKs']),
    ('kq', ['KQ']),
    ('22+', [r * 2 for r in RANKS]),
    ('TT+', ['TT', 'JJ', 'QQ', 'KK', 'AA']),
    ('66-22', ['66', '55', '44', '33', '22']),
    ('22-66', ['66', '55', '44', '33', '22']),
    ('A2s+', ['A' + r + 's' for r in RANKS[:-1]]),
    ('A8s+', ['A8s', 'A9s', 'ATs', 'AJs', 'AQs', 'AKs']),
    ('KTo+', ['KTo', 'KJo', 'KQo']),
    ('QT+', ['QT', 'QJ']),
    ('A5s-A2s', ['A5s', 'A4s', 'A3s', 'A2s']),
    ('A2s-A5s', ['A5s', 'A4s', 'A3s', 'A2s']),
    (' AK s , Q Q ', ['AKs', 'QQ']),
  ],
)
def test_range_items(text, classes):
  weights = ranges.parse_range(text)
  assert weights.shape == (1326,) and weights.dtype == np.float64
  assert chosen(weights) == expected((classes, 1.0))


def test_range_counts():
  count = lambda text: int(np.count_nonzero(ranges.parse_range(text)))
  assert [count(t) for t in ['AA', 'AKs', 'AKo', 'AK', '22+', 'A2s+']] == [6, 4, 12, 16, 78, 48]
  every = '22+,' + ','.join(f'{high}2+' for high in RANKS[1:])
  assert count(every) == 1326
  pairs = [r * 2 for r in RANKS]
  all_classes = pairs + [a + b + kind for a, b in itertools.combinations(RANKS[::-1], 2) for kind in 'so']
  assert chosen(ranges.parse_range(every)) == expected((all_classes, 1.0))


def test_specific_combos():
  assert chosen(ranges.parse_range('AsKd,7h7c')) == {
    frozenset(cards.parse_cards('AsKd')): 1.0,
    frozenset(cards.parse_cards('7h7c')): 1.0,
  }


def test_mixed_range_with_weights():
  weights = ranges.parse_range('66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5')
  assert chosen(weights) == expected(
    (['66', '77', '88', '99', 'TT', 'JJ', 'QQ', 'KK', 'AA'], 1.0),
    (['A8s', 'A9s', 'ATs', 'AJs', 'AQs', 'AKs', 'A5s', 'A4s'], 1.0),
    (['AJo', 'AQo', 'AKo', 'KQo'], 1.0),
    (['QTs', 'QJs'], 0.5),
  )
  assert np.count_nonzero(weights) == 54 + 32 + 48 + 8


def test_later_items_override():
  assert chosen(ranges.parse_range('AK,AKs:0.5')) == expected((['AKo'], 1.0), (['AKs'], 0.5))
  assert chosen(ranges.parse_range('AKs:0.5,AK')) == expected((['AK'], 1.0))
  aces = chosen(ranges.parse_range('AA,AsAh:0'))
  assert len(aces) == 5 and frozenset(cards.parse_cards('AsAh')) not in aces
  assert chosen(ranges.parse_range('QT+:0.25,QJo:1')) == expected((['QT', 'QJs'], 0.25), (['QJo'], 1.0))


@pytest.mark.parametrize(
  'text, message',
  [
    ('AKx', "range 'AKx': 'AKx' is not a hand (e.g. AA, AKs, AKo, AK, TT+, A5s-A2s, AsKd, AKs:0.5)"),
    ('AA,AKs:1.5', "weight 1.5 of 'AKs:1.5' is outside [0, 1]"),
    ('AKs:-0.1', "'AKs:-0.1' is outside [0, 1]"),
    ('AKs:half', "weight 'half' of 'AKs:half' is not a number"),
    ('AKs:nan', "'AKs:nan' is not a number"),
    ('AKs:', "'AKs:' is not a number"),
    ('AKs:0.5:1', "'AKs:0.5:1' is not a number"),
    ('A8s-K2s', "'A8s-K2s' joins hands with different high cards"),
    ('A5s-A2o', "'A5s-A2o' joins hands of different suitedness"),
    ('AA-KQs', "'AA-KQs' joins a pair and a non-pair"),
    ('AAs', "'AAs' is a pair, which cannot be suited"),
    ('QQo+', "'QQo+' is a pair, which cannot be offsuit"),
    ('AsAs', "'AsAs' holds card As twice"),
    ('AsXd', "'AsXd' is not a hand"),
    ('AK++', "'AK++' is not a hand"),
    ('AA,,KK', "range 'AA,,KK': an empty item"),
    ('AA,', "range 'AA,': an empty item"),
    ('', "range '' is empty"),
    ('  ', "range '  ' is empty"),
  ],
)
def test_range_errors(text, message):
  with pytest.raises(PokerInputError) as error:
    ranges.parse_range(text)
  assert message in str(error.value) and '\n' not in str(error.value)


def test_short_deck_ranges():
  deck = Deck(6, 4)
  assert not ranges.parse_range('AA', deck).any()  # no aces: nothing, and no error
  assert not ranges.parse_range('AsKd,A2s+', deck).any()
  assert chosen(ranges.parse_range('22+,AA', deck)) == expected((['22', '33', '44', '55', '66', '77'], 1.0))
  assert np.count_nonzero(ranges.parse_range('22+,' + ','.join(f'{h}2+' for h in RANKS[1:]), deck)) == 276
  board = cards.parse_board('7d6h2c', deck)
  with pytest.raises(PokerInputError, match="^OOP range is empty after the board's cards are removed$"):
    ranges.check_range(ranges.range_on_board(ranges.parse_range('AA', deck), deck, board), 'OOP')


def test_range_on_board():
  board = cards.parse_board('AsKd2c')
  weights = ranges.parse_range('AA,KK:0.5,AsAh:0.25')
  on_board = ranges.range_on_board(weights, Deck(), board)
  indices = cards.hand_indices(Deck(), board)
  assert on_board.shape == (1176,) and np.array_equal(on_board, weights[indices])
  kept = {cards.hand_text(abstractions.HOLES[h]): w for h, w in zip(indices, on_board, strict=True) if w}
  assert kept == {'AhAd': 1.0, 'AhAc': 1.0, 'AdAc': 1.0, 'KsKh': 0.5, 'KhKc': 0.5, 'KsKc': 0.5}
  assert ranges.check_range(on_board, 'IP') is on_board
  with pytest.raises(PokerInputError, match='^IP range is empty'):
    ranges.check_range(ranges.range_on_board(ranges.parse_range('AsAh'), Deck(), board), 'IP')


def test_hand_classes():
  assert len(ranges.HAND_CLASSES) == len(set(ranges.HAND_CLASSES)) == 169
  assert ranges.HAND_CLASSES[:3] == ('22', '32o', '42o') and ranges.HAND_CLASSES[-2:] == ('AKs', 'AA')
  classes = ranges.class_of_hands(abstractions.HOLES)
  assert classes.dtype == np.int32
  assert np.array_equal(classes, np.asarray(abstractions.preflop_class(abstractions.HOLES)))
  for index, name in enumerate(ranges.HAND_CLASSES):  # each name's combos are those of its class
    assert set(map(frozenset, abstractions.HOLES[classes == index].tolist())) == combos(name)
  assert ranges.hand_class(cards.parse_cards('AsKs')) == 'AKs'
  assert ranges.hand_class(cards.parse_cards('KdAs')) == 'AKo'
  assert ranges.hand_class(cards.parse_cards('ThTc')) == 'TT'
