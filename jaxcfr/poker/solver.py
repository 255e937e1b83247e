"""CFR-family solvers over a public tree: every hand of a player updated at once.

The regret rules are the full-width family's (`solvers.regret_rule`: CFR+, DCFR, PCFR+, ...); what
differs is the layout. Regrets and the average strategy's weights are kept per **edge**: the row of
a node below a decision holds the regret and the accumulated reach of the action that leads to it,
`[e_d, H]` per depth d (hands last, dense along them): the depth's rows in `PublicTree.edge_bounds`,
which leave out the nodes that chance deals into (they have no action, so nothing to keep). That
layout has no padding to the widest node, and a player's half-iteration is one top-down pass
(strategies by regret matching over each node's children, both players' reaches, the average's
increments) and one bottom-up pass (values, and the regret update of each depth's edges as soon as
the depth above has its values), so XLA fuses each depth's work into a few loops over arrays that
stay in cache. Updates alternate between the players, as the full-width family's do by default.

    solver = subgame_solver('dcfr')
    state = solver.init(game)
    state = jax.jit(lambda s, g: jaxcfr.run(solver, s, g, 100))(state, game)
    policy = solver.average_policy(state, game)        # [D, A, H]

The returned `Solver` follows the protocol, so `jaxcfr.train` runs it with budgets, progress,
checkpoints and exploitability checks (`Subgame.evaluate_profile`); its policies come out in the
`[D, A, H]` layout of the decision nodes that `subgame` evaluates.

Safe re-solving: `safe_subgame_solver(algorithm, gadget)` solves a `SafeSubgame` (`safe_subgame(game,
replaced, opponent)`), in which a gadget before the root lets the opponent take, hand by hand, its
best-response value against the strategy being replaced instead of entering (Resolve or Maxmargin).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcfr import algorithms, backend, solvers
from jaxcfr.poker import defaults, showdown
from jaxcfr.poker import subgame as subgame_module
from jaxcfr.poker.subgame import PublicTree, Subgame, policy_edges, take, take_padded
from jaxcfr.poker.tree import CHANCE, DECISION, FOLD, SHOWDOWN
from jaxcfr.protocol import Solver


class SubgameState(NamedTuple):
  """Solver state over a public tree, per depth d = 1 .. L - 1 (the root has no edge)."""

  iteration: jax.Array  # [] int32: iterations completed
  cumulative_regret: tuple[jax.Array, ...]  # per depth [e_d, H]: of the action into each node
  cumulative_policy: tuple[jax.Array, ...]  # per depth [e_d, H]: weighted sum of the acting player's reach
  rule_state: Any  # the regret rule's own state per depth (PCFR+'s prediction [e_d, H]) or ()


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


def decision_rows(tree: PublicTree, edges) -> jax.Array:
  """[D, A, H]: per-edge arrays (per depth d >= 1, [e_d, H]: the rows in `tree.edge_bounds`) laid out
  by decision node and action (0 on the padding actions)."""
  rows = []
  for d, sizes in enumerate(tree.level_sizes[:-1]):
    if sizes[DECISION]:  # edges[d]: the edges into depth d + 1; padding children read the zero row
      rows.append(take_padded(edges[d], tree.children[d] - tree.edge_bounds[d + 1][0]))
  return jnp.concatenate(rows)


def edge_rows(tree: PublicTree, nodes) -> list[jax.Array]:
  """Per depth d >= 1 the rows in `tree.edge_bounds` of per-node arrays (per depth d >= 1, [n_d, ...])."""
  return [x[slice(*bounds)] for x, bounds in zip(nodes, tree.edge_bounds[1:], strict=True)]


def all_rows(tree: PublicTree, edge: jax.Array, depth: int) -> jax.Array:
  """[n_d, H]: edge probabilities `edge` [e_d, H] of `depth` over all its nodes (1 into the nodes that
  chance deals into)."""
  start, stop = tree.edge_bounds[depth]
  return jnp.pad(edge, ((start, sum(tree.level_sizes[depth]) - stop), (0, 0)), constant_values=1)


def _edge_strategy(tree: PublicTree, weights: jax.Array, depth: int) -> jax.Array:
  """[e_d, H]: the probability of the action into each node of `depth` (>= 1) with an edge, from
  non-negative `weights` [e_d, H] normalised over each decision node's children (uniform over its legal
  actions where they sum to 0); 1 into the children of chance nodes."""
  start = sum(sizes[DECISION] for sizes in tree.level_sizes[: depth - 1])
  rows = tree.level_sizes[depth - 1][DECISION]
  first, stop = tree.edge_bounds[depth]
  from_decision = tree.parent_player[depth][first:stop] < 2  # [e_d]
  if not rows:
    return jnp.ones_like(weights)
  weights = jnp.where(from_decision[:, None], weights, 0)
  total = take_padded(weights, tree.children[depth - 1] - first).sum(1)  # [m, H]
  legal = tree.legal[start : start + rows, :, 0].sum(1).astype(weights.dtype)  # [m]
  parent = jnp.where(from_decision, tree.parent[depth][first:stop], 0)
  total = take(total, parent)
  strategy = jnp.where(total > 0, weights / jnp.where(total > 0, total, 1), (1 / legal)[parent][:, None])
  return jnp.where(from_decision[:, None], strategy, 1)


def subgame_solver(algorithm: str = defaults.ALGORITHM, **hyperparameters) -> Solver:
  """The public-tree solver of a full-width algorithm of the registry (validated hyper-parameters,
  defaults for the rest: `defaults.SUBGAME_HYPERPARAMETERS`, else the registry's), e.g.
  `subgame_solver('dcfr', alpha=1.5)`."""
  return _build(algorithm, hyperparameters)[0]


def subgame_warm_start(algorithm: str = defaults.ALGORITHM, **hyperparameters):
  """`warm_start(state, game, policy, iterations) -> state` for `subgame_solver(algorithm,
  **hyperparameters)`: `iterations` updates in which both players play `policy` [D, A, H] (a warm
  start's strategy, e.g. the blueprint's) instead of their regret-matched strategies. From `init`,
  the state is then the one the algorithm would hold had it played `policy` that many times: the
  regrets of `policy` against itself, accumulated and discounted by the algorithm's rule, and the
  average strategy `policy` (strategy-based warm starting, Brown & Sandholm 2016). Jittable, the
  count may be traced."""
  return _build(algorithm, hyperparameters)[1]


def _build(algorithm: str, hyperparameters: dict):
  """(the solver, its warm start, its `step(state, game, played) -> (state, root values [2, H])`): see
  `subgame_solver` and `subgame_warm_start`."""
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
    bounds = game.tree.edge_bounds[1:]
    zeros = tuple(jnp.zeros((stop - start, game.num_hands), game.dtype) for start, stop in bounds)
    return SubgameState(jnp.zeros((), jnp.int32), zeros, zeros, tuple(rule.init(z) for z in zeros))

  def strategies(state: SubgameState, game: Subgame) -> list[jax.Array]:
    """Per depth d >= 1 [e_d, H]: the current strategy's probability of each edge."""
    return [
      _edge_strategy(game.tree, jnp.maximum(rule.matched_regret(regret, rule_state), 0), d + 1)
      for d, (regret, rule_state) in enumerate(zip(state.cumulative_regret, state.rule_state, strict=True))
    ]

  def current_policy(state: SubgameState, game: Subgame) -> jax.Array:
    positive = [
      jnp.maximum(rule.matched_regret(regret, rule_state), 0)
      for regret, rule_state in zip(state.cumulative_regret, state.rule_state, strict=True)
    ]
    return match(decision_rows(game.tree, positive), game.tree.legal)

  def average_policy(state: SubgameState, game: Subgame) -> jax.Array:
    return normalize(decision_rows(game.tree, state.cumulative_policy), game.tree.legal)

  def step(state: SubgameState, game: Subgame, played) -> tuple[SubgameState, jax.Array]:
    """One iteration, and each player's counterfactual values at the root [2, H] in it (those of its
    own update's pass); `played` (per depth [e_d, H] edge probabilities, or None) replaces the
    strategy that regret matching gives, for warm starts."""
    tree, spot = game.tree, game.spot
    t = state.iteration + 1
    dtype = spot.ranges.dtype
    keep = jnp.power((t - 1).astype(dtype) / t.astype(dtype), jnp.asarray(power, dtype))
    regrets, weights, rule_states = (list(x) for x in state[1:])
    # Per depth d >= 1 (index d - 1), the parent's actor and position of each row kept in the state.
    edge_actor, edge_parent = edge_rows(tree, tree.parent_player[1:]), edge_rows(tree, tree.parent[1:])
    roots = [None, None]
    for players in groups:
      edge = played
      if edge is None:
        edge = strategies(SubgameState(t, tuple(regrets), (), tuple(rule_states)), game)
      edge = [all_rows(tree, e, d) for d, e in enumerate(edge, 1)]  # per depth [n_d, H]
      # Top-down: both players' reaches. The average's weights of both players' edges gain their own
      # reach in the first half: a player's reach depends on its own strategy only, which the other
      # half does not change (one pass over the weights per iteration instead of two).
      reach = [spot.ranges[None]]  # per depth [n_d, 2, H]
      for d in range(1, len(tree.level_sizes)):
        actor = tree.parent_player[d]  # [n_d]
        step = jnp.where((actor[:, None] == jnp.arange(2))[..., None], edge[d - 1][:, None, :], 1)
        reach.append(
          take(reach[-1], tree.parent[d]) * take(spot.card_mask, tree.edge_card[d])[:, None, :] * step
        )
        if players == groups[0]:  # both players' edges: a player's own reach is the same in both halves
          kept, kept_actor = reach[-1][slice(*tree.edge_bounds[d])], edge_actor[d - 1]
          own = jnp.where(kept_actor[:, None] == 0, kept[:, 0], kept[:, 1])
          weights[d - 1] = jnp.where((kept_actor < 2)[:, None], weights[d - 1] * keep + own, weights[d - 1])
      # Bottom-up, per updating player: values, and each depth's edge regrets once the depth above
      # has its values.
      instant = [jnp.zeros_like(w) for w in weights] if len(players) > 1 else None
      for player in players:
        folds, showdowns = subgame_module.terminal_values(game, reach, player)
        below = None  # [n_{d+1}, H] the next depth's values
        for d in reversed(range(len(tree.level_sizes))):
          sizes = tree.level_sizes[d]
          parts = []
          if sizes[DECISION]:
            own = (tree.parent_player[d + 1] == player)[:, None]
            weighted = jnp.where(own, edge[d] * below, below)  # the opponent's strategy is in its reach
            parts.append(take_padded(weighted, tree.children[d]).sum(1))
          if sizes[CHANCE]:
            a = sum(s[CHANCE] for s in tree.level_sizes[:d])
            parts.append(
              take_padded(below, tree.chance_children[d]).sum(1)
              * tree.chance_weight[a : a + sizes[CHANCE], None]
            )
          a = sum(s[FOLD] for s in tree.level_sizes[:d])
          parts.append(folds[a : a + sizes[FOLD]])
          a = sum(s[SHOWDOWN] for s in tree.level_sizes[:d])
          parts.append(showdowns[a : a + sizes[SHOWDOWN]])
          value = jnp.concatenate(parts)
          if d + 1 < len(tree.level_sizes):
            mine = (edge_actor[d] == player)[:, None]
            parent = jnp.where(edge_actor[d] < 2, edge_parent[d], 0)
            regret = jnp.where(mine, below[slice(*tree.edge_bounds[d + 1])] - take(value, parent), 0)
            if instant is None:
              cumulative, _, rule_state = rule.update(regrets[d], regret, rule_states[d], t)
              on = functools.partial(jnp.where, mine)
              regrets[d] = on(cumulative, regrets[d])
              rule_states[d] = jax.tree.map(on, rule_state, rule_states[d])
            else:
              instant[d] = instant[d] + regret
          below = value
        roots[player] = below[0]
      if instant is not None:
        for d, regret in enumerate(instant):
          cumulative, _, rule_state = rule.update(regrets[d], regret, rule_states[d], t)
          on = functools.partial(jnp.where, (edge_actor[d] < 2)[:, None])
          regrets[d] = on(cumulative, regrets[d])
          rule_states[d] = jax.tree.map(on, rule_state, rule_states[d])
    return SubgameState(t, tuple(regrets), tuple(weights), tuple(rule_states)), jnp.stack(roots)

  def update(state: SubgameState, game: Subgame) -> SubgameState:
    return step(state, game, None)[0]

  def warm_start(state: SubgameState, game: Subgame, policy: jax.Array, iterations) -> SubgameState:
    played = edge_rows(game.tree, policy_edges(game.tree, policy))
    return jax.lax.fori_loop(0, iterations, lambda _, s: step(s, game, played)[0], state)

  solver = Solver(
    init,
    update,
    current_policy,
    average_policy,
    name=algorithm,
    hyperparameters={'alternating': alternating, **config},
  )
  return solver, warm_start, step


# Safe re-solving: a gadget lets the opponent choose its hands at the root.

GADGETS = defaults.GADGETS


@dataclasses.dataclass(frozen=True)
class SafeSubgame:
  """A subgame to re-solve safely: `game` (its ranges: the player's own, and the opponent's prior for
  the Resolve gadget), the `opponent`'s tree player, and `alternatives` [H]: the counterfactual value
  each of the opponent's hands can have instead of entering the subgame (`safe_subgame`: its best
  response to the strategy being replaced, e.g. the blueprint's). Solved by `safe_subgame_solver`."""

  game: Subgame
  alternatives: jax.Array  # [H] the opponent's counterfactual values, in the units of `game`'s values
  opponent: jax.Array  # [] int32: the tree player (0 OOP, 1 IP) whose root reach the gadget chooses

  num_players = 2
  prefers_default_compiler = True

  tree = property(lambda self: self.game.tree)
  spot = property(lambda self: self.game.spot)
  dtype = property(lambda self: self.game.dtype)
  num_hands = property(lambda self: self.game.num_hands)
  name = property(lambda self: self.game.name)
  info = property(lambda self: self.game.info)
  num_infosets = property(lambda self: self.game.num_infosets)
  num_histories = property(lambda self: self.game.num_histories)

  def evaluate_profile(self, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`game`'s (the prior ranges')."""
    return self.game.evaluate_profile(policy)


jax.tree_util.register_dataclass(
  SafeSubgame, data_fields=['game', 'alternatives', 'opponent'], meta_fields=[]
)


def alternatives(game: Subgame, replaced: jax.Array, opponent: int) -> jax.Array:
  """[H] the `opponent`'s alternatives: the counterfactual values at the root of its best response to
  `replaced` [D, A, H] (the strategy the re-solve replaces) for each of its hands. A re-solve that
  keeps every hand at or below these is no more exploitable in this subgame than `replaced` (Burch,
  Johanson & Bowling 2014; Moravcik et al. 2016)."""
  reach = subgame_module.reach_probabilities(game, replaced)
  return subgame_module.counterfactual_values(game, replaced, reach, opponent, best_response=True)[0]


def safe_subgame(game: Subgame, replaced: jax.Array, opponent: int) -> SafeSubgame:
  """`game` to re-solve safely against `replaced` [D, A, H] (`alternatives`, compiled per tree shape)
  for the `opponent` (0 or 1)."""
  values = _alternatives_program()(game, replaced, int(opponent))
  return SafeSubgame(game, values, jnp.asarray(opponent, jnp.int32))


@functools.cache
def _alternatives_program():
  """`alternatives`, jitted (it returns an array: a jitted function that returned a game would carry the
  first traced game's static fields, such as its tree's `TreeInfo`, which compare equal across shapes)."""
  return backend.jit(alternatives, game=Subgame, static_argnums=2)


class SafeState(NamedTuple):
  """The subgame solver's state and the gadget's regrets."""

  inner: SubgameState
  gadget_regret: jax.Array  # [2, H]: Resolve's (enter, take the alternative); Maxmargin's row 0 per hand


def safe_subgame_solver(algorithm: str = defaults.ALGORITHM, gadget: str = 'maxmargin', **hyperparameters):
  """A public-tree solver of `SafeSubgame`s (`subgame_solver(algorithm, **hyperparameters)` inside)
  whose root is preceded by a gadget in which the opponent picks its reach at the root, hand by hand,
  against the alternatives; the player's own range is the game's. Regret matching with floored regrets
  (CFR+'s rule) solves the gadget.

  - 'resolve' (Burch et al. 2014): each of the opponent's hands, weighted by its prior range, enters
    or takes its alternative. At equilibrium no hand gets more than its alternative; below that the
    re-solve plays for the prior's hands.
  - 'maxmargin' (Moravcik et al. 2016): the opponent picks the hands (any distribution) whose gain,
    value over the alternative per unit of the player's compatible range, is largest, so the re-solve
    maximises the smallest margin (minus the gain) over all the opponent's hands, whatever the prior.

  Its policies are the subgame's [D, A, H]; the opponent's average is the gadget's mix, not a
  strategy to play."""
  if gadget not in GADGETS:
    raise ValueError(f'gadget must be one of {", ".join(GADGETS)}, got {gadget!r}')
  inner, _, step = _build(algorithm, hyperparameters)

  def init(game: SafeSubgame, key: jax.Array | None = None) -> SafeState:
    return SafeState(inner.init(game.game, key), jnp.zeros((2, game.num_hands), game.dtype))

  def masses(game: SafeSubgame) -> jax.Array:
    """[H] the player's range on the hands that share no card with each of the opponent's."""
    spot = game.game.spot
    own = jnp.where(game.opponent == 0, spot.ranges[1], spot.ranges[0])
    return showdown.compatible_mass(spot.hands, own[None])[0]

  def entering(state: SafeState, game: SafeSubgame) -> tuple[jax.Array, jax.Array]:
    """(the opponent's reach at the root [H], the gadget's strategy: the share entering [H])."""
    spot, regret = game.game.spot, jnp.maximum(state.gadget_regret, 0)
    if gadget == 'maxmargin':
      total = regret[0].sum()
      share = jnp.where(total > 0, regret[0] / jnp.where(total > 0, total, 1), 1 / game.num_hands)
      mass = masses(game)
      return jnp.where(mass > 0, share / jnp.where(mass > 0, mass, 1), 0), share
    total = regret.sum(0)
    share = jnp.where(total > 0, regret[0] / jnp.where(total > 0, total, 1), 0.5)
    return spot.ranges[game.opponent] * share, share

  def with_reach(game: SafeSubgame, reach: jax.Array) -> Subgame:
    spot = game.game.spot
    ranges = spot.ranges.at[game.opponent].set(reach.astype(spot.ranges.dtype))
    return dataclasses.replace(game.game, spot=dataclasses.replace(spot, ranges=ranges))

  def update(state: SafeState, game: SafeSubgame) -> SafeState:
    reach, share = entering(state, game)
    next_inner, roots = step(state.inner, with_reach(game, reach), None)
    value, alternative = roots[game.opponent], game.alternatives
    if gadget == 'maxmargin':
      mass = masses(game)
      gain = jnp.where(mass > 0, (value - alternative) / jnp.where(mass > 0, mass, 1), 0)  # -margin
      regret = jnp.stack([gain - (share * gain).sum(), jnp.zeros_like(gain)])
    else:
      mixed = share * value + (1 - share) * alternative
      regret = jnp.stack([value - mixed, alternative - mixed])
    return SafeState(next_inner, jnp.maximum(state.gadget_regret + regret, 0))

  def current_policy(state: SafeState, game: SafeSubgame) -> jax.Array:
    return inner.current_policy(state.inner, game.game)

  def average_policy(state: SafeState, game: SafeSubgame) -> jax.Array:
    return inner.average_policy(state.inner, game.game)

  return Solver(
    init,
    update,
    current_policy,
    average_policy,
    name=f'{algorithm}+{gadget}',
    hyperparameters={**inner.hyperparameters, 'gadget': gadget},
  )
