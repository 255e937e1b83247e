"""The subgame solver's 16-bit state (`subgame_solver(compress=True)`, `jaxcfr subgame --compress`):
an update from a 16-bit state is the float update of the same numbers, rounded to each edge's step;
the policies read from it are those of its decoded numbers; a spot solves about as far per
iteration in half the memory. And the tree's nodes kept as arrays (`tree.NodeTable`)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runner import run_cli

from jaxcfr import memory
from jaxcfr.poker.rules import cards
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import solving
from jaxcfr.poker.subgame import tree as tree_module
from jaxcfr.poker.subgame.solver import Quantized, decoded, state_to_rows, subgame_solver
from jaxcfr.poker.subgame.tree import TreeConfig, street_sizes

DECK = cards.Deck(4, 3)


def small_game(street: int, per_player: bool, seed: int) -> subgame.Subgame:
  """A flop (nested blocks), turn (blocks) or river tree on a 12-card deck, float64, over the ranges'
  hands (each player's own where `per_player`: the packed layout)."""
  config = TreeConfig(street, 60, 120, (street_sizes('50%', 'a'),) * 3, deck_size=DECK.size)
  rng = np.random.default_rng(seed)
  board = tuple(int(c) for c in rng.choice(DECK.cards, 2 + street, replace=False))
  ranges = [rng.random(1326) * (rng.random(1326) < 0.6) for _ in range(2)]
  return subgame.build_subgame(
    config, board, ranges, DECK, jnp.float64, range_hands=True, per_player=per_player, blocks=street < 3
  )


# By default the blocked turn with each player's own hands (packed) and the river; the nested flop and
# the unpacked blocked turn with -m slow (the flop's programs take about 20 s to compile).
@pytest.mark.parametrize(
  ('street', 'per_player'),
  [
    pytest.param(1, True, marks=pytest.mark.slow),
    pytest.param(2, False, marks=pytest.mark.slow),
    # the default suite's minutes: the river's packed layout drops hands as the turn's does
    pytest.param(2, True, marks=pytest.mark.slow),
    pytest.param(3, True, marks=pytest.mark.slow),  # the default suite's 10 minutes; (3, False) stays
    (3, False),
  ],
)
def test_an_update_from_a_16_bit_state_is_the_float_update_rounded(street, per_player):
  game = small_game(street, per_player, seed=street)
  coded, plain = subgame_solver('dcfr', compress=True), subgame_solver('dcfr')
  # Jitted: op by op, each of a nested tree's small operations would compile a program of its own.
  update = jax.jit(coded.update)
  state = jax.jit(coded.init)(game)
  assert all(isinstance(x, Quantized) for x in state.cumulative_regret + state.cumulative_policy)
  assert {x.values.dtype for x in state.cumulative_regret} == {jnp.dtype(jnp.int16)}
  assert {x.values.dtype for x in state.cumulative_policy} == {jnp.dtype(jnp.uint16)}
  for _ in range(3):
    state = update(state, game)
  # The same numbers in floats: the float solver reads the same policies from them.
  decode = jax.jit(lambda x, g: tuple(decoded(g, x)))
  floats = state._replace(
    cumulative_regret=decode(state.cumulative_regret, game),
    cumulative_policy=decode(state.cumulative_policy, game),
  )
  for read in ('current_policy', 'average_policy'):
    ours, theirs = (jax.jit(getattr(solver, read)) for solver in (coded, plain))
    np.testing.assert_allclose(ours(state, game), theirs(floats, game), atol=1e-12)
  after, expected = update(state, game), jax.jit(plain.update)(floats, game)
  legal = np.asarray(game.tree.legal)
  # OOP updates first, from the state as it was; IP then plays against OOP's new (rounded) regrets,
  # so IP's edges are the float update's to within what that rounding moves, not to half a step.
  first = (np.asarray(game.tree.decision_player) == 0)[:, None, None]
  for field, limit in (('cumulative_regret', 32767), ('cumulative_policy', 65535)):
    want = np.where(legal, state_to_rows(game, getattr(expected, field)), 0)  # [D, A, H]
    got = np.where(legal, state_to_rows(game, getattr(after, field)), 0)
    assert np.abs(want).max() > 0.1
    step = np.abs(want).max(-1, keepdims=True) / limit  # each edge's unit
    error = np.abs(got - want)
    exact = first if field == 'cumulative_regret' else True  # the average's weights: both players' first
    assert (np.where(exact, error - step / 2 * (1 + 1e-9), 0) <= 1e-12).all(), field
    assert np.where(exact, error, 0).max() > 0  # rounded: not the float numbers kept as they were
    assert error.max() <= 1e-2 * np.abs(want).max(), field


def test_a_16_bit_solve_converges_like_the_float_one_in_half_the_state():
  spec = solving.SpotSpec(
    'Td9d6hQc3s', 200, 900, ('66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5', 'QQ-22,AQs-A2s,ATo+,K5s+')
  )
  runs = [solving.solve(spec, target_pct=None, iterations=100, compress=c) for c in (False, True)]
  plain, coded = runs
  assert plain.exploitability_pct < 0.3 and coded.exploitability_pct < 0.3
  assert coded.exploitability_pct < 1.5 * plain.exploitability_pct
  np.testing.assert_allclose(coded.ev, plain.ev, atol=0.3)
  state_bytes = [memory.nbytes((r.state.cumulative_regret, r.state.cumulative_policy)) for r in runs]
  assert state_bytes[1] < 0.55 * state_bytes[0]


def test_the_memory_estimate_counts_16_bit_state():
  counts = {'edges': (1000, 2000), 'nodes': 5000}
  plain = solving.estimated_bytes(counts, (300, 200, 250), jnp.float32, blocks=10, per_player=True)
  coded = solving.estimated_bytes(
    counts, (300, 200, 250), jnp.float32, blocks=10, per_player=True, compress=True
  )
  state = 2 * (1000 * 200 + 2000 * 250) * 4
  assert plain - coded == state // 2  # the stored copy at 2 bytes a number, the rest as before


def test_the_tree_keeps_its_nodes_as_arrays():
  config = TreeConfig(2, 60, 120, (street_sizes('50%,a', '2x'),) * 3, deck_size=DECK.size)
  nodes = tree_module.build(config)
  table = tree_module.NodeTable(nodes)
  assert len(table) == len(nodes) and list(table) == nodes and table[-3:] == nodes[-3:]
  game = small_game(2, False, seed=4)
  info = game.tree.info
  assert isinstance(info.nodes, tree_module.NodeTable)
  deepest = len(info.nodes) - 1
  assert info.line(deepest)[0] in info.nodes[0].labels and len(info.line(deepest)) > 2


@pytest.mark.slow  # the default suite's 10 minutes; the 16-bit state stays checked by the library tests above
def test_the_cli_solves_a_spot_with_compress():
  board, oop, ip = 'Td9d6hQc3s', '66+,A8s+,AJo+', 'QQ-22,AQs-A2s'
  code, out, err = run_cli(
    'subgame', '--board', board, '--pot', '200', '--stack', '900', '--oop-range', oop, '--ip-range', ip,
    '--iterations', '50', '--json', '-', '--compress',
  )  # fmt: skip
  assert code == 0, err
  report = json.loads(out)
  game = solving.SpotSpec(board, 200, 900, (oop, ip)).build()
  floats = jax.eval_shape(subgame_solver('dcfr').init, game)  # the float32 state's shapes
  float_bytes = sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(floats))
  assert float_bytes > 10_000 and report['memory_bytes'] < float_bytes + memory.nbytes(game)
  assert report['exploitability_pct'] < 1 and report['iterations'] == 50
