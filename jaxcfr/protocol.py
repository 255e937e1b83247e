"""The one protocol every solver family follows, and the one loop that runs it.

A solver is four pure functions over a state pytree (`NamedTuple`s of arrays):

    init(game, key=None) -> state       # full-width solvers ignore the key
    update(state, game) -> state        # one iteration
    current_policy(state, game) -> [I, A]
    average_policy(state, game) -> [I, A]   # the output (the blueprint)

plus its registry `name`, its `hyperparameters` (plain Python values, as
recorded in results and checkpoints) and `costly_policy` (producing the
average policy trains networks, as Deep CFR's does, so a training loop
evaluates it sparsely), and optionally `evaluate_average(state, game) ->
(NashConv, [P] values)`: the exact evaluation of the average policy read from
the state's own layout, which a training loop's checks use instead of laying
the policy out and calling the game's evaluation (the same numbers, cheaper).
Every state is a pytree that `jit`, `vmap`, `scan` and the checkpointer treat
alike; the game is an argument, never a constant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import jax

from jaxcfr import checks

State = Any  # a pytree of arrays


@dataclasses.dataclass(frozen=True, eq=False)
class Solver:
  """A solver of any family; all four functions are pure and jittable.

  Hashed by identity (so `functools.cache` and `jax.jit` static arguments
  accept it); `hyperparameters` is stored read-only.
  """

  init: Callable[..., State]  # (game, key=None) -> state
  update: Callable[[State, Any], State]  # (state, game) -> state
  current_policy: Callable[[State, Any], jax.Array]  # (state, game) -> [I, A]
  average_policy: Callable[[State, Any], jax.Array]  # (state, game) -> [I, A]
  name: str = 'custom'
  hyperparameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  costly_policy: bool = False
  evaluate_average: Callable[[State, Any], tuple[jax.Array, jax.Array]] | None = None

  def __post_init__(self):
    object.__setattr__(self, 'hyperparameters', MappingProxyType(dict(self.hyperparameters)))


def run(solver, state: State, game, num_iterations) -> State:
  """`num_iterations` updates of `solver` in one loop (jit it; the count may be traced).

  A state of another game, dtype or solver fails with one `CheckError` naming the field.
  """
  checks.check_state(state, jax.eval_shape(lambda: solver.init(game, jax.random.key(0))))
  return jax.lax.fori_loop(0, num_iterations, lambda _, s: solver.update(s, game), state)
