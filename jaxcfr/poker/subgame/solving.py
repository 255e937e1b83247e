"""Solving one hold'em spot, as a library call and as the `jaxcfr subgame` command uses it.

    from jaxcfr.poker import solving
    spot = solving.SpotSpec(board='Td9d6hQc3s', pot=200, stack=900,
                          ranges=('66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5', 'QQ-22,AQs-A2s,ATo+,K5s+'))
    result = solving.solve(spot, target_pct=0.5)
    result.exploitability_pct, result.ev, result.equity
    result.policy                     # [D, A, H] average strategy
    solving.root_summary(result)      # the first decision's strategy by hand class

Exploitability is reported as postflop solvers do: the mean of the two players' best-response
gains, in chips per deal and in % of the starting pot. EVs are each player's expected share of the
starting pot (they sum to the pot); equity is the share of the pot each would win if both checked
down from here. A spot with locked strategies (`locking`) reports its locked game's exploitability:
each best response keeps the locked strategies.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import memory, outputs, training
from jaxcfr.poker import defaults
from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import blocked as blocked_module
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import grid, showdown, tree
from jaxcfr.poker.subgame import isomorphism as isomorphism_module
from jaxcfr.poker.subgame import solver as solver_module
from jaxcfr.poker.subgame.solver import subgame_solver

STRATEGY_FORMAT = 'jaxcfr-subgame-strategy'


class MemoryLimitError(PokerInputError):
  """A spot whose solve would need more memory than its limit (`SpotSpec.fit`)."""


@dataclasses.dataclass(frozen=True)
class SpotSpec:
  """A spot as a user types it: board, pot and effective stack in chips, ranges in range notation,
  bet sizes in postflop-solver's syntax (the same on every street; `donk` for OOP's turn and river
  leads after IP's aggression)."""

  board: str
  pot: int
  stack: int
  ranges: tuple[str, str]  # OOP, IP
  bets: str = defaults.BETS
  raises: str = defaults.RAISES
  donk: str | None = None
  raise_cap: int | None = None
  force_all_in: float = defaults.FORCE_ALL_IN
  add_all_in: float = 0.0
  merge: float = 0.0
  num_ranks: int = 13
  num_suits: int = 4

  def deck(self) -> cards.Deck:
    return cards.Deck(self.num_ranks, self.num_suits)

  def config(self) -> tree.TreeConfig:
    board = cards.parse_board(self.board, self.deck())
    street = {3: 1, 4: 2, 5: 3}[len(board)]
    sizes = tree.street_sizes(self.bets, self.raises, self.donk)
    return tree.TreeConfig(
      street, self.pot, self.stack, (sizes,) * 3, self.raise_cap, self.force_all_in, self.deck().size,
      add_all_in=self.add_all_in, merge=self.merge,
    )  # fmt: skip

  def build(
    self,
    dtype=jnp.float32,
    max_bytes: int | None = defaults.MAX_BYTES,
    state_arrays: int = 2,
    compact: bool = False,
    hands_multiple: int = 0,
    compress: bool = False,
    isomorphism: bool = True,
    trees: dict | None = None,
  ) -> subgame.Subgame:
    """The subgame over the hands of the two ranges (`make_spot`'s `range_hands`); `PokerInputError`
    with one line for bad input, or for a tree whose solve would need more than `max_bytes` of
    memory (None: no limit; `estimated_bytes`, with `state_arrays` arrays of the solver's state
    per action and hand), before any array is made. With `compact`, or where the spot fits
    `max_bytes` only so, the solver keeps each player's edges over that player's hands alone
    (`build_subgame`'s `per_player`: less memory, slower iterations); else `hands_multiple` pads
    the hands as `make_spot` does, so that spots of one tree on other boards share programs.
    `compress`: the estimate counts the regrets and averages in 16 bits (`solve(compress=True)`).
    `isomorphism`: merge the first deal's cards that differ by interchangeable suits where the board
    and the ranges allow it (`subgame.isomorphism`; the estimate counts the blocks left to solve).
    `trees`: a dict a caller keeps across spots of one tree on other boards (a flop report's), in
    which the tree's nodes and arrays are made once (`build_subgame`'s `trees`)."""
    deck = self.deck()
    board = cards.parse_board(self.board, deck)
    config = self.config()
    weights = self.range_weights()
    if trees is None:
      nodes = tree.build(config)
      counts = tree.describe(config, nodes) if max_bytes is not None else None
    else:
      nodes, counts = shared_tree(config, trees)
    if max_bytes is not None:
      compact = self.fit(max_bytes, dtype, state_arrays, compact, compress, counts, isomorphism)
    game = subgame.build_subgame(
      config, board, weights, deck, dtype, range_hands=True, nodes=nodes, per_player=compact,
      hands_multiple=0 if compact else hands_multiple, isomorphism=isomorphism, trees=trees,
    )  # fmt: skip
    if float(_normalizer(game)) <= 0:
      raise PokerInputError('the two ranges have no pair of hands without a card in common')
    return game

  def range_weights(self) -> list[np.ndarray]:
    """The two ranges parsed, each checked to leave a hand on the board."""
    deck, board = self.deck(), cards.parse_board(self.board, self.deck())
    weights = []
    for name, text in zip(('OOP', 'IP'), self.ranges, strict=True):
      parsed = ranges.parse_range(text, deck)
      ranges.check_range(ranges.range_on_board(parsed, deck, board), f'the {name}')
      weights.append(parsed)
    return weights

  def study_hands(self, multiple: int) -> int:
    """The hands a study pads each spot of these ranges to (`build`'s `hands_multiple`): the hands in
    either range before a board removes any, rounded up to `multiple`, so that spots of one tree on
    any boards share one shape and compile their programs once (a board's own count, rounded, gives
    a few shapes)."""
    union = np.logical_or(*(ranges.parse_range(text, self.deck()) > 0 for text in self.ranges)).sum()
    return int(-(-union // multiple) * multiple)

  def solved_share(self, weights: list[np.ndarray] | None = None) -> float:
    """The share of the first deal's cards (a flop's turn cards, a turn's river cards) that suit
    isomorphism leaves to solve, one per class (1 where nothing merges); `weights`: the ranges on
    the board, where a caller has them."""
    deck, board = self.deck(), cards.parse_board(self.board, self.deck())
    if len(board) == 5:
      return 1.0
    if weights is None:
      weights = [ranges.range_on_board(w, deck, board) for w in self.range_weights()]
    hands = cards.hands(deck, board)
    symmetry = isomorphism_module.symmetry(board, hands, np.array(weights), deck.num_suits)
    if symmetry is None:
      return 1.0
    remaining = np.setdiff1d(deck.cards, board)
    first, _ = symmetry.classes(remaining)
    return len(np.unique(first)) / len(remaining)

  def fit(
    self,
    max_bytes: int,
    dtype=jnp.float32,
    state_arrays: int = 2,
    compact: bool = False,
    compress: bool = False,
    counts: dict | None = None,
    isomorphism: bool = True,
  ) -> bool:
    """Whether the spot is solved `compact` to fit `max_bytes` (`build`'s choice); `PokerInputError`
    where it does not fit either way. `counts`: `tree.describe` of its tree, where a caller has it;
    `isomorphism`: count only the blocks suit isomorphism leaves to solve (`build`'s)."""
    deck, board, config = self.deck(), cards.parse_board(self.board, self.deck()), self.config()
    counts = tree.describe(config, tree.build(config)) if counts is None else counts
    weights = [ranges.range_on_board(w, deck, board) for w in self.range_weights()]
    on_board = [w > 0 for w in weights]
    hands = int((on_board[0] | on_board[1]).sum()), int(on_board[0].sum()), int(on_board[1].sum())
    blocked = config.street == 1 or (config.street == 2 and jax.default_backend() == 'cpu')
    cards_dealt = config.deck_size - tree.BOARD_SIZE[config.street] if blocked else 0
    solved = self.solved_share(weights) if blocked and isomorphism else 1.0
    # A turn's river cards or a flop's turn cards split over devices: a block's passes on each at
    # once (padding blocks, `blocked.Blocks.padding`, add a fiftieth of the state or less).
    shards = 1 if not blocked else jax.local_device_count()
    need = functools.partial(
      estimated_bytes,
      counts,
      hands,
      dtype,
      cards_dealt,
      state_arrays,
      shards=shards,
      compress=compress,
      solved=solved,
    )
    compact = compact or (blocked and need() > max_bytes)
    if need(per_player=compact) > max_bytes:
      raise MemoryLimitError(
        f"this spot's tree has {counts['nodes']:,} public nodes x {hands[0]:,} hands (OOP's {hands[1]:,}, "
        f"IP's {hands[2]:,}): solving it needs about {size_text(need(per_player=compact))}, over the "
        f'limit of {size_text(max_bytes)} (--max-memory); use fewer bet sizes, a raise cap, or a '
        'later street'
      )
    return compact


def size_text(count: float) -> str:
  """A byte count as a message gives it: GiB from half of one up, MiB below."""
  return f'{count / 2**30:.1f} GiB' if count >= 2**29 else f'{count / 2**20:.1f} MiB'


def shared_tree(config: tree.TreeConfig, trees: dict) -> tuple[list, dict]:
  """(`tree.build(config)`'s nodes, `tree.describe`'s counts), made once in `trees`, a dict a caller
  keeps across spots of one tree on other boards (`SpotSpec.build`'s `trees`)."""
  if ('nodes', config) not in trees:
    trees['nodes', config] = tree.build(config)
    trees['counts', config] = tree.describe(config, trees['nodes', config])
  return trees['nodes', config], trees['counts', config]


def state_arrays(algorithm: str) -> int:
  """How many numbers per action and hand the solver's state keeps with `algorithm`: regrets, average
  weights, and the regret rule's own (PCFR+'s prediction)."""
  config, _ = solver_module.solver_config(algorithm, {})
  rule_state = jax.eval_shape(config.rule.init, jax.ShapeDtypeStruct((1,), jnp.float32))
  return 2 + len(jax.tree.leaves(rule_state))


# Bytes a whole tree's solve holds per (node + decision node x action) and hand, per byte of the
# float type: measured on the turn benchmark spot (peak resident memory less JAX's own, 1.3 GB for
# (10,816 + 7,101) x 1,128 float32 numbers), with room for the level arrays XLA keeps alive. A
# blocked tree's passes hold one block's nodes at a time, at the same rate.
_BYTES_FACTOR = 16


def estimated_bytes(
  counts: dict,
  hands,
  dtype=jnp.float32,
  blocks: int = 0,
  state_arrays: int = 2,
  per_player: bool = False,
  shards: int = 1,
  compress: bool = False,
  solved: float = 1.0,
) -> int:
  """About how much memory solving a tree with these counts (`tree.describe`) takes, over `hands`:
  (both ranges' hands, OOP's, IP's), or one count for all three; `blocks`: the cards of the first
  deal of a tree solved in blocks (0: the whole tree at once); `per_player`: each player's edges
  kept over that player's hands alone (else over both ranges'); `shards`: the devices whose blocks'
  passes are live at once.

  Whole tree: `_BYTES_FACTOR` per (node + decision node x action) x hand and byte of the float
  type. In blocks (`blocked.Blocks`): the state, `state_arrays` numbers per action of each player's
  decision nodes and hand (regrets and average weights; PCFR+ keeps a third), twice (the program
  takes the state donated, so the second stands for what the process holds beside it: the tree's
  nodes, the spot's tables, the checks: on the example flop the process peaked at 2.58 GB against
  this estimate's 3.08, 2.27 against 2.47 `per_player`); and one block's passes, `_BYTES_FACTOR`
  per (node / `blocks`) x hand. The laid-out strategy (`--strategy-out`, `--plot`, `--html`) is not
  in it: on a flop, decision nodes x actions x hands more. `compress`: the regrets and averages take
  2 bytes a number (the second copy, standing for the rest, stays at the float type's size).
  `solved`: the share of the blocks solved where suit isomorphism merges some (the state below the
  deal shrinks with it; the street above, a small part, is counted as if it did too)."""
  union, oop, ip = (hands,) * 3 if np.ndim(hands) == 0 else hands
  size = jnp.dtype(dtype).itemsize
  if not blocks:
    cells = counts['decision_nodes'] * counts['max_actions'] + counts['nodes']
    return int(_BYTES_FACTOR * cells * union * size)
  if not per_player:
    oop = ip = union
  numbers = solved * (counts['edges'][0] * oop + counts['edges'][1] * ip)
  state = state_arrays * numbers * size
  stored = (2 * 2 + (state_arrays - 2) * size) * numbers if compress else state
  passes = _BYTES_FACTOR * (counts['nodes'] // blocks + 1) * union * size * shards
  return int(stored + state + passes)


@dataclasses.dataclass
class SubgameResult:
  game: subgame.Subgame
  algorithm: str
  iterations: int
  seconds: float  # solving only (the average policies of the checks included)
  jit_seconds: float
  evaluation_seconds: float  # one exact evaluation
  policy_seconds: float  # producing the checks' average policies (in `seconds`)
  check_seconds: float  # the checks' exact evaluations during the solve (not in `seconds`)
  exploitability: float  # chips per deal
  exploitability_pct: float  # of the starting pot
  ev: list  # [2] expected share of the starting pot, chips
  equity: list  # [2]
  memory_bytes: int
  curve: list  # {iteration, seconds, exploitability, exploitability_pct}
  state: object = dataclasses.field(default=None, repr=False)  # the solver's final state
  laid_out: jax.Array | None = dataclasses.field(default=None, repr=False)  # the policy, once made

  @property
  def policy(self) -> jax.Array:
    """[D, A, H] the average strategy, laid out when first asked for (on a flop tree as large as the
    solver's state)."""
    if self.laid_out is None:
      self.laid_out = _average_policy(self.state, self.game)
    return self.laid_out

  def root_policy(self) -> jax.Array:
    """[A, H] the average strategy at the root, without laying out the rest."""
    if self.laid_out is not None:
      return self.laid_out[0]
    return _average_root(self.state, self.game)


_average_policy = jax.jit(solver_module.average_policy)
_average_root = jax.jit(solver_module.average_root)
_average_upper = jax.jit(solver_module.average_upper)
_normalizer = jax.jit(subgame.normalizer)  # once per shape, not op by op


def equities(game: subgame.Subgame) -> jax.Array:
  """[2] each player's share of the pot if both checked down from the starting board (ties split)."""
  spot, info = game.spot, game.tree.info
  boards = len(info.river_keys)
  to_come = len(info.river_keys[0]) if boards else 0
  left = spot.remaining.shape[0] - 4  # cards that can come, given both hands
  chance = 1 / math.comb(left, to_come)
  out = []
  for p in range(2):
    opponent = jnp.broadcast_to(spot.ranges[1 - p], (boards, game.num_hands)) * spot.river_mask
    difference = showdown.showdown_difference(spot.tables, opponent[..., None])[..., 0]  # [R, H]
    mass = showdown.compatible_mass(spot.hands, opponent)
    share = ((mass + difference) / 2 * spot.river_mask).sum(0) * chance  # [H]
    out.append((spot.ranges[p] * share).sum())
  return jnp.stack(out) / subgame.normalizer(game)


_equities = jax.jit(equities)  # one program per tree shape, not its operations one by one


def solve(
  spec: SpotSpec | subgame.Subgame,
  algorithm: str = defaults.ALGORITHM,
  *,
  target_pct: float | None = defaults.TARGET_PCT,
  iterations: int | None = None,
  seconds: float | None = None,
  eval_every: int = defaults.EVAL_EVERY,
  dtype=jnp.float32,
  on_progress: Callable | None = None,
  programs: dict | None = None,
  compress: bool = False,
  **hyperparameters,
) -> SubgameResult:
  """Solves a spot until its exploitability is at most `target_pct` % of the pot (checked every
  `eval_every` iterations), or `iterations` (default 1,000 when only a target is given), or
  `seconds` of solving. `programs`: a dict kept across solves with one algorithm and its
  hyper-parameters, so that spots of one shape compile their programs once (`training.train`).
  `compress`: the regrets and the average's weights kept in 16 bits (`solver.Quantized`)."""
  game = spec.build(dtype, state_arrays=state_arrays(algorithm)) if isinstance(spec, SpotSpec) else spec
  pot = game.tree.info.config.pot
  if iterations is None and seconds is None:
    iterations = defaults.MAX_ITERATIONS
  solver = subgame_solver(algorithm, compress=compress, **hyperparameters)
  target = None if target_pct is None else target_pct / 100 * pot
  # A blocked tree's policy laid out is as large as its state (a flop's, gigabytes): made if asked for.
  result = training.train(
    game, solver, iterations=iterations, seconds=seconds, eval_every=eval_every, target=target,
    on_progress=on_progress, warm_up=True, policy=game.blocks is None, programs=programs,
  )  # fmt: skip
  values = np.asarray(result.values)
  return SubgameResult(
    game=game,
    algorithm=solver.name,
    iterations=result.iterations,
    seconds=result.seconds,
    jit_seconds=result.jit_seconds,
    evaluation_seconds=result.evaluation_seconds,
    policy_seconds=result.policy_seconds,
    check_seconds=result.check_seconds,
    exploitability=result.exploitability,
    exploitability_pct=100 * result.exploitability / pot,
    ev=[float(v + pot / 2) for v in values],
    equity=[float(e) for e in jax.device_get(_equities(game))],
    memory_bytes=memory.nbytes(result.state) + memory.nbytes(game),
    curve=[{**point, 'exploitability_pct': 100 * point['exploitability'] / pot} for point in result.curve],
    state=result.state,
    laid_out=result.policy,
  )


# River spots solved together at most (`solve_many`): a river spot's arrays are at most a few
# megabytes, and its solve is short beside calling its programs.
BATCH_SPOTS = 256


def batch_key(game: subgame.Subgame):
  """River spots whose keys are equal have one shape (tree, hands, types) and solve in one vmapped
  call (`solve_many`); None for turn and flop spots (large, and in blocks on a CPU), which solve one
  by one."""
  if game.blocks is not None or game.tree.info.config.street != 3:
    return None
  return training.shape_signature(game)


@functools.cache
def _batch_programs(algorithm: str, compress: bool, hyperparameters: tuple):
  """(init, chunk, evaluate, the solver's name) of `algorithm`, vmapped over stacked spots and
  jitted: `chunk(state, game, active, n)` runs n iterations of the active spots and leaves the
  others' state as it was."""
  solver = subgame_solver(algorithm, compress=compress, **dict(hyperparameters))

  def chunk(state, game, active, steps):
    new = jax.lax.fori_loop(0, steps, lambda _, x: solver.update(x, game), state)
    return jax.tree.map(lambda a, b: jnp.where(active, a, b), new, state)

  vmapped = jax.vmap(chunk, in_axes=(0, 0, 0, None))
  return (
    jax.jit(jax.vmap(solver.init)),
    jax.jit(vmapped, donate_argnums=0),
    jax.jit(jax.vmap(solver.evaluate_average)),
    solver.name,
  )


def solve_many(
  games: list,
  algorithm: str = defaults.ALGORITHM,
  *,
  target_pct: float | None = defaults.TARGET_PCT,
  iterations: int | None = None,
  eval_every: int = defaults.EVAL_EVERY,
  compress: bool = False,
  **hyperparameters,
) -> list[SubgameResult]:
  """`solve` of spots of one shape (equal `batch_key`s) in one vmapped program: every
  `eval_every` iterations all are checked, and a spot that has reached `target_pct` (or the
  iterations) keeps its state while the rest go on, so each stops where `solve` would stop it (the
  same checks; float sums in another order). Each result's `seconds` and `check_seconds` are its
  share of the batch's; `jit_seconds` the batch's compiling."""
  keys = {batch_key(g) for g in games}
  if len(keys) != 1 or None in keys:
    raise ValueError('solve_many takes river spots of one shape (see batch_key)')
  if iterations is None:
    iterations = defaults.MAX_ITERATIONS
  init, chunk, evaluate, name = _batch_programs(algorithm, compress, tuple(sorted(hyperparameters.items())))
  count, pot = len(games), np.array([g.tree.info.config.pot for g in games], np.float64)
  stacked = jax.tree.map(lambda *x: jnp.stack(x), *games)
  start = time.perf_counter()
  state = init(stacked)
  live = np.ones(count, bool)  # a spot's iterations run while it is live
  compiled = chunk.lower(state, stacked, jnp.asarray(live), np.int32(1)).compile()  # any count
  evaluated = evaluate.lower(state, stacked).compile()
  jit_seconds = time.perf_counter() - start
  done = np.zeros(count, np.int64)
  curves = [[] for _ in range(count)]
  solve_seconds = check_seconds = 0.0
  checks = 0
  while live.any():
    steps = int(min(eval_every, iterations - done[live].max()))
    begin = time.perf_counter()
    state = jax.block_until_ready(compiled(state, stacked, jnp.asarray(live), np.int32(steps)))
    solve_seconds += time.perf_counter() - begin
    done[live] += steps
    begin = time.perf_counter()
    nash_conv, values = (np.asarray(x) for x in evaluated(state, stacked))
    check_seconds += time.perf_counter() - begin
    checks += 1
    exploitability = nash_conv / 2
    for i in np.flatnonzero(live):
      curves[i].append(
        {'iteration': int(done[i]), 'seconds': solve_seconds, 'exploitability': float(exploitability[i])}
      )
    reached = exploitability <= (-np.inf if target_pct is None else target_pct / 100 * pot)
    live &= ~reached & (done < iterations)
  results = []
  for i, game in enumerate(games):
    own = jax.tree.map(lambda x, i=i: x[i], state)
    results.append(
      SubgameResult(
        game=game,
        algorithm=name,
        iterations=int(done[i]),
        seconds=solve_seconds / count,
        jit_seconds=jit_seconds,
        evaluation_seconds=check_seconds / checks / count,
        policy_seconds=0.0,
        check_seconds=check_seconds / count,
        exploitability=float(exploitability[i]),
        exploitability_pct=100 * float(exploitability[i]) / pot[i],
        ev=[float(v + pot[i] / 2) for v in values[i]],
        equity=[float(e) for e in jax.device_get(_equities(game))],
        memory_bytes=memory.nbytes(own) + memory.nbytes(game),
        curve=[{**c, 'exploitability_pct': 100 * c['exploitability'] / pot[i]} for c in curves[i]],
        state=own,
      )
    )
  return results


def root_summary(result) -> list[tuple[str, float, dict]]:
  """The first decision (OOP's) by hand class: (class, range weight, {action: probability}); of a
  `SubgameResult`, or of a native solve's `native_spot.SpotResult` kept with its root (else [])."""
  game = getattr(result, 'game', None)
  if game is None:
    if result.root is None:
      return []
    labels, policy, weights, hands = result.root_labels, result.root, result.ranges[0], result.hole_cards
  else:
    info = game.tree.info
    labels = info.nodes[info.decisions[0]].labels
    policy = np.asarray(result.root_policy())[: len(labels)]  # [A, H]
    weights, hands = np.asarray(game.spot.ranges[0]), np.asarray(game.spot.hands)
  classes = ranges.class_of_hands(hands)
  rows = []
  for c in np.unique(classes[weights > 0]):
    members = (classes == c) & (weights > 0)
    total = weights[members].sum()
    mix = (policy[:, members] * weights[members]).sum(1) / total
    rows.append((ranges.HAND_CLASSES[c], float(total), dict(zip(labels, map(float, mix), strict=True))))
  rows.sort(key=lambda row: -_strength(row[0]))
  return rows


def _strength(name: str) -> float:
  """Orders hand classes as a range chart reads: pairs high to low, then by high card and kicker."""
  order = cards.RANKS
  high, low = order.index(name[0]), order.index(name[1])
  pair = name[0] == name[1]
  return 1000 * pair + 20 * high + low + 0.5 * name.endswith('s')


def devices(game: subgame.Subgame) -> int:
  """The devices a game's blocks are split over (`blocked.Blocks.shards`: a turn's river cards, a
  flop's turn cards; 1 where none are)."""
  shards, blocks = 1, game.blocks
  while blocks is not None:
    shards = max(shards, blocks.shards)
    blocks = blocks.forest if isinstance(blocks.forest, blocked_module.Blocks) else None
  return shards


def merged_cards(game: subgame.Subgame) -> dict | None:
  """{'street': the deal whose cards suit isomorphism merged, 'cards': its cards, 'solved': the blocks
  solved (one per class)}, or None where nothing was merged."""
  if game is None:
    return None
  merged = None if game.blocks is None else game.blocks.merged
  if merged is None:
    return None
  street = ('turn', 'river')[game.tree.info.config.street - 1]
  return {'street': street, 'cards': merged.cards, 'solved': game.blocks.num_blocks - game.blocks.padding}


def report(result, spec: SpotSpec | None = None) -> dict:
  """The result (`SubgameResult`, or `native_spot.SpotResult`) as JSON holds it."""
  payload = {
    'exploitability': result.exploitability,
    'exploitability_pct': result.exploitability_pct,
    'iterations': result.iterations,
    'seconds': result.seconds,
    'jit_seconds': result.jit_seconds,
    'evaluation_seconds': result.evaluation_seconds,
    'check_seconds': result.check_seconds,
    'algorithm': result.algorithm,
    'ev': {'oop': result.ev[0], 'ip': result.ev[1]},
    'equity': {'oop': result.equity[0], 'ip': result.equity[1]},
    'memory_bytes': result.memory_bytes,
    **_sizes(result),
    'curve': result.curve,
  }
  game = getattr(result, 'game', None)  # a native solve's result has none (`native_spot`)
  merged = getattr(result, 'isomorphism', None) if game is None else merged_cards(game)
  if merged is not None:
    payload['isomorphism'] = merged
  if game is not None and game.lock is not None:
    payload['locked'] = locked_summary(game)
  if spec is not None:
    payload['spot'] = dataclasses.asdict(spec)
  return payload


def _sizes(result) -> dict:
  """The hands, nodes, decision nodes and devices of a solve (`SubgameResult`, or a native solve's
  `native_spot.SpotResult`, which counts the hands of either range and runs on one)."""
  game = getattr(result, 'game', None)
  if game is None:
    return {
      'hands': result.hands,
      'nodes': result.nodes,
      'decision_nodes': result.decision_nodes,
      'devices': 1,
    }
  return {
    'hands': game.num_hands, 'nodes': game.tree.num_nodes, 'decision_nodes': game.tree.num_decisions,
    'devices': devices(game),
  }  # fmt: skip


def save_strategy(path: str, result: SubgameResult, *, force: bool = False) -> None:
  """The full strategy as a compressed NumPy archive: `probabilities` [D, A, H] (float32, the
  tree's decision nodes without padding),
  `hands` [H, 2] card ids, `ranges` [2, H], and `metadata` (JSON: for each decision row its player,
  line of actions and action labels, and the count of hands locked there where a lock has some; the
  board and pot). Written atomically; never over a file
  jaxcfr did not write."""
  write_strategy(path, *strategy_arrays(result), force=force)


def write_strategy(path: str, metadata: dict, arrays: dict, *, force: bool = False) -> None:
  """`strategy_arrays`' (metadata, arrays) written as `save_strategy` writes them."""
  arrays = {**arrays, 'metadata': np.frombuffer(json.dumps(metadata).encode(), np.uint8)}
  outputs.write_file(
    path, lambda file: np.savez_compressed(file, **arrays), force=force, what='--strategy-out'
  )


def strategy_arrays(result: SubgameResult, first_street: bool = False) -> tuple[dict, dict]:
  """(metadata, arrays) of the strategy as `save_strategy` writes them and `load_strategy` reads them;
  with `first_street`, of the decisions before the first dealt card alone (on a blocked tree laid out
  without the blocks': a flop report's)."""
  game = result.game
  info = game.tree.info
  rows = [r for r, i in enumerate(info.decisions) if i >= 0]  # without the padding rows
  if first_street:
    rows = [r for r in rows if not any(label.startswith('deal ') for label in info.line(info.decisions[r]))]
  width = max(len(info.nodes[info.decisions[r]].labels) for r in rows)
  locked = subgame.locked_rows(game)  # [D, A, H] or None
  locked = None if locked is None else (~np.isnan(np.asarray(locked[:, 0]))).sum(1)  # [D] hands
  if first_street and game.blocks is not None:
    policy = np.asarray(_average_upper(result.state, game, jnp.asarray(rows, jnp.int32)), np.float32)
  else:
    policy = np.asarray(result.policy, np.float32)[rows]
  metadata = {
    'format': STRATEGY_FORMAT,
    'board': [cards.card_text(int(c)) for c in np.asarray(game.spot.board)],
    'pot': info.config.pot,
    'stack': info.config.stack,
    'algorithm': result.algorithm,
    'iterations': result.iterations,
    'exploitability_pct': result.exploitability_pct,
    'nodes': [
      {
        'player': ('oop', 'ip')[info.nodes[info.decisions[r]].player],
        'line': named_line(game, info.decisions[r]),
        'actions': list(info.nodes[info.decisions[r]].labels),
        **({} if locked is None or not locked[r] else {'locked': int(locked[r])}),
      }
      for r in rows
    ],
  }
  arrays = {
    'probabilities': policy[:, :width],
    'hands': np.asarray(game.spot.hands),
    'ranges': np.asarray(game.spot.ranges, np.float32),
  }
  return metadata, arrays


def decision_lines(game: subgame.Subgame) -> dict[int, tuple[str, ...]]:
  """{decision row: its path of tokens ('b120', 'c', 'Qh', ...: `grid.token`)} of the tree's decisions."""
  info = game.tree.info
  return {
    row: tuple(grid.token(label) for label in named_line(game, node))
    for row, node in enumerate(info.decisions)
    if node >= 0
  }


def node_path(line: tuple[str, ...]) -> str:
  """A decision's path of tokens as `--node` and `--lock` write it ('root' for the first)."""
  return ','.join(line) or 'root'


def locked_summary(game: subgame.Subgame) -> dict:
  """{'nodes': decisions with a locked hand, 'locked': [{'node': path, 'player', 'hands': count}]}
  of a game with locks (`locking`)."""
  laid_out = subgame.locked_rows(game)
  if laid_out is None:
    return {'nodes': 0, 'locked': []}
  fixed = ~np.isnan(np.asarray(laid_out[:, 0]))  # [D, H]
  lines = decision_lines(game)
  player = np.asarray(game.tree.decision_player)
  locked = [
    {'node': node_path(lines[row]), 'player': ('oop', 'ip')[int(player[row])], 'hands': int(n)}
    for row, n in enumerate(fixed.sum(1))
    if n and row in lines
  ]
  return {'nodes': len(locked), 'locked': locked}


def named_line(game: subgame.Subgame, node: int) -> list[str]:
  """The labels from the root to `node`, the dealt cards by name ('deal Qh')."""
  remaining = np.asarray(game.spot.remaining)

  def named(label: str) -> str:
    if not label.startswith('deal '):
      return label
    return f'deal {cards.card_text(int(remaining[int(label.split()[1])]))}'

  return [named(label) for label in game.tree.info.line(node)]


def load_strategy(path: str) -> tuple[dict, dict]:
  """(metadata, arrays) of a file `save_strategy` wrote."""
  try:
    with np.load(path) as archive:
      arrays = {name: archive[name] for name in archive.files}
    metadata = json.loads(arrays.pop('metadata').tobytes())
  except (OSError, ValueError, EOFError, KeyError, AttributeError) as error:
    reason = error.strerror if isinstance(error, OSError) and error.strerror else 'not an .npz jaxcfr wrote'
    raise ValueError(f'{path!r} is not a subgame strategy written by jaxcfr ({reason})') from None
  if metadata.get('format') != STRATEGY_FORMAT:
    raise ValueError(f'{path!r} is not a subgame strategy written by jaxcfr')
  return metadata, arrays
