"""The flops of aggregated reports: the 1,755 classes against a brute-force loop over the 24 suit
permutations, textures against hand-worked boards, subsets, and flop files' bad lines."""

from __future__ import annotations

import collections
import itertools

import pytest

from jaxcfr.poker.rules import cards
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import flops


def brute_force_classes() -> dict[tuple, int]:
  """{canonical flop: the flops in its class}: each flop's smallest image under the 24 suit maps."""
  classes = collections.Counter()
  for flop in itertools.combinations(range(52), 3):
    images = [
      tuple(sorted(4 * (c >> 2) + perm[c & 3] for c in flop)) for perm in itertools.permutations(range(4))
    ]
    classes[min(images)] += 1
  return classes


def canonical(board: str) -> tuple:
  parsed = cards.parse_cards(board)
  return min(
    tuple(sorted(4 * (c >> 2) + perm[c & 3] for c in parsed)) for perm in itertools.permutations(range(4))
  )


def test_the_1755_flops_and_their_weights_are_the_brute_force_classes():
  expected = brute_force_classes()
  every = flops.all_flops()
  assert len(expected) == len(every) == 1755
  assert {canonical(f.board): f.weight for f in every} == expected
  assert sum(f.weight for f in every) == flops.NUM_FLOPS == 22_100
  strongest = every[0]
  assert strongest.board == 'AhAdAc' and strongest.weight == 4 and strongest.pairing == 'trips'


@pytest.mark.parametrize(
  ('board', 'texture'),
  [
    ('Td9d8c', ('T', 'unpaired', 'two-tone', 'three straights')),  # 6-T, 7-J, 8-Q
    ('Ah5d2c', ('A', 'unpaired', 'rainbow', 'one straight')),  # the wheel only
    ('AhKdQc', ('A', 'unpaired', 'rainbow', 'one straight')),  # broadway only
    ('9s7s6s', ('9', 'unpaired', 'monotone', 'two straights')),  # 5-9 and 6-T (7-J lacks the 6)
    ('Kh7d2c', ('K', 'unpaired', 'rainbow', 'no straight')),
    ('8h8d3h', ('8', 'paired', 'two-tone', 'no straight')),
    ('QcQdQh', ('Q', 'trips', 'rainbow', 'no straight')),
  ],
)
def test_textures(board, texture):
  got = flops.texture(cards.parse_cards(board))
  assert got == dict(zip(('high', 'pairing', 'suits', 'connectedness'), texture, strict=True))


@pytest.mark.parametrize('size', [1, 3, 5, 25, 49, 184, 1000, 1755])
def test_a_subset_is_distinct_flops_weighing_all_22100(size):
  chosen = flops.subset(size)
  assert len(chosen) == len({f.board for f in chosen}) == size
  assert sum(f.weight for f in chosen) == pytest.approx(22_100)
  classes = {f.board for f in flops.all_flops()}
  assert {f.board for f in chosen} <= classes
  if size >= len(flops.STRATA):  # every stratum stands for its own weight
    every = collections.Counter()
    for f in flops.all_flops():
      every[f.stratum] += f.weight
    mine = collections.Counter()
    for f in chosen:
      mine[f.stratum] += f.weight
    assert mine == pytest.approx(every)


def test_a_25_flop_subset_spreads_over_high_cards_and_textures():
  chosen = flops.subset(25)
  assert len({f.high for f in chosen}) >= 8
  assert {f.stratum for f in chosen} == set(flops.STRATA)
  assert flops.flop_set('25') == chosen and len(flops.flop_set('all')) == 1755


def test_flop_files_and_bad_sets(tmp_path):
  good = tmp_path / 'flops.txt'
  good.write_text('# a study\nQs8h3c\n\nTd 7d 2d 4  # monotone, weight 4\n')
  assert [f.board for f in flops.flop_set(str(good))] == ['Qs8h3c', 'Td7d2d']
  assert [f.weight for f in flops.flop_set(str(good))] == [1.0, 4.0]
  cases = {
    'Qs8h3c\nQs8h\n': 'line 2',
    'Qs8h3c\n3c8hQs\n': 'line 2: 3c8hQs is line 1 again',
    'Qs8h3c\nQsQs3c\n': 'line 2',
    '# nothing\n': 'no flops',
    'Qs8h3c -2\n': "line 1: the weight '-2' is not a positive number",
    'Qs8h3c 0\n': "line 1: the weight '0' is not a positive number",
  }
  for text, message in cases.items():
    path = tmp_path / 'bad.txt'
    path.write_text(text)
    with pytest.raises(PokerInputError, match=message):
      flops.flop_set(str(path))
  with pytest.raises(PokerInputError, match="not 'all', a count, or a readable file"):
    flops.flop_set(str(tmp_path / 'missing.txt'))
  for size in ('0', '1756'):
    with pytest.raises(PokerInputError, match='a subset has 1 to 1,755 flops'):
      flops.flop_set(size)
