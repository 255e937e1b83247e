"""jaxcfr: counterfactual regret minimisation as jitted JAX array code.

Compile a game once into depth-sliced arrays, then run CFR-family solvers and
exact evaluation on them:

    import jaxcfr
    game = jaxcfr.compile_game('leduc')
    result = jaxcfr.train(game, jaxcfr.make_solver('dcfr'), iterations=1000)
    result.exploitability, result.policy

or, one level down, any solver's pure functions:

    solver = jaxcfr.cfr_plus()
    state = jax.jit(jaxcfr.run, static_argnums=0)(solver, solver.init(game), game, 1000)
    jaxcfr.exploitability(game, solver.average_policy(state, game))
"""

from jaxcfr import algorithms, checkpoints, game_cache, mccfr, memory, policies, sharding
from jaxcfr.algorithms import make_solver
from jaxcfr.backend import compiler_options
from jaxcfr.checks import CheckError
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
from jaxcfr.protocol import Solver, run
from jaxcfr.sharding import shard_game, shard_state, unpad_policy
from jaxcfr.solvers import (
  CFRState,
  RegretTransform,
  accumulate,
  average_policy,
  cfr,
  cfr_family,
  cfr_plus,
  chain,
  clip_negative,
  dcfr,
  dcfr_plus,
  discount,
  linear_cfr,
  pcfr_plus,
  pdcfr_plus,
  predict,
  regret_matching,
  stateless,
  weight_by_iteration,
)
from jaxcfr.training import Progress, Result, TrainingError, train
from jaxcfr.version import __version__  # noqa: F401 (jaxcfr.__version__)

__all__ = [
  'Blueprint',
  'CheckError',
  'Progress',
  'Result',
  'TrainingError',
  'algorithms',
  'CFRState',
  'RegretTransform',
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
  'dcfr_plus',
  'discount',
  'expected_values',
  'exploitability',
  'game_cache',
  'linear_cfr',
  'load_game',
  'load_policy',
  'make_solver',
  'mccfr',
  'memory',
  'nash_conv',
  'pcfr_plus',
  'pdcfr_plus',
  'predict',
  'policies',
  'regret_matching',
  'run',
  'shard_game',
  'shard_state',
  'sharding',
  'stateless',
  'train',
  'unpad_policy',
  'weight_by_iteration',
]
