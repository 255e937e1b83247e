"""A flop, turn or river spot solved by one native call: `spot_solve.cc`, the array form's algorithm
iteration for iteration (alternating updates, the same regret rules, averaging and checks), with each
player's own hands and a walk down the tree instead of XLA kernels.

A river spot is small (a few dozen nodes, a few hundred hands): the array form's iteration is then
~160 small XLA kernels whose count, not their arithmetic, sets its time, and a vmapped batch of
spots runs no faster a spot. A turn spot is a few hundred river trees below its chance nodes, each as
small; a flop spot the turn trees below its own, and the river trees below those. `jaxcfr subgame`
and `--spots` solve spots here where they can (`usable`): on a CPU, without `--batch`, CFR, CFR+,
Linear CFR, DCFR or DCFR+ with alternating updates, float32 or float64, no time budget, no 16-bit
state; everything else, and every spot whose strategy is wanted (`--strategy-out`, the explorer),
takes the array form, whose results these equal up to rounding (the tests hold the two to each
other). The cards of a deal whose suits the board and both ranges leave interchangeable are solved
once per class (`isomorphism`): a turn's river cards, a flop's turn cards and, below each turn card
solved, the river cards its board leaves interchangeable. Built like the showdown kernel (`native`):
on first use, with the system's C++ compiler, cached per machine and source; without a compiler it
is not used.

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
from jaxcfr.poker.subgame import solving as solving_module

SOURCE = os.path.join(os.path.dirname(__file__), 'spot_solve.cc')
SYMBOLS = {np.dtype(np.float32): 'jaxcfr_spot_solve_f32', np.dtype(np.float64): 'jaxcfr_spot_solve_f64'}
STREETS = (1, 2, 3)  # flop, turn and river spots
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
  """Whether spots solve natively with these settings: on a CPU, unless `JAXCFR_NO_NATIVE` is
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
  isomorphism: dict | None = None  # the merged cards, as `solving.merged_cards` gives them (`_merged`)
  # [D, A, H] the average strategy at the decisions before the first deal (`SpotTree.upper`), if asked
  upper: np.ndarray | None = dataclasses.field(default=None, repr=False)
  upper_nodes: tuple = ()  # `SpotTree.upper` of those


@dataclasses.dataclass(frozen=True)
class SpotTree:
  """A spot's tree as the native solve reads it (breadth-first, children consecutive)."""

  kind: np.ndarray  # [N] int8: tree.DECISION, CHANCE, FOLD or SHOWDOWN
  player: np.ndarray  # [N] int8: the actor (decision), the folder (fold)
  first: np.ndarray  # [N] int32: the first child
  count: np.ndarray  # [N] int32: the children
  context: np.ndarray  # [N] int32: the board it is on (`context_of`)
  amount: np.ndarray  # [N] float64: what the loser loses (fold: the folder; showdown: either); chance:
  # its weight, 1 / the cards that can come given both hands
  decisions: int
  root_labels: tuple  # the root's actions
  # The decisions before the first deal, root first: (node, player, line of labels from the root, its
  # actions) each
  upper: tuple = ()


def spot_tree(config: tree.TreeConfig, trees: dict | None = None) -> SpotTree:
  """`config`'s tree as `SpotTree`, kept in `trees` (a caller's dict across spots) if given."""
  key = ('native spot', config)
  if trees is not None and key in trees:
    return trees[key]
  if config.street not in STREETS or config.start is not None:
    raise ValueError('the native solve takes spots that start at the beginning of a round')
  table = tree.NodeTable(tree.build(config))
  kind = table.kind.astype(np.int8)
  if not np.isin(kind, (tree.DECISION, tree.CHANCE, tree.FOLD, tree.SHOWDOWN)).all():
    raise ValueError('a spot tree has decision, chance, fold and showdown nodes only')
  half = config.pot / 2
  player = np.clip(table.player, 0, 1)  # the actor or the folder (-1 at a showdown, which has none)
  amount = half + np.where(kind == tree.FOLD, table.added[np.arange(len(kind)), player], table.added[:, 0])
  left = config.deck_size - tree.BOARD_SIZE[config.street]
  # The cards a chance node can deal, given both hands.
  can_come = left - table.dealt_count.astype(np.int64) - 4
  amount = np.where(kind == tree.CHANCE, 1 / np.maximum(can_come, 1), amount)
  context = context_of(config.street, left, table.dealt)
  upper = []
  for v in np.flatnonzero((kind == tree.DECISION) & (context == 0)):
    line, at = [], int(v)
    while table.parent[at] >= 0:
      line.append(table.names[table.label[at]])
      at = int(table.parent[at])
    upper.append((int(v), int(table.player[v]), tuple(reversed(line)), tuple(table[int(v)].labels)))
  made = SpotTree(
    kind, player.astype(np.int8), table.first_child.astype(np.int32),
    table.num_children.astype(np.int32), context.astype(np.int32), amount.astype(np.float64),
    int((kind == tree.DECISION).sum()), tuple(table[0].labels), tuple(upper),
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
  first_street: bool = False,
) -> SpotResult:
  """Solves the spot `spec` (a `solving.SpotSpec`) natively until its exploitability is
  at most `target_pct` % of the pot (checked every `eval_every` iterations) or `iterations` (default
  1,000); `root`: keep the root's average strategy over the spot's hands (`SpotResult.root`);
  `threads`: the first deal's cards (a flop's turn cards, a turn's river cards) split over that many
  threads, with the same numbers on any count; `isomorphism`: the cards whose suits the board and both
  ranges leave interchangeable solved once per class (`isomorphism`). `PokerInputError` for a bad
  spot (as `SpotSpec.build`), `ValueError` for a spot that starts inside a round or settings it
  cannot solve natively (`usable`). `first_street`: keep the average strategy at every decision
  before the first deal (`SpotResult.upper`, `strategy_arrays`)."""
  from jaxcfr.poker import defaults  # noqa: PLC0415

  hyperparameters = hyperparameters or {}
  settings = rule(algorithm, hyperparameters)
  library = _library()
  if settings is None or library is None or np.dtype(dtype) not in SYMBOLS:
    raise ValueError(f'{algorithm} on this spot does not solve natively here (see native_spot.usable)')
  config = spec.config()
  shape, hands, weights, deal = _spot(spec, trees, isomorphism)
  limit = defaults.MAX_ITERATIONS if iterations is None else int(iterations)
  if limit < 1 or eval_every < 1:
    raise ValueError(f'iterations and eval_every must be positive, got {limit} and {eval_every}')
  target = -math.inf if target_pct is None else target_pct / 100 * config.pot
  checks_most = -(-limit // eval_every)
  curve = np.zeros((checks_most, 2))
  checks, done = ctypes.c_int32(), ctypes.c_int32()
  nash_conv, check_seconds, holding = ctypes.c_double(), ctypes.c_double(), ctypes.c_int64()
  values, equity = np.zeros(2), np.zeros(2)
  kept = np.array(
    [u[0] for u in (shape.upper if first_street else shape.upper[:1] if root else ())], np.int32
  )
  widest = int(shape.count.max())
  averages = np.zeros((len(kept), widest, len(hands)))
  regret_rule = np.array(settings, np.float64)  # held here: the call reads it by address
  start = time.perf_counter()
  status = getattr(library, SYMBOLS[np.dtype(dtype)])(
    *_spot_arguments(shape, hands, weights, deal), _pointer(regret_rule), max(1, int(threads)), limit,
    int(eval_every), float(target), _pointer(curve), ctypes.byref(checks), _pointer(values),
    ctypes.byref(nash_conv), ctypes.byref(done), ctypes.byref(check_seconds), _pointer(equity), len(kept),
    _pointer(kept), _pointer(averages), ctypes.byref(holding),
  )  # fmt: skip
  seconds = time.perf_counter() - start - check_seconds.value
  if status != 0:
    raise cards.PokerInputError('the two ranges have no pair of hands without a card in common')
  exploitability = nash_conv.value / 2
  pot, made = config.pot, checks.value
  per_check = seconds / max(made, 1)
  held_bytes = holding.value  # state, the cards' values, the threads' arenas, the sides and plans
  return SpotResult(
    algorithm=algorithms.get(algorithm).name,
    iterations=int(done.value),
    seconds=seconds,
    check_seconds=check_seconds.value,
    exploitability=exploitability,
    exploitability_pct=100 * exploitability / pot,
    ev=[float(v + pot / 2) for v in values],
    equity=[float(e) for e in equity],
    memory_bytes=held_bytes + _arrays_bytes(hands, weights, deal),
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
    root=averages[0, : len(shape.root_labels)] if len(kept) else None,
    hole_cards=hands,
    ranges=weights,
    root_labels=list(shape.root_labels),
    evaluation_seconds=check_seconds.value / max(made, 1),
    isomorphism=_merged(deal.merged),
    upper=averages if first_street else None,
    upper_nodes=shape.upper if first_street else (),
  )


def estimated_bytes(spec, dtype=np.float32, threads: int = 1, isomorphism: bool = True, trees=None) -> int:
  """The memory the native solve of `spec` with these settings holds (`SpotResult.memory_bytes`),
  worked out without solving: what `--max-memory` checks for a spot that solves natively.
  `PokerInputError` for a bad spot; `ValueError` where the native solve is not built."""
  return _estimate(spec, dtype, threads, isomorphism, trees)[0]


def check_memory(
  spec, max_bytes: int | None, dtype=np.float32, threads: int = 1, isomorphism=True, trees=None
):
  """`solving.MemoryLimitError` where the native solve of `spec` would hold more than `max_bytes`."""
  if max_bytes is None:
    return
  need, shape, weights = _estimate(spec, dtype, threads, isomorphism, trees)
  if need > max_bytes:
    held = weights > 0
    raise solving_module.MemoryLimitError(
      f"this spot's tree has {len(shape.kind):,} public nodes x {weights.shape[1]:,} hands (OOP's "
      f"{int(held[0].sum()):,}, IP's {int(held[1].sum()):,}): solving it needs about "
      f'{solving_module.size_text(need)}, over the limit of {solving_module.size_text(max_bytes)} '
      '(--max-memory); use fewer bet sizes, a raise cap, or narrower ranges'
    )


def _estimate(spec, dtype, threads: int, isomorphism: bool, trees) -> tuple:
  """(`estimated_bytes`, the `SpotTree`, the ranges' weights [2, H] over the spot's hands)."""
  library = _library()
  if library is None or np.dtype(dtype) not in SYMBOLS:
    raise ValueError('the native spot solve is not built here (see native_spot.usable)')
  shape, hands, weights, deal = _spot(spec, trees, isomorphism)
  name = SYMBOLS[np.dtype(dtype)].replace('solve', 'bytes')
  held = getattr(library, name)(*_spot_arguments(shape, hands, weights, deal), max(1, int(threads)))
  return int(held) + _arrays_bytes(hands, weights, deal), shape, weights


def _spot(spec, trees, isomorphism: bool):
  """(`SpotTree`, hands [H, 2] of either range, their weights [2, H], `_Deal`) of `spec`."""
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
  return shape, hands, weights, _deal(config, board, deck, hands, weights, isomorphism)


def _pointer(x):
  return None if x is None else x.ctypes.data


def _spot_arguments(shape, hands, weights, deal) -> tuple:
  """The native calls' first arguments: the tree, the hands, the contexts, the ranges."""
  return (
    len(shape.kind), _pointer(shape.kind), _pointer(shape.player), _pointer(shape.first),
    _pointer(shape.count), _pointer(shape.context), _pointer(shape.amount), len(hands), len(deal.dealt),
    _pointer(hands), _pointer(deal.strength), _pointer(deal.parent), _pointer(deal.dealt), _pointer(deal.rep),
    _pointer(deal.pull), _pointer(deal.chance), _pointer(weights),
  )  # fmt: skip


def _arrays_bytes(hands, weights, deal) -> int:
  """The spot's arrays the call reads (the hands, their weights, each board's strengths and pulls)."""
  return hands.nbytes + weights.nbytes + deal.strength.nbytes + deal.pull.nbytes


def strategy_arrays(result: SpotResult, spec) -> tuple[dict, dict]:
  """(metadata, arrays) of the decisions before the first deal of a solve with `first_street`, as
  `solving.strategy_arrays(result, first_street=True)` gives them (what a flop report reads)."""
  if result.upper is None:
    raise ValueError('the solve kept no strategy: solve with first_street=True')
  metadata = {
    'format': solving_module.STRATEGY_FORMAT,
    'board': [cards.card_text(int(c)) for c in cards.parse_board(spec.board, spec.deck())],
    'pot': spec.pot,
    'stack': spec.stack,
    'algorithm': result.algorithm,
    'iterations': result.iterations,
    'exploitability_pct': result.exploitability_pct,
    'nodes': [
      {'player': ('oop', 'ip')[player], 'line': list(line), 'actions': list(actions)}
      for _, player, line, actions in result.upper_nodes
    ],
  }
  arrays = {
    'probabilities': np.asarray(result.upper, np.float32),
    'hands': result.hole_cards,
    'ranges': np.asarray(result.ranges, np.float32),
  }
  return metadata, arrays


@dataclasses.dataclass(frozen=True)
class _Deal:
  """The contexts of a spot (`context_of`): its board (context 0), and each board the deals to come
  reach."""

  parent: np.ndarray  # [C] int32: the context each is dealt from (-1: context 0, and contexts unused)
  dealt: np.ndarray  # [C] int32: the card it deals, -1 for context 0
  strength: np.ndarray  # [C, H] int32: each hand's strength on a river board (0 elsewhere)
  rep: np.ndarray  # [C] int32: the context solved for each (one of the same parent)
  pull: np.ndarray  # [C, H] int32: the hand whose values each hand takes from its solved context
  chance: np.ndarray  # [C] float64: the probability of its deal given both hands
  merged: dict  # per street dealt ('turn', 'river'): [cards, solved] over the contexts entered


def _merged(merged: dict) -> dict | None:
  """`SpotResult.isomorphism` of a deal's counts (`_Deal.merged`): the first deal's street, cards and
  those solved, as `solving.merged_cards` gives them, and on a flop the river cards' below the turn
  cards solved; None where nothing merged."""
  if all(solved == cards for cards, solved in merged.values()):
    return None
  street = next(iter(merged))
  made = {'street': street, 'cards': merged[street][0], 'solved': merged[street][1]}
  if street == 'turn':
    made['river_cards'], made['river_solved'] = merged['river']
  return made


def context_of(street: int, left: int, dealt: np.ndarray) -> np.ndarray:
  """The context of a node of a spot on `street` that has dealt `dealt` [N, 2] (positions among the
  `left` cards the board leaves, -1 where not dealt): 0 before any deal, 1 + t after the deal of t,
  1 + left + t * left + r after t and then r (a flop's turn and river)."""
  dealt = np.asarray(dealt, np.int64).reshape(len(dealt), -1)
  context = np.zeros(len(dealt), np.int64)
  if dealt.shape[1] >= 1:
    one = dealt[:, 0] >= 0
    context[one] = 1 + dealt[one, 0]
  if dealt.shape[1] >= 2:
    two = dealt[:, 1] >= 0
    context[two] = 1 + left + dealt[two, 0] * left + dealt[two, 1]
  return context.astype(np.int32)


def _strengths(hands: np.ndarray, boards: np.ndarray) -> np.ndarray:
  """[B, H] each hand's strength on each of `boards` [B, 5] (0 where a board card is in the hand)."""
  size, count = len(hands), len(boards)
  seven = np.concatenate(
    [np.broadcast_to(hands[None], (count, size, 2)), np.broadcast_to(boards[:, None], (count, size, 5))], 2
  ).reshape(-1, 7)
  free = (hands[None, :, :, None] != boards[:, None, None, :]).all((2, 3)).reshape(-1)
  strength = np.zeros(count * size, np.int32)
  strength[free] = ranking.hand_rank(seven[free])
  return strength.reshape(count, size)


def _deal(config, board, deck, hands: np.ndarray, weights: np.ndarray, merge: bool) -> _Deal:
  size, board = len(hands), [int(card) for card in board]
  remaining = np.array([c for c in deck.cards if c not in board], np.int32)
  left = len(remaining)
  deals = 3 - config.street  # the cards still to come: 2 on a flop, 1 on a turn, 0 on a river
  contexts = 1 if deals == 0 else 1 + left + (left * left if deals == 2 else 0)
  parent = np.full(contexts, -1, np.int32)
  dealt = np.full(contexts, -1, np.int32)
  chance = np.zeros(contexts)
  strength = np.zeros((contexts, size), np.int32)
  rep = np.arange(contexts, dtype=np.int32)
  pull = np.tile(np.arange(size, dtype=np.int32), (contexts, 1))
  merged = {}
  if deals == 0:
    strength[0] = _strengths(hands, np.array([board], np.int32))[0]
  first_deal = np.arange(1, 1 + left)
  if deals >= 1:
    parent[first_deal], dealt[first_deal] = 0, remaining
    chance[first_deal] = 1 / (left - 4)
  if deals == 1:
    boards = np.concatenate([np.broadcast_to(np.array(board, np.int32), (left, 4)), remaining[:, None]], 1)
    strength[first_deal] = _strengths(hands, boards)
  if deals == 2:
    t, r = np.divmod(np.arange(left * left), left)
    used = t != r
    second = 1 + left + np.flatnonzero(used)
    parent[second], dealt[second] = 1 + t[used], remaining[r[used]]
    chance[second] = 1 / (left - 5)
    low, high = np.minimum(t, r)[used], np.maximum(t, r)[used]
    pairs, where = np.unique(low * left + high, return_inverse=True)  # a river board is either order's
    boards = np.concatenate(
      [
        np.broadcast_to(np.array(board, np.int32), (len(pairs), 3)),
        remaining[pairs // left, None],
        remaining[pairs % left, None],
      ],
      1,
    )
    strength[second] = _strengths(hands, boards)[where]

  def merge_deal(up_board: list, children: np.ndarray, cards_dealt: np.ndarray, street: str):
    symmetry = isomorphism.symmetry(up_board, hands, weights, deck.num_suits) if merge else None
    solved = len(children)
    if symmetry is not None:
      first, moved = symmetry.classes(cards_dealt)
      rep[children] = children[first]
      pull[children] = symmetry.pulls[moved]
      solved = int((first == np.arange(len(first))).sum())
    total = merged.setdefault(street, [0, 0])
    total[0] += len(children)
    total[1] += solved

  if deals >= 1:
    merge_deal(board, first_deal, remaining, 'turn' if deals == 2 else 'river')
  if deals == 2:
    for t in range(left):
      if rep[1 + t] != 1 + t:
        continue
      children = 1 + left + t * left + np.flatnonzero(np.arange(left) != t)
      merge_deal([*board, int(remaining[t])], children, dealt[children], 'river')
  return _Deal(parent, dealt, strength, rep, np.ascontiguousarray(pull), chance, merged)


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
    function.argtypes = [i32, p, p, p, p, p, p, i32, i32, p, p, p, p, p, p, p, p, p, i32, i32, i32, f64]
    function.argtypes += [p] * 7 + [i32] + [p] * 3
    function = getattr(library, symbol.replace('solve', 'bytes'))
    function.restype = ctypes.c_int64
    function.argtypes = [i32, p, p, p, p, p, p, i32, i32, p, p, p, p, p, p, p, p, i32]
  return library
