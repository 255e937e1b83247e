"""The full-width CFR family as pure `init/update` pairs with composable regret rules.

A regret rule is a chain of small transforms of the cumulative regret `R`
and the instantaneous regret `r` of one iteration `t = 1, 2, ...`, in the
spirit of optax's `chain`. A transform may keep state of its own (the
prediction of the optimistic rules), which the solver state carries in
`CFRState.rule_state` without the other rules knowing of it:

    cfr        = chain(accumulate())
    cfr_plus   = chain(accumulate(), clip_negative())
    linear_cfr = chain(weight_by_iteration(1), accumulate())
    dcfr       = chain(accumulate(), discount(alpha, beta))
    pcfr_plus  = chain(accumulate(), clip_negative(), predict())
    dcfr_plus  = chain(accumulate(), clip_negative(), discount(alpha, offset=1.5))
    pdcfr_plus = chain(accumulate(), clip_negative(), discount(alpha), predict())

Discounts apply once iteration t's regret is added, with t's factor d(t),
so `cumulative_regret` is what iteration t + 1 adds to. The DCFR+ and
PDCFR+ papers (and their code) keep the undiscounted R^t and apply the same
d(t) at the start of iteration t + 1: the stored regret is their R^t d(t),
the policies are the same (d(t) > 0, and regret matching is scale-free
within an infoset), and PDCFR+'s optimistic policy `[R^t d(t) + r^t]+`
becomes `[cumulative_regret + prediction]+`, as in PCFR+, with no need to
know which players have already updated within the iteration.

The average strategy weights iteration t by `t ** averaging_power` (0 for
CFR, 1 for CFR+ and Linear CFR, gamma for DCFR, 2 for PCFR+, 4 for DCFR+, 5
for PDCFR+), kept as a running discount `((t - 1) / t) ** power` so that
magnitudes stay bounded.

Updates alternate between players by default (player 0 updates, then player
1 sees player 0's new strategy, ...), as OpenSpiel's solvers do.
Hyper-parameters may be traced values, so `jax.vmap` over a grid of them
solves many configurations in one compiled program.

Shapes: I infosets, A the most actions at any infoset.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcfr import algorithms, sequence_form, tree
from jaxcfr.compiler import CompiledGame
from jaxcfr.protocol import Solver
from jaxcfr.protocol import run as run  # `solvers.run` is the protocol's loop

RuleState = Any  # a pytree whose leaves have a leading infoset axis: [I, ...]


class CFRState(NamedTuple):
  """Solver state of the CFR family."""

  iteration: jax.Array  # [] int32: iterations completed
  cumulative_regret: jax.Array  # [I, A]: what the next iteration adds its regret to
  cumulative_policy: jax.Array  # [I, A]: weighted sum of reach-weighted current policies
  policy_compensation: jax.Array  # [I, A]: Kahan compensation of `cumulative_policy`
  # The regret rule's own state (`RegretTransform.init`), leaves [I, ...]: none for CFR, CFR+, LCFR,
  # DCFR and DCFR+ (`()`, `((), ())`, ...); ((), (), prediction [I, A]) for PCFR+, and
  # ((), (), (), prediction [I, A]) for PDCFR+.
  rule_state: RuleState


class RegretTransform(NamedTuple):
  """One step of a regret rule, with state of its own as in optax.

  `init(cumulative_regret) -> state`: the step's state from the `[I, A]`
    zeros the solver starts from; `()` for a stateless step. Leaves must
    have a leading infoset axis `[I, ...]`: an alternating update keeps the
    rows of the players that do not update.
  `update(cumulative, instant, state, t) -> (cumulative, instant, state)`:
    the `[I, A]` cumulative and instantaneous regret after this step, at
    iteration `t` (`[]` int32, from 1), and the step's new state.
  `matched_regret(cumulative, state) -> [I, A]`: the regret that regret
    matching turns into the current policy (the cumulative regret itself,
    unless the step is optimistic).
  """

  init: Callable[[jax.Array], RuleState]
  update: Callable[[jax.Array, jax.Array, RuleState, jax.Array], tuple[jax.Array, jax.Array, RuleState]]
  matched_regret: Callable[[jax.Array, RuleState], jax.Array] = lambda cumulative, state: cumulative


# Regret transforms.


def stateless(
  step: Callable[[jax.Array, jax.Array, jax.Array], tuple[jax.Array, jax.Array]],
) -> RegretTransform:
  """A transform from `step(cumulative, instant, t) -> (cumulative, instant)`."""

  def update(cumulative, instant, state, t):
    return (*step(cumulative, instant, t), state)

  return RegretTransform(lambda cumulative: (), update)


def accumulate() -> RegretTransform:
  """R <- R + r."""
  return stateless(lambda cumulative, instant, t: (cumulative + instant, instant))


def clip_negative() -> RegretTransform:
  """R <- max(R, 0) (regret matching+)."""
  return stateless(lambda cumulative, instant, t: (jnp.maximum(cumulative, 0), instant))


def weight_by_iteration(power=1.0) -> RegretTransform:
  """r <- t^power * r (Linear CFR with power 1)."""

  def step(cumulative, instant, t):
    return cumulative, instant * jnp.power(t.astype(instant.dtype), power)

  return stateless(step)


def discount(alpha=1.5, beta=0.0, offset=1.0) -> RegretTransform:
  """Positive R times t^alpha / (t^alpha + offset), negative R times t^beta / (t^beta + offset).

  `offset` is 1 in DCFR and PDCFR+; DCFR+'s reference code uses 1.5.
  """

  def step(cumulative, instant, t):
    t = t.astype(cumulative.dtype)
    positive = 1 / (1 + offset * jnp.power(t, -jnp.asarray(alpha, cumulative.dtype)))
    negative = 1 / (1 + offset * jnp.power(t, -jnp.asarray(beta, cumulative.dtype)))
    return cumulative * jnp.where(cumulative > 0, positive, negative), instant

  return stateless(step)


def predict() -> RegretTransform:
  """Optimistic regret matching: match R + m, where the prediction m of the
  next instantaneous regret is the latest one (Farina, Kroer & Sandholm 2021).

  State: the prediction `[I, A]`.
  """
  return RegretTransform(
    init=jnp.zeros_like,
    update=lambda cumulative, instant, prediction, t: (cumulative, instant, instant),
    matched_regret=lambda cumulative, prediction: cumulative + prediction,
  )


def chain(*transforms: RegretTransform) -> RegretTransform:
  """The transforms one after another; the state is the tuple of theirs."""

  def init(cumulative):
    return tuple(step.init(cumulative) for step in transforms)

  def update(cumulative, instant, states, t):
    new_states = []
    for step, state in zip(transforms, states, strict=True):
      cumulative, instant, state = step.update(cumulative, instant, state, t)
      new_states.append(state)
    return cumulative, instant, tuple(new_states)

  def matched_regret(cumulative, states):
    for step, state in zip(transforms, states, strict=True):
      cumulative = step.matched_regret(cumulative, state)
    return cumulative

  return RegretTransform(init, update, matched_regret)


# Policies.


def regret_matching(regret: jax.Array, legal_mask: jax.Array) -> jax.Array:
  """`[I, A]` policy proportional to positive regret; uniform over legal
  actions where no regret is positive."""
  return normalize_policy(jnp.maximum(regret, 0), legal_mask)


def normalize_policy(weights: jax.Array, legal_mask: jax.Array) -> jax.Array:
  """`[I, A]` weights normalised over legal actions; uniform where they sum to 0."""
  weights = jnp.where(legal_mask, weights, 0)
  total = weights.sum(-1, keepdims=True)
  uniform = (legal_mask / legal_mask.sum(-1, keepdims=True)).astype(weights.dtype)
  return jnp.where(total > 0, weights / jnp.where(total > 0, total, 1), uniform)


def average_policy(state: CFRState, game: CompiledGame) -> jax.Array:
  """`[I, A]` average strategy (the output of CFR-family solvers)."""
  return normalize_policy(state.cumulative_policy, game.legal_mask)


# One pass for one player.


def player_regrets(game: CompiledGame, policy: jax.Array, player: int) -> tuple[jax.Array, jax.Array]:
  """Instantaneous counterfactual regrets of `player` under `policy`.

  Returns:
    regret: `[I, A]`, sum over histories h of infoset I of the opponents' and
      chance's reach of h times (v(h.a) - v(h)), on `player`'s rows, else 0.
    reach_policy: `[I, A]`, sum over h in I of `player`'s own reach of h times
      policy(I, a): what the average strategy accumulates.

  Sums over sequences when the game has a `sequence_form` (perfect recall),
  else over histories, depth by depth (`history_regrets`).
  """
  if game.sequence_form is not None:
    return sequence_form.player_regrets(game, policy, player)
  return history_regrets(game, policy, player)


def history_regrets(game: CompiledGame, policy: jax.Array, player: int) -> tuple[jax.Array, jax.Array]:
  """`player_regrets` by a top-down and a bottom-up pass over the histories."""
  probs = tree.transition_probs(game, policy)
  acting = [game.player[d] == player for d in range(game.num_depths)]
  factors = [
    jnp.stack([jnp.where(a[:, None], p, 1), jnp.where(a[:, None], 1, p)], axis=-1)
    for a, p in zip(acting, probs, strict=True)
  ]
  reach = tree.top_down(game, factors, jnp.ones((2,), policy.dtype))  # [H_d, 2]: own, others
  num_slots = game.legal_actions.shape[-1]
  values = game.utility[-1][:, player]
  rows = {}
  for d in reversed(range(game.num_depths - 1)):
    below = tree.child_values(game, d, values)  # [H_d, W_d]
    values = game.utility[d][:, player] + (probs[d] * below).sum(-1)
    if d not in game.player_depths[player]:
      continue
    own = jnp.where(acting[d], reach[d][:, 0], 0)
    others = jnp.where(acting[d], reach[d][:, 1], 0)
    # Column 0: own reach (the average needs policy(I, a) * sum over h in I of it); then regrets by slot.
    rows[d] = jnp.concatenate([own[:, None], others[:, None] * (below - values[:, None])], axis=1)
  if not rows:
    zeros = jnp.zeros(game.legal_mask.shape, policy.dtype)
    return zeros, zeros
  sums = tree.infoset_sums(game, rows, 1 + num_slots)  # [I, 1 + L]
  return tree.to_actions(game, sums[:, 1:]), sums[:, :1] * policy


# The family.


def cfr_family(regret_rule: RegretTransform, averaging_power=0.0, alternating: bool = True) -> Solver:
  """Builds a CFR-family solver (registry name 'custom').

  Args:
    regret_rule: how iteration t's instantaneous regret enters the
      cumulative regret, and what regret matching sees (see `chain`).
    averaging_power: the average strategy weights iteration t by t**power.
    alternating: update one player at a time (default) or all at once.
  """

  def init(game: CompiledGame, key: jax.Array | None = None) -> CFRState:
    del key  # full-width: nothing is sampled
    zeros = jnp.zeros(game.legal_mask.shape, game.dtype)
    return CFRState(jnp.zeros((), jnp.int32), zeros, zeros, zeros, regret_rule.init(zeros))

  def current_policy(state: CFRState, game: CompiledGame) -> jax.Array:
    return regret_matching(
      regret_rule.matched_regret(state.cumulative_regret, state.rule_state), game.legal_mask
    )

  def update(state: CFRState, game: CompiledGame) -> CFRState:
    t = state.iteration + 1
    dtype = state.cumulative_policy.dtype
    keep = jnp.power((t - 1).astype(dtype) / t.astype(dtype), jnp.asarray(averaging_power, dtype))
    groups = [[p] for p in range(game.num_players)] if alternating else [list(range(game.num_players))]
    increment = jnp.zeros_like(state.cumulative_policy)  # players' rows are disjoint: exact sum
    for players in groups:
      policy = current_policy(state, game)
      instant = jnp.zeros_like(policy)
      for player in players:
        regret, reach_policy = player_regrets(game, policy, player)
        instant = instant + regret
        increment = increment + reach_policy
      rows = jnp.isin(game.infoset_player, jnp.asarray(players))  # [I]: the updating players' infosets
      cumulative_regret, _, rule_state = regret_rule.update(
        state.cumulative_regret, instant, state.rule_state, t
      )
      state = state._replace(
        cumulative_regret=_on_rows(rows, cumulative_regret, state.cumulative_regret),
        rule_state=jax.tree.map(functools.partial(_on_rows, rows), rule_state, state.rule_state),
      )
    cumulative_policy, compensation = _compensated_add(
      state.cumulative_policy * keep, state.policy_compensation * keep, increment
    )
    return state._replace(iteration=t, cumulative_policy=cumulative_policy, policy_compensation=compensation)

  return Solver(
    init,
    update,
    current_policy,
    average_policy,
    hyperparameters={'averaging_power': averaging_power, 'alternating': alternating},
  )


def _on_rows(rows: jax.Array, new: jax.Array, old: jax.Array) -> jax.Array:
  """`new` on the infosets where `rows` (`[I]`) holds, `old` elsewhere; arrays `[I, ...]`."""
  return jnp.where(rows.reshape(rows.shape + (1,) * (new.ndim - 1)), new, old)


def _compensated_add(total: jax.Array, compensation: jax.Array, value: jax.Array):
  """Kahan summation: the average strategy sums millions of small terms, which
  plain float32 addition would round away once the total is large."""
  corrected = value - compensation
  new_total = total + corrected
  return new_total, (new_total - total) - corrected


def _named(solver: Solver, name: str, **hyperparameters) -> Solver:
  return dataclasses.replace(solver, name=name, hyperparameters=hyperparameters)


def regret_rule(algorithm: str, **hyperparameters) -> tuple[RegretTransform, Any]:
  """The regret rule and the averaging power of a full-width algorithm, by registry name; the
  CFR family here and the poker layer's public-tree solver build on them.

  `hyperparameters` are the algorithm's own (alpha, beta, gamma), traced values allowed.
  """
  h = hyperparameters
  if algorithm == 'cfr':
    return accumulate(), 0.0
  if algorithm == 'cfr+':
    return chain(accumulate(), clip_negative()), 1.0
  if algorithm == 'lcfr':
    return chain(weight_by_iteration(1.0), accumulate()), 1.0
  if algorithm == 'dcfr':
    return chain(accumulate(), discount(h['alpha'], h['beta'])), h['gamma']
  if algorithm == 'pcfr+':
    return chain(accumulate(), clip_negative(), predict()), 2.0
  if algorithm == 'dcfr+':
    return chain(accumulate(), clip_negative(), discount(h['alpha'], offset=_DCFR_PLUS_OFFSET)), h['gamma']
  if algorithm == 'pdcfr+':
    return chain(accumulate(), clip_negative(), discount(h['alpha']), predict()), h['gamma']
  raise ValueError(f'{algorithm!r} is not a full-width CFR-family algorithm')


def cfr(alternating: bool = True) -> Solver:
  """Vanilla CFR (Zinkevich et al. 2007); OpenSpiel's `CFRSolver`."""
  return _named(cfr_family(*regret_rule('cfr'), alternating), 'cfr', alternating=alternating)


def cfr_plus(alternating: bool = True) -> Solver:
  """CFR+ (Tammelin 2014): RM+ and linear averaging; OpenSpiel's `CFRPlusSolver`."""
  return _named(cfr_family(*regret_rule('cfr+'), alternating), 'cfr+', alternating=alternating)


def linear_cfr(alternating: bool = True) -> Solver:
  """Linear CFR (Brown & Sandholm 2019): regrets and average weighted by t."""
  return _named(cfr_family(*regret_rule('lcfr'), alternating), 'lcfr', alternating=alternating)


def dcfr(alpha=1.5, beta=0.0, gamma=2.0, alternating: bool = True) -> Solver:
  """Discounted CFR (Brown & Sandholm 2019); OpenSpiel's `DCFRSolver`."""
  _check_hyperparameters('dcfr', alpha=alpha, beta=beta, gamma=gamma)
  solver = cfr_family(*regret_rule('dcfr', alpha=alpha, beta=beta, gamma=gamma), alternating)
  return _named(solver, 'dcfr', alternating=alternating, alpha=alpha, beta=beta, gamma=gamma)


def pcfr_plus(alternating: bool = True) -> Solver:
  """Predictive CFR+ (Farina, Kroer & Sandholm 2021): quadratic averaging."""
  return _named(cfr_family(*regret_rule('pcfr+'), alternating), 'pcfr+', alternating=alternating)


# DCFR+'s reference code (Xu et al. 2024) discounts by t^alpha / (t^alpha + 1.5), not DCFR's + 1.
_DCFR_PLUS_OFFSET = 1.5


def dcfr_plus(alpha=1.5, gamma=4.0, alternating: bool = True) -> Solver:
  """DCFR+ (Xu et al. 2024): RM+ with DCFR's discount of the (positive) regrets.

  R^t = [R^(t-1) + r^t]+ * t^alpha / (t^alpha + 1.5), and iteration t's
  strategy weighs t^gamma in the average.
  """
  _check_hyperparameters('dcfr+', alpha=alpha, gamma=gamma)
  solver = cfr_family(*regret_rule('dcfr+', alpha=alpha, gamma=gamma), alternating)
  return _named(solver, 'dcfr+', alternating=alternating, alpha=alpha, gamma=gamma)


def pdcfr_plus(alpha=2.3, gamma=5.0, alternating: bool = True) -> Solver:
  """Predictive DCFR+ (Xu et al. 2024): DCFR+'s discount with PCFR+'s prediction.

  R^t = [R^(t-1) + r^t]+ * t^alpha / (t^alpha + 1); the next policy regret-
  matches R^t + r^t; iteration t's strategy weighs t^gamma in the average.
  """
  _check_hyperparameters('pdcfr+', alpha=alpha, gamma=gamma)
  solver = cfr_family(*regret_rule('pdcfr+', alpha=alpha, gamma=gamma), alternating)
  return _named(solver, 'pdcfr+', alternating=alternating, alpha=alpha, gamma=gamma)


def _check_hyperparameters(algorithm: str, **values) -> None:
  """Rejects out-of-range Python numbers by the registry's schema; traced values (a `vmap`
  over a grid of hyper-parameters) pass through."""
  entry = algorithms.REGISTRY[algorithm]
  for name, value in values.items():
    if isinstance(value, numbers.Real):
      entry.parameter(name).check(value, algorithm)
