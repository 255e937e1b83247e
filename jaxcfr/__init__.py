"""jaxcfr: counterfactual regret minimisation as jitted JAX array code.

Compile a game once into depth-sliced arrays, then run CFR-family solvers and
exact evaluation on them:

    import jaxcfr
    game = jaxcfr.compile_game('leduc')
    solver = jaxcfr.cfr_plus()
    state = jaxcfr.run(solver, solver.init(game), game, 1000)
    policy = jaxcfr.average_policy(state, game)
    jaxcfr.exploitability(game, policy)
"""

from jaxcfr import checkpoints, mccfr, policies
from jaxcfr.backend import compiler_options
from jaxcfr.compiler import CompiledGame, GameInfo, compile_game
from jaxcfr.evaluation import (
  best_response_policy,
  best_response_value,
  best_response_values,
  expected_values,
  exploitability,
  nash_conv,
)
from jaxcfr.games import GameError, load_game
from jaxcfr.policies import Blueprint, load_policy
from jaxcfr.solvers import (
  ALGORITHMS,
  CFRState,
  Solver,
  accumulate,
  average_policy,
  cfr,
  cfr_family,
  cfr_plus,
  chain,
  clip_negative,
  dcfr,
  discount,
  linear_cfr,
  pcfr_plus,
  regret_matching,
  run,
  weight_by_iteration,
)

__version__ = '0.1.0'

__all__ = [
  'ALGORITHMS',
  'Blueprint',
  'CFRState',
  'CompiledGame',
  'GameError',
  'GameInfo',
  'Solver',
  'accumulate',
  'average_policy',
  'best_response_policy',
  'checkpoints',
  'best_response_value',
  'best_response_values',
  'cfr',
  'cfr_family',
  'cfr_plus',
  'chain',
  'clip_negative',
  'compile_game',
  'compiler_options',
  'dcfr',
  'discount',
  'expected_values',
  'exploitability',
  'linear_cfr',
  'load_game',
  'load_policy',
  'mccfr',
  'nash_conv',
  'pcfr_plus',
  'policies',
  'regret_matching',
  'run',
  'weight_by_iteration',
]
