"""The public-tree solver in its plainest form, the reference that `jaxcfr.poker.subgame.solver`'s fused
per-edge passes are checked against: regrets and strategies `[D, A, H]` by decision node and action,
each half-iteration a full reach pass (`subgame.reach_probabilities`) and a full counterfactual-value
pass (`subgame.counterfactual_values`, itself checked against OpenSpiel), then the regret rule over
the whole array on the updating player's rows."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcfr import algorithms, solvers
from jaxcfr.poker import defaults
from jaxcfr.poker.subgame import game as subgame_module
from jaxcfr.poker.subgame.game import Subgame
from jaxcfr.protocol import Solver


class SubgameState(NamedTuple):
  """Solver state over a public tree."""

  iteration: jax.Array  # [] int32: iterations completed
  cumulative_regret: jax.Array  # [D, A, H]
  cumulative_policy: jax.Array  # [D, A, H]: weighted sum of reach-weighted current strategies
  rule_state: Any  # the regret rule's own state, leaves [D, A, H] (PCFR+'s prediction) or ()


def match(regret: jax.Array, legal: jax.Array) -> jax.Array:
  """Regret matching over the action axis: [D, A, H] positive regret normalised; uniform over the
  legal actions (legal [D, A, 1]) where none is positive."""
  return normalize(jnp.maximum(regret, 0), legal)


def normalize(weights: jax.Array, legal: jax.Array) -> jax.Array:
  """[D, A, H] weights normalised over the legal actions; uniform where they sum to 0."""
  weights = jnp.where(legal, weights, 0)
  total = weights.sum(1, keepdims=True)
  uniform = (legal / legal.sum(1, keepdims=True)).astype(weights.dtype)
  return jnp.where(total > 0, weights / jnp.where(total > 0, total, 1), uniform)


def reference_solver(algorithm: str, **hyperparameters) -> Solver:
  """The public-tree solver of a full-width algorithm of the registry (validated hyper-parameters,
  defaults for the rest), e.g. `subgame_solver('dcfr', alpha=1.5)`."""
  entry = algorithms.get(algorithm)
  if entry.family != algorithms.FULL_WIDTH:
    full_width = ', '.join(algorithms.names(algorithms.FULL_WIDTH))
    raise ValueError(f'a subgame is solved by a full-width algorithm ({full_width}); got {algorithm!r}')
  config = entry.resolve(**{**defaults.SUBGAME_HYPERPARAMETERS.get(entry.name, {}), **hyperparameters})
  alternating = config.pop('alternating')
  rule, power = solvers.regret_rule(algorithm, **config)
  groups = ((0,), (1,)) if alternating else ((0, 1),)

  def init(game: Subgame, key: jax.Array | None = None) -> SubgameState:
    del key  # nothing is sampled
    zeros = jnp.zeros((game.tree.num_decisions, game.tree.num_actions, game.num_hands), game.dtype)
    return SubgameState(jnp.zeros((), jnp.int32), zeros, zeros, rule.init(zeros))

  def current_policy(state: SubgameState, game: Subgame) -> jax.Array:
    return match(rule.matched_regret(state.cumulative_regret, state.rule_state), game.tree.legal)

  def average_policy(state: SubgameState, game: Subgame) -> jax.Array:
    return normalize(state.cumulative_policy, game.tree.legal)

  def update(state: SubgameState, game: Subgame) -> SubgameState:
    t = state.iteration + 1
    dtype = state.cumulative_policy.dtype
    keep = jnp.power((t - 1).astype(dtype) / t.astype(dtype), jnp.asarray(power, dtype))
    increment = jnp.zeros_like(state.cumulative_policy)
    for players in groups:
      policy = current_policy(state, game)
      reach = subgame_module.reach_probabilities(game, policy)
      instant = jnp.zeros_like(policy)
      for player in players:
        _, regret = subgame_module.counterfactual_values(game, policy, reach, player)
        rows = (game.tree.decision_player == player)[:, None, None]
        instant = instant + regret
        own = subgame_module.own_reach(game.tree, reach, player)[:, None, :]
        increment = increment + jnp.where(rows, own * policy, 0)
      rows = jnp.isin(game.tree.decision_player, jnp.asarray(players))[:, None, None]
      cumulative, _, rule_state = rule.update(state.cumulative_regret, instant, state.rule_state, t)
      on_rows = functools.partial(jnp.where, rows)
      state = state._replace(
        cumulative_regret=on_rows(cumulative, state.cumulative_regret),
        rule_state=jax.tree.map(on_rows, rule_state, state.rule_state),
      )
    return state._replace(iteration=t, cumulative_policy=state.cumulative_policy * keep + increment)

  return Solver(
    init,
    update,
    current_policy,
    average_policy,
    name=algorithm,
    hyperparameters={'alternating': alternating, **config},
  )
