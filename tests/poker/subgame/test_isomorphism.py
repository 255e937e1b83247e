"""Suit isomorphism (`subgame.isomorphism`): a blocked tree that keeps one block per class of the first
deal's cards runs the plain solve's numbers.

The plain solve is symmetric in exact arithmetic only: regret matching turns rounding noise at zero
regrets into different strategies of mirrored hands after a few iterations, and the difference then
spreads. So the exactness check starts both solves from one symmetric state (a plain solve's state
averaged over the spot's suit permutations) and compares one iteration's regrets and average weights
on every row and hand (the merged cards' rows laid out from their solved card's), the root values and
the exact evaluation; then a whole solve: its average strategy, laid out, evaluated on the plain tree,
gives the isomorphic solver's own check, and its EVs agree with the plain solve's within the two
exploitabilities. A deliberately wrong suit map fails the first check.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import isomorphism, locking, solving
from jaxcfr.poker.subgame import solver as solver_module
from jaxcfr.poker.subgame.tree import TreeConfig, street_sizes

HOLES = ranges.HOLES


def symmetric_ranges(seed: int) -> list[np.ndarray]:
  """Two [1326] ranges that weigh a hand by its ranks and suitedness alone (every suit permutation
  leaves them as they are), a third of the classes at 0."""
  rng = np.random.default_rng(seed)
  rank, suit = HOLES // 4, HOLES % 4
  key = 13 * rank[:, 0] + rank[:, 1] + 169 * (suit[:, 0] == suit[:, 1])
  out = []
  for _ in range(2):
    value = rng.random(338)
    out.append(np.where(value > 0.33, value, 0.0)[key])
  return out


def spot(board: str, num_ranks: int, bets: str, seed: int = 0, isomorphism_on: bool = True, weights=None):
  deck = cards.Deck(num_ranks, 4)
  parsed = cards.parse_board(board, deck)
  sizes = street_sizes(bets, 'a')
  config = TreeConfig({3: 1, 4: 2}[len(parsed)], 100, 200, (sizes,) * 3, deck_size=deck.size)
  weights = symmetric_ranges(seed) if weights is None else weights
  return subgame.build_subgame(
    config, parsed, weights, deck, jnp.float64, blocks=True, range_hands=True, isomorphism=isomorphism_on
  )


def mirrored_rows(lines: list[tuple[str, ...]], sigma) -> np.ndarray:
  """[D] for each decision row (its line in `lines`) the row of its line with the dealt cards moved by
  the suit map sigma."""
  row_of = {line: row for row, line in enumerate(lines)}

  def moved(label: str) -> str:
    if not label.startswith('deal '):
      return label
    card = cards.parse_card(label.split()[1])
    return f'deal {cards.card_text(4 * (card // 4) + sigma[card % 4])}'

  return np.array([row_of[tuple(map(moved, line))] for line in lines])


def symmetrized(game: subgame.Subgame, symmetry, rows: list[np.ndarray]) -> list[np.ndarray]:
  """Each [D, A, H] array of per-action rows averaged over the spot's suit permutations (each
  permutation's row map found once for all the arrays)."""
  lines = [tuple(solving.named_line(game, node)) for node in game.tree.info.decisions]
  totals = [np.zeros_like(x) for x in rows]
  for sigma, pull in zip(symmetry.permutations, symmetry.pulls, strict=True):
    mirror = mirrored_rows(lines, tuple(int(s) for s in np.argsort(sigma)))
    for total, x in zip(totals, rows, strict=True):
      total += x[mirror][:, :, pull]
  return [total / len(symmetry.permutations) for total in totals]


_to_rows = jax.jit(solver_module.state_to_rows)
_to_state = jax.jit(solver_module.rows_to_state)
_evaluate = jax.jit(solver_module.evaluate_average)


def one_iteration_apart(plain: subgame.Subgame, merged: subgame.Subgame) -> dict:
  """The largest differences between one iteration of each from the same symmetric state."""
  config, solver = solver_module.build('dcfr', {})
  step = jax.jit(lambda s, g: solver_module.step(config, s, g, None))  # one program per game: both loops'
  state = solver.init(plain)
  for _ in range(4):
    state = step(state, plain)[0]
  symmetry = isomorphism.symmetry(plain.spot.board, plain.spot.hands, plain.spot.ranges)
  start = symmetrized(
    plain,
    symmetry,
    [np.asarray(_to_rows(plain, x)) for x in (state.cumulative_regret, state.cumulative_policy)],
  )
  out = {}
  for name, game in (('plain', plain), ('merged', merged)):
    regrets, weights = (tuple(_to_state(game, jnp.asarray(x))) for x in start)
    begin = solver.init(game)._replace(
      iteration=state.iteration, cumulative_regret=regrets, cumulative_policy=weights
    )
    after, roots = step(begin, game)
    rows = [np.asarray(_to_rows(game, x)) for x in (after.cumulative_regret, after.cumulative_policy)]
    out[name] = (
      *rows,
      np.asarray(roots),
      np.asarray(_evaluate(after.cumulative_policy, game)[1]),
    )
  legal = np.asarray(plain.tree.legal)
  apart = [
    np.abs(np.where(legal, a - b, 0) if a.ndim == 3 else a - b).max()
    for a, b in zip(*out.values(), strict=True)
  ]
  scale = [np.abs(x).max() for x in out['plain']]
  return dict(
    zip(('regrets', 'weights', 'roots', 'values'), np.array(apart) / np.maximum(scale, 1e-300), strict=True)
  )


# The default suite keeps the short-deck monotone flop (six suit permutations, the turn cards' river
# blocks remapped: every piece the turn's merging has, and more); the turn, the two-tone and paired
# flops and the full deck's run the same code behind -m slow.
CASES = [
  pytest.param('7d6d2h5h', 7, '50%,a', 24, 17, marks=pytest.mark.slow),  # turn, short deck: two absent suits
  ('7d5d2d', 7, 'a', 25, 11),  # flop, short deck, monotone
  pytest.param('7d6d2h', 7, 'a', 25, 18, marks=pytest.mark.slow),  # flop, short deck, two-tone
  pytest.param('7c7d2h', 7, 'a', 25, 19, marks=pytest.mark.slow),  # flop, paired: the pair's suits swap
  pytest.param('Td9d6hQh', 13, '50%,a', 48, 35, marks=pytest.mark.slow),  # turn, full deck
  pytest.param('Td9d6h', 13, 'a', 49, 36, marks=pytest.mark.slow),  # flop, full deck, two-tone
  pytest.param('Td7d2d', 13, 'a', 49, 23, marks=pytest.mark.slow),  # flop, full deck, monotone
]


@pytest.mark.parametrize(('board', 'num_ranks', 'bets', 'cards_dealt', 'solved'), CASES)
def test_one_iteration_with_merged_cards_is_the_plain_ones(board, num_ranks, bets, cards_dealt, solved):
  plain = spot(board, num_ranks, bets, isomorphism_on=False)
  merged = spot(board, num_ranks, bets)
  assert plain.blocks.merged is None
  assert merged.blocks.merged.cards == cards_dealt and merged.blocks.num_blocks == solved
  apart = one_iteration_apart(plain, merged)
  assert all(value < 1e-9 for value in apart.values()), apart


def test_a_wrong_suit_map_fails(monkeypatch):
  board, num_ranks, bets = '7d5d2d', 7, 'a'  # the default suite's merged case: its programs compiled
  plain = spot(board, num_ranks, bets, isomorphism_on=False)
  real = isomorphism.symmetry

  def wrong(*args, **kwargs):  # the merged cards' hands left as they are: no relabelling
    found = real(*args, **kwargs)
    return isomorphism.Symmetry(found.permutations, np.tile(found.pulls[0], (len(found.pulls), 1)))

  monkeypatch.setattr(isomorphism, 'symmetry', wrong)
  apart = one_iteration_apart(plain, spot(board, num_ranks, bets))
  assert apart['regrets'] > 1e-3 and apart['values'] > 1e-6, apart


@pytest.mark.slow  # the default suite keeps the one-iteration check, which is exact
def test_a_merged_solve_is_the_plain_solves():
  """Solved to 0.5% of the pot, the merged solve's average laid out is evaluated on the plain tree to
  the same numbers its own check gives, and the EVs agree with the plain solve's."""
  plain = spot('7d6d2h', 7, 'a', seed=3, isomorphism_on=False)
  merged = spot('7d6d2h', 7, 'a', seed=3)
  results = [solving.solve(game, target_pct=0.5, dtype=jnp.float64) for game in (plain, merged)]
  nash_conv, values = plain.evaluate_profile(jnp.asarray(results[1].policy))
  assert float(nash_conv) / 2 == pytest.approx(results[1].exploitability, abs=1e-8)
  np.testing.assert_allclose(np.asarray(values) + 50, results[1].ev, atol=1e-8)
  tolerance = results[0].exploitability + results[1].exploitability
  np.testing.assert_allclose(results[0].ev, results[1].ev, atol=tolerance)
  assert solving.report(results[1])['isomorphism'] == {'street': 'turn', 'cards': 25, 'solved': 18}
  assert 'isomorphism' not in solving.report(results[0])


def test_ranges_or_boards_without_symmetry_merge_nothing():
  weights = symmetric_ranges(0)
  broken = [weights[0].copy(), weights[1]]
  broken[0][(HOLES == cards.parse_card('8s')).any(1)] *= 0.5  # the hands with the 8s weigh less
  assert spot('7d6d2h5h', 7, 'a').blocks.merged is not None
  assert spot('7d6d2h5h', 7, 'a', weights=broken).blocks.merged is None
  assert spot('7d6c2h5s', 7, 'a').blocks.merged is None  # rainbow turn: no two suits alike
  assert spot('7d6d2h5h', 7, 'a', isomorphism_on=False).blocks.merged is None
  symmetry = isomorphism.symmetry(cards.parse_board('7c7d2h4h'), *_hands_and_ranges('7c7d2h4h'))
  assert symmetry.permutations == ((0, 1, 2, 3), (1, 0, 2, 3))  # the pair's clubs and diamonds


def _hands_and_ranges(board: str):
  game = spot(board, 7, 'a', isomorphism_on=False)
  return np.asarray(game.spot.hands), np.asarray(game.spot.ranges)


@pytest.mark.slow  # the default suite's 10 minutes: locking and isomorphism each keep their default tests
def test_locks_on_merged_cards_must_be_alike():
  game = spot('7d6d2h5h', 7, '50%,a')
  same = locking.lock(game, locking.rows(game, ['x,x,*=x:0.5,b50:0.5']))  # every river card alike
  assert same.lock is not None
  with pytest.raises(locking.AsymmetricLock):
    locking.lock(game, locking.rows(game, ['x,x,2s=x:1']))  # the 2s, merged into the 2c
  plain = spot('7d6d2h5h', 7, '50%,a', isomorphism_on=False)
  assert locking.lock(plain, locking.rows(plain, ['x,x,2s=x:1'])).lock is not None


def test_the_memory_estimate_counts_the_blocks_left_to_solve():
  """The share of the first deal's cards solved is the blocks' (as the one-iteration cases count
  them), and the estimate's state shrinks by it (one block's passes stay)."""
  deck = cards.Deck(7, 4)
  board = cards.parse_board('7d5d2d', deck)
  symmetric = [ranges.range_on_board(w, deck, board) for w in symmetric_ranges(0)]
  spec = solving.SpotSpec('7d5d2d', 100, 200, ('22+', '22+'), 'a', 'a', num_ranks=7)
  assert spec.solved_share(symmetric) == 11 / 25
  full = solving.SpotSpec('Td7d2d', 200, 900, ('66+,A8s+,AJo+,KQo', 'QQ-22,AQs-A2s,ATo+'))
  assert full.solved_share() == 23 / 49
  assert dataclasses.replace(full, board='Qs8h3c').solved_share() == 1.0
  assert dataclasses.replace(full, board='Td7d2d6c3s').solved_share() == 1.0  # a river deals nothing
  counts = {'edges': (1000, 2000), 'nodes': 5000}
  plain = solving.estimated_bytes(counts, 300, jnp.float32, blocks=49)
  merged = solving.estimated_bytes(counts, 300, jnp.float32, blocks=49, solved=23 / 49)
  assert plain - merged == pytest.approx(2 * 2 * (1000 + 2000) * 300 * 4 * (1 - 23 / 49), abs=2)
