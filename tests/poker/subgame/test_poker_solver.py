"""The public-tree solver's fused per-edge passes (`jaxcfr.poker.subgame.solver`) against the plain
`[D, A, H]` form (`tests/oracles/subgame_reference.py`: full reach and counterfactual-value passes, which the
oracle tests check against OpenSpiel): the same regrets, current and average policies, iteration by
iteration, for every full-width algorithm, alternating or not, on river and turn trees."""

import dataclasses
import functools
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import host_devices_env, import_paths
from subgame_reference import reference_solver

import jaxcfr
from jaxcfr import algorithms
from jaxcfr.poker.rules import cards
from jaxcfr.poker.subgame import blocked, resolving
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import solver as solver_module
from jaxcfr.poker.subgame.game import policy_edges
from jaxcfr.poker.subgame.solver import SubgameState as _FusedState
from jaxcfr.poker.subgame.solver import (
  decision_rows,
  edge_rows,
  rows_to_state,
  state_shapes,
  state_to_rows,
  subgame_solver,
  subgame_warm_start,
)
from jaxcfr.poker.subgame.tree import TreeConfig, street_sizes

DECK = cards.Deck(6, 4)
TURN = TreeConfig(2, 60, 200, (street_sizes('50%,a', '2x'),) * 3, deck_size=DECK.size)
RIVER = TreeConfig(3, 100, 250)  # the full deck, the default sizing


def spot_game(config: TreeConfig, seed: int, blocks: bool | None = None) -> subgame.Subgame:
  deck = DECK if config.deck_size == DECK.size else cards.FULL_DECK
  rng = np.random.default_rng(seed)
  board = tuple(int(c) for c in rng.choice(deck.cards, 5 if config.street == 3 else 4, replace=False))
  ranges = [rng.random(1326) * (rng.random(1326) < 0.7) for _ in range(2)]
  return subgame.build_subgame(config, board, ranges, deck, jnp.float64, blocks=blocks)


@functools.cache
def _solvers(algorithm: str, alternating: bool):
  fused, plain = (
    subgame_solver(algorithm, alternating=alternating),
    reference_solver(algorithm, alternating=alternating),
  )
  return (
    fused,
    plain,
    jax.jit(fused.update),
    jax.jit(plain.update),
    jax.jit(lambda s, g, n: jaxcfr.run(plain, s, g, n)),
  )


def fused_state(game, plain_state):
  """The plain solver's state in the fused solver's per-edge layout for `game` (blocked on a turn tree
  on the CPU: `blocked.Blocks`)."""
  depths = range(len(state_shapes(game)))
  per_depth = lambda x: tuple(jax.tree.map(lambda leaf, d=d: rows_to_state(game, leaf)[d], x) for d in depths)
  return _FusedState(
    plain_state.iteration,
    tuple(rows_to_state(game, plain_state.cumulative_regret)),
    tuple(rows_to_state(game, plain_state.cumulative_policy)),
    per_depth(plain_state.rule_state),
  )


# Each case compiles three programs for two trees: all fourteen run with -m slow. By default the
# fused solver is checked against OpenSpiel's universal_poker (tests/poker/subgame/test_poker_subgame.py).
CASES = [
  pytest.param(name, alternating, marks=pytest.mark.slow)
  for name in algorithms.names(algorithms.FULL_WIDTH)
  for alternating in (True, False)
]


@pytest.mark.parametrize(('algorithm', 'alternating'), CASES)
def test_the_fused_passes_equal_the_plain_form(algorithm, alternating):
  """From the same state (the plain solver's after 0, 1, 3 and 9 iterations, carried over to the
  per-edge layout), one update of each gives the same regrets and average weights, and both read the
  same current and average policies. (Whole trajectories are not compared: a regret that is 0 in exact
  arithmetic comes out as +-1e-17 in either, and regret matching breaks such ties differently.)"""
  fused, plain, update_fused, update_plain, run_plain = _solvers(algorithm, alternating)
  for config, seed in ((RIVER, 1), (TURN, 2)):
    game = spot_game(config, seed)
    state = plain.init(game)
    for steps in (0, 1, 2, 6):
      state = run_plain(state, game, steps)
      ours = fused_state(game, state)
      for read in ('current_policy', 'average_policy'):
        np.testing.assert_allclose(
          getattr(fused, read)(ours, game),
          getattr(plain, read)(state, game),
          rtol=0,
          atol=1e-12,
          err_msg=read,
        )
      after, expected = update_fused(ours, game), update_plain(state, game)
      legal = np.asarray(game.tree.legal)
      scale = np.abs(np.asarray(expected.cumulative_regret)).max()
      assert scale > 0  # the comparison compares something
      np.testing.assert_allclose(
        np.where(legal, state_to_rows(game, after.cumulative_regret), 0),
        np.where(legal, expected.cumulative_regret, 0),
        rtol=1e-9,
        atol=1e-12 * scale,
      )
      weights = np.asarray(expected.cumulative_policy)
      np.testing.assert_allclose(
        np.where(legal, state_to_rows(game, after.cumulative_policy), 0),
        np.where(legal, weights, 0),
        rtol=1e-9,
        atol=1e-12 * np.abs(weights).max(),
      )
      assert int(after.iteration) == int(expected.iteration)


def test_decision_rows_lay_edges_out_by_node_and_action():
  """Each decision node's row holds its children's edges in action order, 0 on padding actions; and
  `policy_edges`, its inverse, gives edges that it lays out as the policy on the legal actions, and 1
  below every chance node (a turn tree: it deals river cards)."""
  game = spot_game(TURN, 3)
  tree = game.tree
  edges = tuple(
    jnp.arange(start, stop, dtype=jnp.float64)[:, None] + 1000 * (d + 1) + jnp.zeros((1, game.num_hands))
    for d, (start, stop) in enumerate(tree.edge_bounds[1:])
  )
  rows = np.asarray(decision_rows(tree, edges))[..., 0]
  r = 0
  for d, sizes in enumerate(tree.level_sizes[:-1]):
    for i in range(sizes[0]):
      children = np.asarray(tree.children[d][i])
      following = sum(tree.level_sizes[d + 1])
      expected = np.where(children < following, children + 1000 * (d + 1), 0)
      np.testing.assert_array_equal(rows[r], expected)
      r += 1
  assert r == tree.num_decisions
  legal = np.asarray(tree.legal)
  policy = np.where(legal, np.random.default_rng(1).random((*legal.shape[:2], game.num_hands)), 0)
  edges = jax.jit(policy_edges)(tree, jnp.asarray(policy))
  np.testing.assert_array_equal(
    np.where(legal, jax.jit(decision_rows)(tree, edge_rows(tree, edges)), 0), policy
  )
  below_chance = left_out = 0
  for d, edge in enumerate(edges):
    chance = np.asarray(tree.parent_player[d + 1]) == 2
    assert np.all(np.asarray(edge)[chance] == 1)
    below_chance += chance.sum()
    # The solver keeps state for every node below a decision; the rows it leaves out are below chance.
    start, stop = tree.edge_bounds[d + 1]
    outside = np.ones(len(chance), bool)
    outside[start:stop] = False
    assert np.all(chance[outside])
    left_out += outside.sum()
  assert below_chance > 40 and left_out == below_chance


@functools.cache
def _warm_programs(algorithm: str, alternating: bool):
  solver = subgame_solver(algorithm, alternating=alternating)
  warm = subgame_warm_start(algorithm, alternating=alternating)
  return solver, jax.jit(warm, static_argnums=3), jax.jit(solver.update)


# DCFR on the river with alternating updates by default; the turn (chance nodes: `policy_edges` is
# checked there by `test_decision_rows_lay_edges_out_by_node_and_action`), simultaneous updates and
# PCFR+ (a rule with its own state) with -m slow (each case compiles two programs).
WARM_CASES = [
  pytest.param(algorithm, config, alternating, marks=() if default else pytest.mark.slow)
  for algorithm in ('dcfr', 'pcfr+')
  for config, alternating in ((RIVER, True), (TURN, False), (RIVER, False), (TURN, True))
  for default in [algorithm == 'dcfr' and config is RIVER and alternating]
]


@pytest.mark.parametrize(('algorithm', 'config', 'alternating'), WARM_CASES)
def test_a_warm_start_with_the_current_strategy_is_an_update(algorithm, config, alternating):
  """`subgame_warm_start` plays the strategy it is given: given the state's own current strategy, one
  warm-start iteration is exactly the solver's update (regrets, rule state, average weights) with
  simultaneous updates, and with alternating ones in the first player's half (its regrets, and the
  average weights, which both read the strategy before any regret changes)."""
  game = spot_game(config, 4)
  solver, warm, update = _warm_programs(algorithm, alternating)
  state = update(update(update(solver.init(game), game), game), game)
  current = solver.current_policy(state, game)
  assert float(jnp.abs(current - 1 / 2).max()) > 0.1  # not a uniform strategy
  after, expected = warm(state, game, current, 1), update(state, game)
  tree = game.tree
  first_player = jnp.broadcast_to((tree.decision_player == 0)[:, None, None], (*tree.legal.shape[:2], 1))
  first = [edge > 0 for edge in rows_to_state(game, first_player.astype(game.dtype))]  # its edges
  pairs = [(after.cumulative_policy, expected.cumulative_policy, None)]
  if alternating:
    pairs.append((after.cumulative_regret, expected.cumulative_regret, first))
  else:
    pairs += [
      (after.cumulative_regret, expected.cumulative_regret, None),
      (after.rule_state, expected.rule_state, None),
    ]
  for ours, theirs, mask in pairs:
    for d, (got, want) in enumerate(zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True)):
      if mask is not None:
        got, want = jnp.where(mask[d], got, 0), jnp.where(mask[d], want, 0)
      scale = max(1.0, float(jnp.abs(want).max()))
      np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * scale, err_msg=f'depth {d}')
  assert int(after.iteration) == int(expected.iteration)


def test_a_warm_start_from_nothing_averages_to_its_strategy_and_keeps_its_regrets():
  """From `init`, n warm-start iterations with a random strategy leave that strategy as the average
  (wherever the acting player's reach is positive) and the iteration count at n; their regrets are
  the strategy's own instantaneous regrets (child value minus node value, `tests/subgame_reference`)
  accumulated n times by DCFR's discounting; and the warm-started solver then runs on from there."""
  game = spot_game(RIVER, 6)
  solver, warm, update = _warm_programs('dcfr', True)
  legal = np.asarray(game.tree.legal)
  rng = np.random.default_rng(0)
  policy = np.where(legal, rng.random((*legal.shape[:2], game.num_hands)) + 0.05, 0)
  policy = jnp.asarray(policy / policy.sum(1, keepdims=True))
  state = warm(solver.init(game), game, policy, 5)
  assert int(state.iteration) == 5
  weights = np.asarray(state_to_rows(game, state.cumulative_policy))
  reached = weights.sum(1) > 1e-12  # [D, H]
  assert reached.mean() > 0.5
  average = np.asarray(solver.average_policy(state, game))
  np.testing.assert_allclose(
    np.where(reached[:, None], average, 0), np.where(reached[:, None], policy, 0), atol=1e-9
  )

  # The strategy's instantaneous regrets against itself, from the evaluation code that the oracle
  # tests check against OpenSpiel (`subgame.counterfactual_values`: child value minus node value).
  @jax.jit
  def instant_regrets(game, policy):
    reach = subgame.reach_probabilities(game, policy)
    return sum(subgame.counterfactual_values(game, policy, reach, p)[1] for p in range(2))

  instant = np.asarray(instant_regrets(game, policy))
  assert np.abs(instant).max() > 1  # chips, not noise
  config = algorithms.get('dcfr').resolve(gamma=3.0)
  expected = np.zeros_like(instant)
  for t in range(1, 6):  # DCFR: accumulate, then discount positive and negative sums
    total = expected + instant
    expected = total * np.where(total > 0, 1 / (1 + t ** -config['alpha']), 1 / (1 + t ** -config['beta']))
  regret = np.asarray(state_to_rows(game, state.cumulative_regret))
  scale = np.abs(expected).max()
  np.testing.assert_allclose(
    np.where(legal, regret, 0), np.where(legal, expected, 0), rtol=1e-9, atol=1e-12 * scale
  )
  after = update(state, game)
  assert int(after.iteration) == 6


@pytest.mark.parametrize(
  ('algorithm', 'alternating'),
  [pytest.param('dcfr', True, marks=pytest.mark.slow), pytest.param('pcfr+', False, marks=pytest.mark.slow)],
  # both slow (the suite's 10 minutes): blocks stay checked by the flop-in-blocks oracle test
)
def test_a_blocked_turn_tree_solves_as_the_whole_tree(algorithm, alternating):
  """A turn tree in blocks (its river subtrees one river card at a time, `blocked.Blocks`) and the
  whole tree's passes: from the same state they read the same policies and make the same update, and
  (with -m slow) a warm start plays the same iterations. (Whole trajectories are not compared, as
  above.)"""
  whole, blocked = spot_game(TURN, 7, blocks=False), spot_game(TURN, 7, blocks=True)
  assert whole.blocks is None and blocked.blocks is not None
  river_cards = DECK.size - 4
  assert blocked.blocks.block_card.shape == (river_cards,)
  assert [shape[0] for shape in state_shapes(blocked) if len(shape) == 3] != []
  fused, _, update, *_ = _solvers(algorithm, alternating)
  state = update(update(update(fused.init(whole), whole), whole), whole)
  ours = fused_state(blocked, _PlainView(whole, state))
  for read in ('current_policy', 'average_policy'):
    np.testing.assert_allclose(
      getattr(fused, read)(ours, blocked), getattr(fused, read)(state, whole), atol=1e-12
    )
  legal = np.asarray(whole.tree.legal)
  after, expected = update(ours, blocked), update(state, whole)
  for field in ('cumulative_regret', 'cumulative_policy'):
    want = np.where(legal, state_to_rows(whole, getattr(expected, field)), 0)
    assert np.abs(want).max() > 1
    got = np.where(legal, state_to_rows(blocked, getattr(after, field)), 0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max(), err_msg=field)
  if algorithm == 'dcfr':  # the default run stops here (each warm-start program is a slow compile)
    return
  _, warm, _ = _warm_programs(algorithm, alternating)
  policy = fused.current_policy(state, whole)
  runs = [
    state_to_rows(game, warm(fused.init(game), game, policy, 3).cumulative_regret)
    for game in (whole, blocked)
  ]
  np.testing.assert_allclose(runs[1], runs[0], rtol=1e-9, atol=1e-12 * float(jnp.abs(runs[0]).max()))


# the default suite's minutes: a flop in nested blocks meets the oracle by default
# (test_poker_subgame.py::test_a_flop_in_blocks_over_the_ranges_hands_matches_the_oracle)
@pytest.mark.slow
def test_a_flop_tree_in_nested_blocks_solves_as_the_whole_tree():
  """A flop tree in blocks (turn cards, and river cards inside each: `blocked.Blocks` nested), over
  the ranges' hands only, and the whole tree over the same hands: from the same state, one update
  makes the same regrets and average weights, and the checks from the state give the same values."""
  deck = cards.Deck(4, 3)
  config = TreeConfig(1, 60, 120, (street_sizes('50%', 'a'),) * 3, deck_size=deck.size)
  rng = np.random.default_rng(5)
  board = tuple(int(c) for c in rng.choice(deck.cards, 3, replace=False))
  ranges = [rng.random(1326) * (rng.random(1326) < 0.7) for _ in range(2)]
  build = functools.partial(subgame.build_subgame, config, board, ranges, deck, jnp.float64, range_hands=True)
  whole, nested = build(blocks=False), build(blocks=True)
  assert whole.blocks is None and isinstance(nested.blocks.forest, blocked.Blocks)
  assert nested.blocks.block_card.shape == (deck.size - 3,)
  assert nested.blocks.forest.block_card.shape == (deck.size - 3, deck.size - 4)
  solver = subgame_solver('dcfr')
  update = jax.jit(solver.update)
  state = update(update(update(solver.init(whole), whole), whole), whole)
  moved = lambda field: tuple(rows_to_state(nested, state_to_rows(whole, getattr(state, field))))  # noqa: E731
  ours = state._replace(
    cumulative_regret=moved('cumulative_regret'),
    cumulative_policy=moved('cumulative_policy'),
    rule_state=solver.init(nested).rule_state,
  )
  evaluate = jax.jit(solver.evaluate_average)
  jax.tree.map(
    lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-9), evaluate(ours, nested), evaluate(state, whole)
  )
  legal = np.asarray(whole.tree.legal)
  after, expected = update(ours, nested), update(state, whole)
  for field in ('cumulative_regret', 'cumulative_policy'):
    want = np.where(legal, state_to_rows(whole, getattr(expected, field)), 0)
    assert np.abs(want).max() > 1
    got = np.where(legal, state_to_rows(nested, getattr(after, field)), 0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max(), err_msg=field)


_SHARDED = """
import sys
sys.path[:0] = {paths!r}
import json
import jax
import jax.numpy as jnp
import numpy as np
from jaxcfr.poker.rules import cards
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame.solver import rows_to_state, state_to_rows, subgame_solver
from jaxcfr.poker.subgame.tree import TreeConfig, street_sizes

jax.config.update('jax_enable_x64', True)
rng = np.random.default_rng(9)
out = []
for street, dealt, ranks in {streets!r}:
  deck = cards.Deck(ranks, 3)
  config = TreeConfig(street, 60, 120, (street_sizes('50%', 'a'),) * 3, deck_size=deck.size)
  board = tuple(int(c) for c in rng.choice(deck.cards, dealt, replace=False))
  ranges = [rng.random(1326) * (rng.random(1326) < 0.7) for _ in range(2)]
  games = [
    subgame.build_subgame(config, board, ranges, deck, jnp.float64, blocks=True, range_hands=True, devices=d)
    for d in (1, 4)
  ]
  split = [g.blocks for g in games]  # a turn's river cards, a flop's turn cards
  solver = subgame_solver('dcfr')
  update, evaluate = jax.jit(solver.update), jax.jit(solver.evaluate_average)
  state = solver.init(games[0])
  for _ in range(3):
    state = update(state, games[0])
  state = jax.tree.map(lambda x: jnp.asarray(np.asarray(x)), state)  # on no device in particular
  assert not jax.tree.leaves(state.rule_state)
  # The same state in the layout of 4 devices (the first deal's cards padded to a multiple of 4).
  moved = lambda x: tuple(rows_to_state(games[1], state_to_rows(games[0], x)))
  split_state = state._replace(
    cumulative_regret=moved(state.cumulative_regret), cumulative_policy=moved(state.cumulative_policy)
  )
  # From the same state: regret matching turns rounding-sized differences of regrets near 0 into
  # different strategies, so runs that add in another order part after a few iterations.
  states = [update(state, games[0]), update(split_state, games[1])]
  legal = np.asarray(games[0].tree.legal)
  rows = lambda s, g, f: np.where(legal, state_to_rows(g, getattr(s, f)), 0)
  out.append({{
    'shards': [b.shards for b in split],
    'padding': [b.padding for b in split],
    'inner_shards': [b.forest.shards for b in split] if street == 1 else None,
    'devices': len(states[1].cumulative_regret[-1].sharding.device_set),
    'scale': float(np.abs(rows(states[0], games[0], 'cumulative_regret')).max()),
    'errors': [
      float(np.abs(rows(states[1], games[1], f) - rows(states[0], games[0], f)).max())
      for f in ('cumulative_regret', 'cumulative_policy')
    ],
    'checks': [np.asarray(x).tolist() for s, g in zip(states, games) for x in evaluate(s, g)],
  }})
print(json.dumps(out))
"""


@pytest.mark.slow  # the default suite's 10 minutes: one device's blocks are checked by the flop oracle test
def test_blocks_split_over_devices_solve_as_on_one():
  """Turn trees whose river cards' blocks, and a flop tree whose turn cards' blocks, are split over 4
  host devices (each device runs its share; `Blocks.shards`; the flop's 9 turn cards padded to 12 and a
  turn's 11 river cards to 12 with blocks that deal nothing, `Blocks.padding`): from the same state, one
  update makes the same regrets and average weights as on one device, and the checks give the same
  values; the state lives on the 4 devices. (One process for all: the default suite's minutes.)"""
  script = _SHARDED.format(paths=import_paths(__file__), streets=((2, 4, 4), (1, 3, 4), (2, 4, 5)))
  process = subprocess.run(
    [sys.executable, '-c', script], capture_output=True, text=True, env=host_devices_env(4), timeout=600
  )
  assert process.returncode == 0, process.stderr
  cases = json.loads(process.stdout.splitlines()[-1])
  for (street, _, ranks), case in zip(((2, 4, 4), (1, 3, 4), (2, 4, 5)), cases, strict=True):
    assert case['shards'] == [1, 4] and case['devices'] == 4, case
    # The turn's 8 river cards split evenly, its 11 on the 15-card deck padded with 1; the flop's 9 turn
    # cards padded with 3 that deal nothing, whole turn cards per device (its river cards not split again).
    assert case['padding'] == {(2, 4): [0, 0], (1, 4): [0, 3], (2, 5): [0, 1]}[street, ranks], case
    assert case['inner_shards'] == (None if street == 2 else [1, 1]), case
    assert case['scale'] > 1
    assert max(case['errors']) <= 1e-9 * case['scale'], case
    one_conv, one_values, four_conv, four_values = case['checks']
    np.testing.assert_allclose(four_conv, one_conv, rtol=1e-9)
    np.testing.assert_allclose(four_values, one_values, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
  'config',
  [
    'river',
    pytest.param('turn whole', marks=pytest.mark.slow),
    # the default suite's minutes; a blocked turn tree solving as the whole tree runs by default
    pytest.param('turn blocked', marks=pytest.mark.slow),
  ],
)
def test_the_checks_from_the_state_equal_the_evaluation_of_the_policy(config):
  """`evaluate_average` (what `jaxcfr.train`'s checks run for the subgame solver: the average read
  from the state's own layout, block by block on a blocked turn tree) gives the NashConv and values
  of `Subgame.evaluate_profile` of the laid-out average policy, and the training loop reports them."""
  game = {
    'river': lambda: spot_game(RIVER, 3),
    'turn whole': lambda: spot_game(TURN, 4, blocks=False),
    'turn blocked': lambda: spot_game(TURN, 4, blocks=True),
  }[config]()
  solver = subgame_solver('dcfr')
  state = jax.jit(lambda s, g: jaxcfr.run(solver, s, g, 7))(solver.init(game), game)
  nash_conv, values = jax.jit(solver.evaluate_average)(state, game)
  want_conv, want_values = jax.jit(lambda s, g: g.evaluate_profile(solver.average_policy(s, g)))(state, game)
  assert float(want_conv) > 1e-3 and abs(float(want_values[0])) > 1e-3  # not solved yet: not 0
  np.testing.assert_allclose(nash_conv, want_conv, rtol=1e-9)
  np.testing.assert_allclose(values, want_values, rtol=1e-9, atol=1e-12)
  if config == 'turn blocked':
    result = jaxcfr.train(game, solver, iterations=7, eval_every=7)
    assert result.curve[-1]['iteration'] == 7 and result.check_seconds > 0
    np.testing.assert_allclose(result.nash_conv, float(want_conv), rtol=1e-9)
    np.testing.assert_allclose(result.policy, solver.average_policy(state, game), atol=1e-12)


@pytest.mark.slow  # the default suite's 10 minutes; a long check of the chunked calls
def test_the_checks_in_the_chunks_calls_are_the_checks_of_the_states_they_leave():
  """`jaxcfr.train` runs a subgame solver's check in the call of the chunk before it (one program,
  `training._with_check`): each point of the curve is `evaluate_average` of the state after that many
  iterations, for checks due by iterations (with a last one at a total that is not a multiple of
  `eval_every`) and for checks due by the clock (a call of no iterations after the chunk)."""
  game = spot_game(RIVER, 3)
  solver = subgame_solver('dcfr')
  run = jax.jit(lambda s, g, n: jaxcfr.run(solver, s, g, n))
  evaluate = jax.jit(solver.evaluate_average)

  def exploitability_after(iterations):
    return float(evaluate(run(solver.init(game), game, iterations), game)[0]) / 2

  by_iterations = jaxcfr.train(game, solver, iterations=25, eval_every=10)
  by_clock = jaxcfr.train(game, solver, iterations=25, eval_every_seconds=1e-9)  # after every chunk
  assert [point['iteration'] for point in by_iterations.curve] == [10, 20, 25]
  assert len(by_clock.curve) >= 2 and by_clock.curve[-1]['iteration'] == 25
  for result in (by_iterations, by_clock):
    assert result.check_seconds > 0 and result.seconds > 0
    for point in result.curve:
      np.testing.assert_allclose(point['exploitability'], exploitability_after(point['iteration']), rtol=1e-9)
    np.testing.assert_allclose(result.exploitability, exploitability_after(25), rtol=1e-9)


@pytest.mark.slow  # the default suite's minutes: compiler options, the numbers tested by default
def test_blocked_turn_subgames_compile_with_the_large_block_options_to_the_same_numbers():
  """`backend.compiler_options` gives blocked turn subgames (and safe subgames of them) the
  large-block options, whole turn trees XLA's defaults and river subgames Leduc's; the options change
  speed, not the solver's numbers."""
  from jaxcfr import backend  # noqa: PLC0415

  turn, whole, river = spot_game(TURN, 5, blocks=True), spot_game(TURN, 5, blocks=False), spot_game(RIVER, 5)
  assert turn.large_blocks and whole.large_blocks and not river.large_blocks
  assert backend.compiler_options(river) == jaxcfr.compiler_options()
  assert backend.compiler_options(whole) == {}
  options = backend.compiler_options(turn)
  if jax.default_backend() == 'cpu' and backend._cpu_options_supported(True):
    assert options == {'xla_cpu_use_fusion_emitters': False}
  safe = resolving.SafeSubgame(turn, jnp.zeros(turn.num_hands), jnp.asarray(1))
  assert backend.compiler_options(safe) == options
  solver = subgame_solver('dcfr')
  run = lambda opts: jax.jit(lambda s, g: jaxcfr.run(solver, s, g, 3), compiler_options=opts)  # noqa: E731
  states = [run(opts)(solver.init(turn), turn) for opts in (options, {})]
  assert float(jnp.abs(states[0].cumulative_regret[-1]).max()) > 0
  jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12), states[0], states[1])


def test_only_unpadded_turn_trees_come_in_blocks():
  """`build_subgame` builds the blocks of an unpadded turn tree when asked (and by default on a CPU):
  one block per river card, one forest root per chance node of the turn street, and every decision
  row of the whole tree in exactly one part; river trees and padded trees keep the whole layout."""
  turn = spot_game(TURN, 8, blocks=True)
  blocks = turn.blocks
  chance_rows = sum(sizes[1] for sizes in blocks.upper.level_sizes)
  assert sorted(np.asarray(blocks.root_chance).tolist()) == list(range(chance_rows))
  assert blocks.num_rows == turn.tree.num_decisions
  assert sorted(np.asarray(blocks.decision_source).tolist()) == list(range(turn.tree.num_decisions))
  assert spot_game(RIVER, 8, blocks=True).blocks is None
  shape = subgame.envelope([TURN, dataclasses.replace(TURN, stack=150)])
  board = tuple(int(c) for c in DECK.cards[:4])
  padded = subgame.build_subgame(TURN, board, [np.ones(1326)] * 2, DECK, jnp.float64, shape, blocks=True)
  assert padded.blocks is None


class _PlainView:
  """A fused state of the whole tree read as the plain solver's ([D, A, H] rows), for `fused_state`."""

  def __init__(self, game, state):
    rows = functools.partial(state_to_rows, game)
    self.iteration = state.iteration
    self.cumulative_regret = rows(state.cumulative_regret)
    self.cumulative_policy = rows(state.cumulative_policy)
    # Per depth the rule's state (PCFR+'s prediction), or () for rules without one.
    self.rule_state = jax.tree.map(lambda *leaves: rows(leaves), *state.rule_state)


@pytest.mark.parametrize('per_step', [1, 2, 3])
def test_the_loop_over_blocks_updates_every_block_once(monkeypatch, per_step):
  """`over_blocks` with 1, 2 or 3 blocks per step over 5 blocks (so a remainder for 2 and 3): each
  block's parts become what its own step makes of them, and the root values are summed over the
  blocks, as a Python loop over the blocks gives them."""
  monkeypatch.setattr(solver_module, 'BLOCKS_PER_STEP', per_step)
  rng = np.random.default_rng(per_step)
  parts = (jnp.asarray(rng.random((5, 3, 4))), (jnp.asarray(rng.random((5, 2))),))
  inputs = (jnp.asarray(rng.random((5, 4))), jnp.arange(5))

  def one_block(args):
    (first, (second,)), weights, card = args
    new = (first * weights + card, (second - card,))
    return new, first.sum(0) * (card + 1)  # [4]

  run = lambda p, i: solver_module.over_blocks(one_block, p, i, (4,), jnp.float64)
  updated, summed = jax.jit(run)(parts, inputs)
  for block in range(5):
    want = one_block(jax.tree.map(lambda x, b=block: x[b], (parts, *inputs)))[0]
    got = jax.tree.map(lambda x, b=block: x[b], updated)
    jax.tree.map(np.testing.assert_allclose, got, want)
  expected = sum(one_block(jax.tree.map(lambda x, b=b: x[b], (parts, *inputs)))[1] for b in range(5))
  np.testing.assert_allclose(summed, expected, rtol=1e-12)
