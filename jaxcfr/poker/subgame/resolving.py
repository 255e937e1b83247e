"""Safe re-solving: a gadget before a subgame's root lets the opponent choose, hand by hand, between
entering the subgame and its alternative, the value of its best response to the strategy being replaced.

    safe = safe_subgame(game, replaced, opponent)      # replaced: [D, A, H], e.g. the blueprint's
    solver = safe_subgame_solver('dcfr', 'maxmargin')
    state = jax.jit(lambda s, g: jaxcfr.run(solver, s, g, 100))(solver.init(safe), safe)
    policy = solver.average_policy(state, safe)        # [D, A, H]

`alternatives` are the opponent's counterfactual values of that best response; a re-solve that keeps
every hand at or below them is no more exploitable in this subgame than the strategy it replaces
(Burch, Johanson & Bowling 2014; Moravcik et al. 2016). The gadget is Resolve, Maxmargin or
Maxmargin-prior (`GADGETS`); inside it, the subgame solver's iteration (`solver.step`) runs with the
opponent's reach at the root that the gadget's strategy gives.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcfr.poker import defaults
from jaxcfr.poker.subgame import game as subgame_module
from jaxcfr.poker.subgame import showdown, solver
from jaxcfr.poker.subgame.game import Subgame
from jaxcfr.poker.subgame.solver import SubgameState
from jaxcfr.protocol import Solver

GADGETS = defaults.GADGETS
MARGINS = ('maxmargin', 'maxmargin-prior')  # the gadgets whose opponent picks hands by their margins


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
  tree = property(lambda self: self.game.tree)
  large_blocks = property(lambda self: self.game.large_blocks)
  classic_emitters = property(lambda self: self.game.classic_emitters)
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
  first traced game's static fields, such as its tree's `TreeInfo`, which compare equal across shapes).
  XLA's default options on every street: the river's (`backend.compiler_options`) made a search river
  tree's alternatives slower."""
  return jax.jit(alternatives, static_argnums=2)


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
  - 'maxmargin-prior': Maxmargin whose opponent holds its prior range `defaults.PRIOR_SHARE` of the
    time (a restricted Nash response's opponent: Johanson, Zinkevich & Bowling 2007), so the re-solve
    trades the smallest margin against what it wins from the prior. No guarantee: a hand may gain over
    its alternative where the prior gains more.

  Its policies are the subgame's [D, A, H]; the opponent's average is the gadget's mix, not a
  strategy to play."""
  if gadget not in GADGETS:
    raise ValueError(f'gadget must be one of {", ".join(GADGETS)}, got {gadget!r}')
  config, inner = solver.build(algorithm, hyperparameters)

  def init(game: SafeSubgame, key: jax.Array | None = None) -> SafeState:
    return SafeState(inner.init(game.game, key), jnp.zeros((2, game.num_hands), game.dtype))

  def update(state: SafeState, game: SafeSubgame) -> SafeState:
    reach, share = _entering(gadget, state, game)
    next_inner, roots = solver.step(config, state.inner, _with_reach(game, reach), None)
    regret = _gadget_regret(gadget, game, share, roots[game.opponent])
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


def _masses(game: SafeSubgame) -> jax.Array:
  """[H] the player's range on the hands that share no card with each of the opponent's."""
  spot = game.game.spot
  own = jnp.where(game.opponent == 0, spot.ranges[1], spot.ranges[0])
  return showdown.compatible_mass(spot.hands, own[None])[0]


def entering(gadget: str, regret, prior, mass, xp=jnp) -> tuple:
  """The gadget's rule, shared with the depth-limited rounds (`xp`: jax.numpy or numpy): (the
  opponent's reach at the root [H], the share entering [H]) from the gadget's regrets [2, H], the
  opponent's prior range [H] (Resolve, Maxmargin-prior) and the player's compatible mass per hand [H]
  (the Maxmargins). Maxmargin-prior's reach is `PRIOR_SHARE` the prior, scaled so that it weighs as
  much against the player's range as Maxmargin's pick (whose reach x mass sums to 1), and the rest
  Maxmargin's."""
  positive = xp.maximum(regret, 0)
  if gadget in MARGINS:
    total = positive[0].sum()
    share = xp.where(total > 0, positive[0] / xp.where(total > 0, total, 1), 1 / positive.shape[1])
    reach = xp.where(mass > 0, share / xp.where(mass > 0, mass, 1), 0)
    if gadget == 'maxmargin-prior':
      weight = (prior * mass).sum()
      scaled = prior / xp.where(weight > 0, weight, 1)
      reach = (1 - defaults.PRIOR_SHARE) * reach + defaults.PRIOR_SHARE * scaled
    return reach, share
  total = positive.sum(0)
  share = xp.where(total > 0, positive[0] / xp.where(total > 0, total, 1), 0.5)
  return prior * share, share


def gadget_regret(gadget: str, share, value, alternatives, mass, xp=jnp):
  """[2, H]: the gadget's instantaneous regrets, from the share entering [H], the opponent's values at
  the root when it enters `value` [H], its `alternatives` [H] and (the Maxmargins) the player's
  compatible mass per hand [H]; `xp` as in `entering`."""
  if gadget in MARGINS:
    gain = xp.where(mass > 0, (value - alternatives) / xp.where(mass > 0, mass, 1), 0)  # -margin
    return xp.stack([gain - (share * gain).sum(), xp.zeros_like(gain)])
  mixed = share * value + (1 - share) * alternatives
  return xp.stack([value - mixed, alternatives - mixed])


def _entering(gadget: str, state: SafeState, game: SafeSubgame) -> tuple[jax.Array, jax.Array]:
  """(the opponent's reach at the root [H], the gadget's strategy: the share entering [H])."""
  mass = _masses(game) if gadget in MARGINS else None
  return entering(gadget, state.gadget_regret, game.game.spot.ranges[game.opponent], mass)


def _with_reach(game: SafeSubgame, reach: jax.Array) -> Subgame:
  """The subgame with the opponent's range at the root replaced by `reach` [H]."""
  spot = game.game.spot
  ranges = spot.ranges.at[game.opponent].set(reach.astype(spot.ranges.dtype))
  return dataclasses.replace(game.game, spot=dataclasses.replace(spot, ranges=ranges))


def _gadget_regret(gadget: str, game: SafeSubgame, share: jax.Array, value: jax.Array) -> jax.Array:
  """[2, H]: the gadget's instantaneous regrets (`gadget_regret`) at `game`."""
  mass = _masses(game) if gadget in MARGINS else None
  return gadget_regret(gadget, share, value, game.alternatives, mass)
