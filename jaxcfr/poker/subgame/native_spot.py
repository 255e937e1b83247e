"""A river or turn spot solved by one native call: `spot_solve.cc`, the array form's algorithm
iteration for iteration (alternating updates, the same regret rules, averaging and checks), with each
player's own hands and a walk down the tree instead of XLA kernels.

A river spot is small (a few dozen nodes, a few hundred hands): the array form's iteration is then
~160 small XLA kernels whose count, not their arithmetic, sets its time, and a vmapped batch of
spots runs no faster a spot. A turn spot is a few hundred river trees below its chance nodes, each as
small. `jaxcfr subgame --spots` solves river and turn spots here where it can (`usable`): on a CPU,
without `--batch`, CFR, CFR+, Linear CFR, DCFR or DCFR+ with alternating updates, float32 or
float64, no time budget, no 16-bit state; everything else, and every spot whose strategy is wanted
(`--strategy-out`, the explorer), takes the array form, whose results these equal up to rounding
(the tests hold the two to each other). A turn's river cards whose suits the board and both ranges
leave interchangeable are solved once per class (`isomorphism`), as the array form does. Built like
the showdown kernel (`native`): on first use, with the system's C++ compiler, cached per machine and
source; without a compiler it is not used.

    result = native_spot.solve(spec, 'dcfr', target_pct=0.5)
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
from jaxcfr.poker.subgame import isomorphism, native, tree
from jaxcfr.poker.subgame import solver as solver_module

SOURCE = os.path.join(os.path.dirname(__file__), 'spot_solve.cc')
SYMBOLS = {np.dtype(np.float32): 'jaxcfr_spot_solve_f32', np.dtype(np.float64): 'jaxcfr_spot_solve_f64'}
STREETS = (2, 3)  # turn and river spots
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
  """Whether river and turn spots solve natively with these settings: on a CPU, unless `JAXCFR_NO_NATIVE` is
  set, a rule the native solve has, float32 or float64, no time budget, no 16-bit state, the library
  built (the first call builds it)."""
  if seconds is not None or compress or np.dtype(dtype) not in SYMBOLS or os.environ.get(native.OFF_ENV):
    return False
  if jax.default_backend() != 'cpu':
    return False
  return rule(algorithm, hyperparameters) is not None and _library() is not None


@dataclasses.dataclass
class SpotResult:
  """A native solve; the fields `solving.report` reads, as `solving.SubgameResult` has them."""

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
  ranges: np.ndarray | None = dataclasses.field(default=None, repr=False)  # [2, H] weights of those
  root_labels: list | None = None  # the root's actions
  jit_seconds: float = 0.0
  evaluation_seconds: float = 0.0
  isomorphism: dict | None = None  # a turn's merged river cards, as `solving.merged_cards` gives them


@dataclasses.dataclass(frozen=True)
class SpotTree:
  """A river or turn tree's nodes as the native solve reads them (breadth-first, children
  consecutive)."""

  kind: np.ndarray  # [N] int8: tree.DECISION, CHANCE, FOLD or SHOWDOWN
  player: np.ndarray  # [N] int8: the actor (decision), the folder (fold)
  first: np.ndarray  # [N] int32: the first child
  count: np.ndarray  # [N] int32: the children
  context: np.ndarray  # [N] int32: 0 on the spot's board, 1 + k below the deal of the k-th card left
  amount: np.ndarray  # [N] float64: what the loser loses (fold: the folder; showdown: either); chance:
  # its weight, 1 / the cards that can come given both hands
  decisions: int
  root_labels: tuple  # the root's actions


def spot_tree(config: tree.TreeConfig, trees: dict | None = None) -> SpotTree:
  """`config`'s tree as `SpotTree`, kept in `trees` (a caller's dict across spots) if given."""
  key = ('native spot', config)
  if trees is not None and key in trees:
    return trees[key]
  if config.street not in STREETS or config.start is not None:
    raise ValueError('the native solve takes river and turn spots that start at the beginning of a round')
  table = tree.NodeTable(tree.build(config))
  kind = table.kind.astype(np.int8)
  if not np.isin(kind, (tree.DECISION, tree.CHANCE, tree.FOLD, tree.SHOWDOWN)).all():
    raise ValueError('a spot tree has decision, chance, fold and showdown nodes only')
  half = config.pot / 2
  player = np.clip(table.player, 0, 1)  # the actor or the folder (-1 at a showdown, which has none)
  amount = half + np.where(kind == tree.FOLD, table.added[np.arange(len(kind)), player], table.added[:, 0])
  left = config.deck_size - tree.BOARD_SIZE[config.street] - 4  # cards that can come, given both hands
  amount = np.where(kind == tree.CHANCE, 1 / left, amount)
  context = np.zeros(len(kind), np.int32)
  dealt = np.flatnonzero(table.dealt_count > 0)  # none on a river tree
  context[dealt] = 1 + table.dealt[dealt, table.dealt_count[dealt] - 1]
  made = SpotTree(
    kind, player.astype(np.int8), table.first_child.astype(np.int32),
    table.num_children.astype(np.int32), context.astype(np.int32), amount.astype(np.float64),
    int((kind == tree.DECISION).sum()), tuple(table[0].labels),
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
  threads: int = 1,
  isomorphism: bool = True,
) -> SpotResult:
  """Solves the river or turn spot `spec` (a `solving.SpotSpec`) natively until its exploitability is
  at most `target_pct` % of the pot (checked every `eval_every` iterations) or `iterations` (default
  1,000); `root`: keep the root's average strategy over the spot's hands (`SpotResult.root`);
  `threads`: a turn's river cards split over that many threads; `isomorphism`: river cards whose suits
  the board and both ranges leave interchangeable solved once per class (`isomorphism`).
  `PokerInputError` for a bad spot (as `SpotSpec.build`), `ValueError` for a spot of another street
  or settings it cannot solve natively (`usable`)."""
  from jaxcfr.poker import defaults  # noqa: PLC0415

  hyperparameters = hyperparameters or {}
  settings = rule(algorithm, hyperparameters)
  library = _library()
  if settings is None or library is None or np.dtype(dtype) not in SYMBOLS:
    raise ValueError(f'{algorithm} on this spot does not solve natively here (see native_spot.usable)')
  deck = spec.deck()
  board = cards.parse_board(spec.board, deck)
  config = spec.config()
  shape = spot_tree(config, trees)
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
  deal = _deal(config, board, deck, hands, weights, isomorphism)
  limit = defaults.MAX_ITERATIONS if iterations is None else int(iterations)
  if limit < 1 or eval_every < 1:
    raise ValueError(f'iterations and eval_every must be positive, got {limit} and {eval_every}')
  target = -math.inf if target_pct is None else target_pct / 100 * config.pot
  checks_most = -(-limit // eval_every)
  curve = np.zeros((checks_most, 2))
  checks, done = ctypes.c_int32(), ctypes.c_int32()
  nash_conv, check_seconds, holding = ctypes.c_double(), ctypes.c_double(), ctypes.c_int64()
  values, equity = np.zeros(2), np.zeros(2)
  root_policy = np.zeros((len(shape.root_labels), len(hands))) if root else None
  regret_rule = np.array(settings, np.float64)  # held here: the call reads it by address
  pointer = lambda x: None if x is None else x.ctypes.data  # noqa: E731
  start = time.perf_counter()
  status = getattr(library, SYMBOLS[np.dtype(dtype)])(
    len(shape.kind), pointer(shape.kind), pointer(shape.player), pointer(shape.first), pointer(shape.count),
    pointer(shape.context), pointer(shape.amount), len(hands), len(deal.dealt), pointer(hands),
    pointer(deal.strength), pointer(deal.dealt), pointer(deal.rep), pointer(deal.pull), pointer(weights),
    pointer(regret_rule), max(1, int(threads)), limit, int(eval_every), float(target),
    float(shape.amount[shape.kind == tree.CHANCE][0]) if deal.rep.size > 1 else 1.0, pointer(curve),
    ctypes.byref(checks), pointer(values), ctypes.byref(nash_conv), ctypes.byref(done),
    ctypes.byref(check_seconds), pointer(equity), pointer(root_policy), ctypes.byref(holding),
  )  # fmt: skip
  seconds = time.perf_counter() - start - check_seconds.value
  if status != 0:
    raise cards.PokerInputError('the two ranges have no pair of hands without a card in common')
  exploitability = nash_conv.value / 2
  pot, made = config.pot, checks.value
  per_check = seconds / max(made, 1)
  held_bytes = holding.value * np.dtype(dtype).itemsize  # state, the cards' values, the threads' arenas
  solved = int((deal.rep == np.arange(len(deal.rep))).sum()) - 1
  return SpotResult(
    algorithm=algorithms.get(algorithm).name,
    iterations=int(done.value),
    seconds=seconds,
    check_seconds=check_seconds.value,
    exploitability=exploitability,
    exploitability_pct=100 * exploitability / pot,
    ev=[float(v + pot / 2) for v in values],
    equity=[float(e) for e in equity],
    memory_bytes=held_bytes + hands.nbytes + weights.nbytes + deal.strength.nbytes + deal.pull.nbytes,
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
    ranges=weights,
    root_labels=list(shape.root_labels),
    evaluation_seconds=check_seconds.value / max(made, 1),
    isomorphism=None
    if solved == len(deal.rep) - 1
    else {'street': 'river', 'cards': len(deal.rep) - 1, 'solved': solved},
  )


@dataclasses.dataclass(frozen=True)
class _Deal:
  """The contexts of a spot: its board (context 0), and on the turn each river card (1 + k)."""

  dealt: np.ndarray  # [C] int32: the card dealt, -1 for context 0
  strength: np.ndarray  # [C, H] int32: each hand's strength on the context's board (0 on a turn's own)
  rep: np.ndarray  # [C] int32: the context solved for each
  pull: np.ndarray  # [C, H] int32: the hand whose values each hand takes from its solved context


def _deal(config, board, deck, hands: np.ndarray, weights: np.ndarray, merge: bool) -> _Deal:
  size = len(hands)
  if config.street == 3:
    # The evaluator of `showdown.strengths` in NumPy: no program to compile for each count of hands.
    seven = np.concatenate([hands, np.broadcast_to(np.array(board, np.int32), (size, len(board)))], 1)
    strength = ranking.hand_rank(seven)[None]
    identity = np.arange(size, dtype=np.int32)[None]
    return _Deal(
      np.array([-1], np.int32), np.ascontiguousarray(strength, np.int32), np.zeros(1, np.int32), identity
    )
  remaining = np.array([c for c in deck.cards if c not in board], np.int32)
  strength = np.zeros((1 + len(remaining), size), np.int32)
  for k, card in enumerate(remaining):
    free = (hands != card).all(1)
    seven = np.concatenate(
      [hands[free], np.broadcast_to(np.array([*board, card], np.int32), (int(free.sum()), len(board) + 1))], 1
    )
    strength[1 + k, free] = ranking.hand_rank(seven)
  rep = np.arange(1 + len(remaining), dtype=np.int32)
  pull = np.tile(np.arange(size, dtype=np.int32), (1 + len(remaining), 1))
  symmetry = isomorphism.symmetry(board, hands, weights, deck.num_suits) if merge else None
  if symmetry is not None:
    first, moved = symmetry.classes(remaining)
    rep[1:] = 1 + first
    pull[1:] = symmetry.pulls[moved]
  return _Deal(np.concatenate([[-1], remaining]).astype(np.int32), strength, rep, np.ascontiguousarray(pull))


@functools.cache
def _library():
  """The native spot solve (a ctypes library, its calls release the GIL), or None where it cannot
  be built."""
  path = native.library_path(SOURCE, 'the native spot solve')
  if path is None:
    return None
  try:
    library = ctypes.CDLL(path)
  except OSError as error:
    native.fall_back(f'the native spot solve {path} did not load ({error})')
    return None
  p, i32, f64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_double
  for symbol in SYMBOLS.values():
    function = getattr(library, symbol)
    function.restype = ctypes.c_int
    function.argtypes = [i32, p, p, p, p, p, p, i32, i32, p, p, p, p, p, p, p, i32, i32, i32, f64, f64]
    function.argtypes += [p] * 9
  return library
