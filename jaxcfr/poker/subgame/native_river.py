"""A river spot solved by one native call: `river_solve.cc`, the array form's algorithm iteration for
iteration (alternating updates, the same regret rules, averaging and checks), with each player's own
hands and a walk down the tree instead of XLA kernels.

A river spot is small (a few dozen nodes, a few hundred hands): the array form's iteration is then
~160 small XLA kernels whose count, not their arithmetic, sets its time, and a vmapped batch of
spots runs no faster a spot. `jaxcfr subgame --spots` solves river spots here where it can
(`usable`): on a CPU, without `--batch`, CFR, CFR+, Linear CFR, DCFR or DCFR+ with alternating
updates, float32 or float64, no time budget, no 16-bit state; everything else, and every spot whose
strategy is wanted (`--strategy-out`, the explorer), takes the array form, whose results these equal
up to rounding (the tests hold the two to each other). Built like the showdown kernel (`native`): on
first use, with the system's C++ compiler, cached per machine and source; without a compiler it is
not used.

    result = native_river.solve(spec, 'dcfr', target_pct=0.5)
    result.ev, result.exploitability_pct, result.iterations
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import os
import time

import jax
import numpy as np

from abstractions import ranking
from jaxcfr import algorithms
from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.subgame import native, tree
from jaxcfr.poker.subgame import solver as solver_module

SOURCE = os.path.join(os.path.dirname(__file__), 'river_solve.cc')
SYMBOLS = {np.dtype(np.float32): 'jaxcfr_river_solve_f32', np.dtype(np.float64): 'jaxcfr_river_solve_f64'}
_DCFR_PLUS_OFFSET = 1.5  # as jaxcfr.solvers' DCFR+


def rule(algorithm: str, hyperparameters: dict) -> tuple[float, ...] | None:
  """The native solve's regret rule for `algorithm` with `hyperparameters` (resolved as the array
  form resolves them): (instant power or 0, clip, discount, alpha, beta, offset, averaging power),
  or None where the native solve does not have it (PCFR+ and PDCFR+'s predictions, simultaneous
  updates)."""
  try:
    _, resolved = solver_module.solver_config(algorithm, dict(hyperparameters))
    algorithm = algorithms.get(algorithm).name  # the registry's name of an alias
  except (ValueError, TypeError, KeyError):
    return None
  if not resolved.get('alternating', False):
    return None
  h = resolved
  rules = {
    'cfr': (0, 0, 0, 0, 0, 1, 0.0),
    'cfr+': (0, 1, 0, 0, 0, 1, 1.0),
    'lcfr': (1, 0, 0, 0, 0, 1, 1.0),
    'dcfr': lambda: (0, 0, 1, h['alpha'], h['beta'], 1, h['gamma']),
    'dcfr+': lambda: (0, 1, 1, h['alpha'], 0, _DCFR_PLUS_OFFSET, h['gamma']),
  }
  found = rules.get(algorithm)
  if found is None:
    return None
  return tuple(float(x) for x in (found() if callable(found) else found))


def usable(algorithm: str, hyperparameters: dict, dtype, seconds=None, compress: bool = False) -> bool:
  """Whether river spots solve natively with these settings: on a CPU, unless `JAXCFR_NO_NATIVE` is
  set, a rule the native solve has, float32 or float64, no time budget, no 16-bit state, the library
  built (the first call builds it)."""
  if seconds is not None or compress or np.dtype(dtype) not in SYMBOLS or os.environ.get(native.OFF_ENV):
    return False
  if jax.default_backend() != 'cpu':
    return False
  return rule(algorithm, hyperparameters) is not None and _library() is not None


@dataclasses.dataclass
class RiverResult:
  """A native river solve; the fields `solving.report` reads, as `solving.SubgameResult` has them."""

  algorithm: str
  iterations: int
  seconds: float  # the iterations (the call less its checks), as `SubgameResult.seconds`
  check_seconds: float  # the checks' exact evaluations
  exploitability: float  # chips per deal
  exploitability_pct: float
  ev: list  # [2] expected share of the starting pot, chips
  equity: list  # [2]
  memory_bytes: int
  curve: list  # {iteration, seconds, exploitability, exploitability_pct}; seconds: an even share
  hands: int  # in either range on the board
  nodes: int
  decision_nodes: int
  root: np.ndarray | None = dataclasses.field(default=None, repr=False)  # [A, H] average at the root
  hole_cards: np.ndarray | None = dataclasses.field(default=None, repr=False)  # [H, 2] root's hands
  jit_seconds: float = 0.0
  evaluation_seconds: float = 0.0


@dataclasses.dataclass(frozen=True)
class RiverTree:
  """A river tree's nodes as the native solve reads them (breadth-first, children consecutive)."""

  kind: np.ndarray  # [N] int8: tree.DECISION, FOLD or SHOWDOWN
  player: np.ndarray  # [N] int8: the actor (decision), the folder (fold)
  first: np.ndarray  # [N] int32: the first child
  count: np.ndarray  # [N] int32: the children
  amount: np.ndarray  # [N] float64: what the loser loses (fold: the folder; showdown: either)
  decisions: int
  root_actions: int


def river_tree(config: tree.TreeConfig, trees: dict | None = None) -> RiverTree:
  """`config`'s river tree as `RiverTree`, kept in `trees` (a caller's dict across spots) if given."""
  key = ('native river', config)
  if trees is not None and key in trees:
    return trees[key]
  if config.street != 3:
    raise ValueError('the native solve takes river spots')
  table = tree.NodeTable(tree.build(config))
  kind = table.kind.astype(np.int8)
  if not np.isin(kind, (tree.DECISION, tree.FOLD, tree.SHOWDOWN)).all():
    raise ValueError('a river tree has decision, fold and showdown nodes only')
  half = config.pot / 2
  player = np.clip(table.player, 0, 1)  # the actor or the folder (-1 at a showdown, which has none)
  amount = half + np.where(kind == tree.FOLD, table.added[np.arange(len(kind)), player], table.added[:, 0])
  made = RiverTree(
    kind, player.astype(np.int8), table.first_child.astype(np.int32),
    table.num_children.astype(np.int32), amount.astype(np.float64), int((kind == tree.DECISION).sum()),
    int(table.num_children[0]),
  )  # fmt: skip
  if trees is not None:
    trees[key] = made
  return made


def solve(
  spec,
  algorithm: str,
  *,
  target_pct: float | None,
  iterations: int | None = None,
  eval_every: int = 10,
  dtype=np.float32,
  hyperparameters: dict | None = None,
  trees: dict | None = None,
  root: bool = False,
) -> RiverResult:
  """Solves the river spot `spec` (a `solving.SpotSpec`) natively until its exploitability is at
  most `target_pct` % of the pot (checked every `eval_every` iterations) or `iterations` (default
  1,000); `root`: keep the root's average strategy over the spot's hands (`RiverResult.root`).
  `PokerInputError` for a bad spot (as `SpotSpec.build`), `ValueError` for a spot of another street
  or settings it cannot solve natively (`usable`)."""
  from jaxcfr.poker import defaults  # noqa: PLC0415

  hyperparameters = hyperparameters or {}
  settings = rule(algorithm, hyperparameters)
  library = _library()
  if settings is None or library is None or np.dtype(dtype) not in SYMBOLS:
    raise ValueError(f'{algorithm} on a river spot does not solve natively here (see native_river.usable)')
  deck = spec.deck()
  board = cards.parse_board(spec.board, deck)
  config = spec.config()
  if config.street != 3:
    raise ValueError('the native solve takes river spots')
  shape = river_tree(config, trees)
  weights = np.stack(
    [ranges.range_on_board(ranges.parse_range(text, deck), deck, board) for text in spec.ranges]
  )
  for name, w in zip(('OOP', 'IP'), weights, strict=True):
    ranges.check_range(w, f'the {name}')
  hands = cards.hands(deck, board)
  held = (weights > 0).any(0)
  hands, weights = (
    np.ascontiguousarray(hands[held], np.int32),
    np.ascontiguousarray(weights[:, held], np.float64),
  )
  # The evaluator of `showdown.strengths` in NumPy: no program to compile for each count of hands.
  seven = np.concatenate([hands, np.broadcast_to(np.array(board, np.int32), (len(hands), len(board)))], 1)
  strength = np.ascontiguousarray(ranking.hand_rank(seven), np.int32)
  limit = defaults.MAX_ITERATIONS if iterations is None else int(iterations)
  if limit < 1 or eval_every < 1:
    raise ValueError(f'iterations and eval_every must be positive, got {limit} and {eval_every}')
  target = -math.inf if target_pct is None else target_pct / 100 * config.pot
  checks_most = -(-limit // eval_every)
  curve = np.zeros((checks_most, 2))
  checks, done = ctypes.c_int32(), ctypes.c_int32()
  nash_conv, check_seconds = ctypes.c_double(), ctypes.c_double()
  values, equity = np.zeros(2), np.zeros(2)
  root_policy = np.zeros((shape.root_actions, len(hands))) if root else None
  regret_rule = np.array(settings, np.float64)  # held here: the call reads it by address
  pointer = lambda x: None if x is None else x.ctypes.data  # noqa: E731
  start = time.perf_counter()
  status = getattr(library, SYMBOLS[np.dtype(dtype)])(
    len(shape.kind), pointer(shape.kind), pointer(shape.player), pointer(shape.first), pointer(shape.count),
    pointer(shape.amount), len(hands), pointer(hands), pointer(strength), pointer(weights),
    pointer(regret_rule), limit, int(eval_every), float(target), pointer(curve),
    ctypes.byref(checks), pointer(values), ctypes.byref(nash_conv), ctypes.byref(done),
    ctypes.byref(check_seconds), pointer(equity), pointer(root_policy),
  )  # fmt: skip
  seconds = time.perf_counter() - start - check_seconds.value
  if status != 0:
    raise cards.PokerInputError('the two ranges have no pair of hands without a card in common')
  exploitability = nash_conv.value / 2
  pot, made = config.pot, checks.value
  per_check = seconds / max(made, 1)
  held_by = (weights > 0).sum(1)  # each player's hands
  acting = np.where(shape.kind == tree.DECISION, shape.count * held_by[shape.player], 0)
  state_bytes = 2 * int(acting.sum()) * np.dtype(dtype).itemsize
  return RiverResult(
    algorithm=algorithms.get(algorithm).name,
    iterations=int(done.value),
    seconds=seconds,
    check_seconds=check_seconds.value,
    exploitability=exploitability,
    exploitability_pct=100 * exploitability / pot,
    ev=[float(v + pot / 2) for v in values],
    equity=[float(e) for e in equity],
    memory_bytes=state_bytes + hands.nbytes + weights.nbytes + strength.nbytes,
    curve=[
      {
        'iteration': int(i),
        'seconds': per_check * (k + 1),
        'exploitability': float(e),
        'exploitability_pct': 100 * float(e) / pot,
      }
      for k, (i, e) in enumerate(curve[:made])
    ],  # fmt: skip
    hands=len(hands),
    nodes=len(shape.kind),
    decision_nodes=shape.decisions,
    root=root_policy,
    hole_cards=hands,
    evaluation_seconds=check_seconds.value / max(made, 1),
  )


@functools.cache
def _library():
  """The native river solve (a ctypes library, its calls release the GIL), or None where it cannot
  be built."""
  path = native.library_path(SOURCE, 'the native river solve')
  if path is None:
    return None
  try:
    library = ctypes.CDLL(path)
  except OSError as error:
    native.fall_back(f'the native river solve {path} did not load ({error})')
    return None
  p, i32, f64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_double
  for symbol in SYMBOLS.values():
    function = getattr(library, symbol)
    function.restype = ctypes.c_int
    function.argtypes = [i32, p, p, p, p, p, i32, p, p, p, p, i32, i32, f64, p, p, p, p, p, p, p, p]
  return library
