"""Safe re-solving (`jaxcfr.poker.subgame.resolving.safe_subgame_solver`): the gadget's update follows its
rule, checked against the evaluation code that the oracle tests check against OpenSpiel
(`subgame.counterfactual_values`), and a re-solve keeps every hand of the opponent at or below its
alternative, which the unsafe solver, answering a prior that leaves hands out, does not."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_poker_solver import RIVER, spot_game

import jaxcfr
from jaxcfr.poker.defaults import PRIOR_SHARE
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import showdown
from jaxcfr.poker.subgame.resolving import GADGETS, safe_subgame, safe_subgame_solver
from jaxcfr.poker.subgame.solver import subgame_solver
from jaxcfr.poker.subgame.tree import TreeConfig, street_sizes


@functools.cache
def _programs(gadget):
  solver = subgame_solver('dcfr') if gadget is None else safe_subgame_solver('dcfr', gadget)
  run = jax.jit(lambda state, game, n: jaxcfr.run(solver, state, game, n))
  return solver, run


@jax.jit
def _cf_values(game, policy, opponent_reach):
  """Player 0's counterfactual values at the root [H] under `policy`, with player 0's range replaced
  by `opponent_reach` (its own reach does not enter them) and player 1's own."""
  spot = game.spot
  game = subgame.Subgame(
    game.tree, type(spot)(**{**vars(spot), 'ranges': spot.ranges.at[0].set(opponent_reach)})
  )
  reach = subgame.reach_probabilities(game, policy)
  return subgame.counterfactual_values(game, policy, reach, 0)[0]


@functools.partial(jax.jit, static_argnums=2)
def _best_response(game, policy, opponent):
  reach = subgame.reach_probabilities(game, policy)
  return subgame.counterfactual_values(game, policy, reach, opponent, best_response=True)[0]


def _gains(game, policy, opponent):
  """Per hand of `opponent`: its best-response value against `policy` minus its alternative, per unit
  of the other player's compatible range, in chips [H]; and that compatible mass [H]."""
  best = _best_response(game.game, policy, opponent)
  own = game.game.spot.ranges[1 - opponent]
  mass = np.asarray(showdown.compatible_mass(game.game.spot.hands, own[None])[0])
  return (np.asarray(best) - np.asarray(game.alternatives)) / mass, mass


# Each gadget compiles its own solver (a slow compile): Maxmargin by default, Resolve
# with -m slow (its rule's branch is also run by the search bot's tests).
DEFAULT_GADGETS = [pytest.param(g, marks=() if g == 'maxmargin' else pytest.mark.slow) for g in GADGETS]
# The gadgets that guarantee no hand more than its alternative (Maxmargin-prior trades that for the
# prior's value: test_depth_limited has its test).
SAFE_GADGETS = [p for p in DEFAULT_GADGETS if p.values[0] != 'maxmargin-prior']
SMALL_RIVER = TreeConfig(3, 100, 250, (street_sizes('50%,a', '2x'),) * 3)


@pytest.mark.parametrize('gadget', DEFAULT_GADGETS)
def test_one_gadget_update_follows_its_rule(gadget):
  """From `init` (uniform strategies, no gadget regret), the opponent (player 0, the first to update)
  enters with each hand uniformly (Maxmargin: reach 1/H per unit of the compatible mass; Resolve: half
  of its prior); the subgame's update is the plain solver's on the game with that reach; the gadget's
  regrets are its rule applied to the root values of the uniform strategy."""
  game = spot_game(SMALL_RIVER, 3)
  legal = np.asarray(game.tree.legal)
  uniform = jnp.asarray(legal / legal.sum(1, keepdims=True) * np.ones((1, 1, game.num_hands)))
  rng = np.random.default_rng(0)
  reference = np.where(legal, rng.random(uniform.shape) + 0.05, 0)
  safe = safe_subgame(game, jnp.asarray(reference / reference.sum(1, keepdims=True)), 0)
  solver, _ = _programs(gadget)
  state = jax.jit(solver.update)(solver.init(safe), safe)

  hands, ranges = game.spot.hands, np.asarray(game.spot.ranges)
  mass = np.asarray(showdown.compatible_mass(hands, jnp.asarray(ranges[1:]))[0])
  prior, count = ranges[0], game.num_hands
  if gadget == 'resolve':
    reach = prior / 2
  else:
    reach = 1 / count / mass
    if gadget == 'maxmargin-prior':
      reach = (1 - PRIOR_SHARE) * reach + PRIOR_SHARE * prior / (prior * mass).sum()
  values = np.asarray(_cf_values(game, uniform, jnp.asarray(reach)))
  alternative = np.asarray(safe.alternatives)
  assert np.abs(values - alternative).max() > 1  # chips: the rule has something to work on
  if gadget != 'resolve':
    margin = (values - alternative) / mass
    expected = np.stack([np.maximum(margin - margin.mean(), 0), np.zeros(count)])
  else:
    mixed = (values + alternative) / 2
    expected = np.maximum(np.stack([values - mixed, alternative - mixed]), 0)
  np.testing.assert_allclose(state.gadget_regret, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())

  plain = subgame_solver('dcfr')
  entered = subgame.Subgame(
    game.tree, type(game.spot)(**{**vars(game.spot), 'ranges': game.spot.ranges.at[0].set(reach)})
  )
  want = jax.jit(plain.update)(plain.init(entered), entered)
  for got, expect in zip(jax.tree.leaves(state.inner), jax.tree.leaves(want), strict=True):
    np.testing.assert_allclose(got, expect, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('gadget', SAFE_GADGETS)
def test_a_safe_re_solve_keeps_every_hand_at_or_below_its_alternative(gadget):
  """The alternatives are the best responses to a weak strategy (3 DCFR iterations' average). After 200
  iterations, no hand of the opponent gains more than 0.5% of the pot over its alternative, and
  Maxmargin gives every hand a margin; the unsafe re-solve of the same game, whose opponent range
  leaves 30% of the hands out, lets some hand gain over 5% of the pot."""
  game = spot_game(SMALL_RIVER, 5)
  pot = SMALL_RIVER.pot
  solver, run = _programs(None)
  weak = solver.average_policy(run(solver.init(game), game, 3), game)
  safe = safe_subgame(game, weak, 1)
  policy = solver.average_policy(run(solver.init(game), game, 200), game)
  unsafe, _ = _gains(safe, policy, 1)
  assert unsafe.max() > 0.05 * pot, unsafe.max()
  solver, run = _programs(gadget)
  policy = solver.average_policy(run(solver.init(safe), safe, 200), safe)
  gains, mass = _gains(safe, policy, 1)
  assert (mass > 0).all()
  assert gains.max() <= 0.005 * pot, gains.max()
  if gadget == 'maxmargin':
    assert gains.max() < 0, gains.max()


def test_alternatives_are_the_best_responses_values():
  """`alternatives` (through `safe_subgame`) at the root: the opponent's best-response counterfactual
  values, whose range-weighted sum over the deals' weight is its best-response payoff per deal
  (`subgame`'s)."""
  game = spot_game(RIVER, 7)
  legal = np.asarray(game.tree.legal)
  policy = jnp.asarray(legal / legal.sum(1, keepdims=True) * np.ones((1, 1, game.num_hands)))
  best = jax.jit(subgame.best_response_values)(game, policy)
  for opponent in (0, 1):
    values = safe_subgame(game, policy, opponent).alternatives
    total = (game.spot.ranges[opponent] * values).sum() / subgame.normalizer(game)
    np.testing.assert_allclose(total, best[opponent], rtol=1e-12)
