"""The public-tree solver's fused per-edge passes (`jaxcfr.poker.solver`) against the plain
`[D, A, H]` form (`tests/subgame_reference.py`: full reach and counterfactual-value passes, which the
oracle tests check against OpenSpiel): the same regrets, current and average policies, iteration by
iteration, for every full-width algorithm, alternating or not, on river and turn trees."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from subgame_reference import reference_solver

import jaxcfr
from jaxcfr import algorithms
from jaxcfr.poker import cards, subgame
from jaxcfr.poker.solver import SubgameState as _FusedState
from jaxcfr.poker.solver import decision_rows, subgame_solver
from jaxcfr.poker.tree import TreeConfig, street_sizes

DECK = cards.Deck(6, 4)
TURN = TreeConfig(2, 60, 200, (street_sizes('50%,a', '2x'),) * 3, deck_size=DECK.size)
RIVER = TreeConfig(3, 100, 250)  # the full deck, the default sizing


def spot_game(config: TreeConfig, seed: int) -> subgame.Subgame:
  deck = DECK if config.deck_size == DECK.size else cards.FULL_DECK
  rng = np.random.default_rng(seed)
  board = tuple(int(c) for c in rng.choice(deck.cards, 5 if config.street == 3 else 4, replace=False))
  ranges = [rng.random(1326) * (rng.random(1326) < 0.7) for _ in range(2)]
  return subgame.build_subgame(config, board, ranges, deck, jnp.float64)


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


def to_edges(tree: subgame.PublicTree, rows) -> tuple:
  """The inverse of `decision_rows`: [D, A, H] by decision node and action -> per depth d >= 1 [n_d, H]
  (0 on edges that no decision node owns)."""
  rows = np.asarray(rows)
  edges, r = [], 0
  for d, sizes in enumerate(tree.level_sizes[:-1]):
    following = sum(tree.level_sizes[d + 1])
    edge = np.zeros((following + 1, rows.shape[-1]))
    m = sizes[0]
    np.add.at(edge, np.asarray(tree.children[d]).reshape(-1), rows[r : r + m].reshape(-1, rows.shape[-1]))
    edges.append(jnp.asarray(edge[:following]))
    r += m
  return tuple(edges)


def fused_state(tree, plain_state):
  """The plain solver's state in the fused solver's per-edge layout."""
  depths = range(len(tree.level_sizes) - 1)
  per_depth = lambda x: tuple(jax.tree.map(lambda leaf, d=d: to_edges(tree, leaf)[d], x) for d in depths)
  return _FusedState(
    plain_state.iteration,
    to_edges(tree, plain_state.cumulative_regret),
    to_edges(tree, plain_state.cumulative_policy),
    per_depth(plain_state.rule_state),
  )


# Each case compiles three programs for two trees (about 40 s): all fourteen run with -m slow. By
# default the fused solver is checked against OpenSpiel's universal_poker (tests/test_poker_subgame.py).
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
      ours = fused_state(game.tree, state)
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
        np.where(legal, decision_rows(game.tree, after.cumulative_regret), 0),
        np.where(legal, expected.cumulative_regret, 0),
        rtol=1e-9,
        atol=1e-12 * scale,
      )
      weights = np.asarray(expected.cumulative_policy)
      np.testing.assert_allclose(
        np.where(legal, decision_rows(game.tree, after.cumulative_policy), 0),
        np.where(legal, weights, 0),
        rtol=1e-9,
        atol=1e-12 * np.abs(weights).max(),
      )
      assert int(after.iteration) == int(expected.iteration)


def test_decision_rows_lay_edges_out_by_node_and_action():
  """Each decision node's row holds its children's edges in action order, 0 on padding actions."""
  game = spot_game(TURN, 3)
  tree = game.tree
  edges = tuple(
    jnp.arange(sum(sizes), dtype=jnp.float64)[:, None] + 1000 * (d + 1) + jnp.zeros((1, game.num_hands))
    for d, sizes in enumerate(tree.level_sizes[1:])
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
