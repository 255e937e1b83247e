"""External-sampling MCCFR on the abstract game, over sampled deals and buckets (the blueprint trainer).

One `update` runs, for player 0 and then player 1 (the traverser p), B traversals each: both batches'
deals (two hole pairs and the whole board) are drawn, and both players' buckets on every street looked
up, in one batched call. The tree has no chance nodes once the cards are dealt, so a batch of
traversals is a dense pass over the tree (the design proposed for this trainer, rearranged so that
only what must go depth by depth does):

- for all decision rows at once, `[D, B, A]`: the current strategy at (row, the acting player's bucket
  on the row's street), by regret matching over the `[D, K, A]` table and one gather; the action the
  opponent samples from it at each of its rows; what is explored (all of p's legal actions, less the
  pruned ones; the opponent's sampled one);
- top down, depth by depth, the reach mask: 1 at the root, then the parent's reach and its explored
  edge;
- bottom up, depth by depth, p's values: showdowns by `hand_rank` on the whole board (a sign per deal),
  folds by the chips; p's rows average their explored children by p's strategy, the opponent's take
  the sampled child;
- at p's reached rows the regret of each explored action grows by v(child) - v(row); at the opponent's
  reached rows its average strategy grows by its current strategy (OpenSpiel's "simple" averaging, as
  `jaxcfr.mccfr`): one deterministic segment sum (`jaxcfr.tree.segment_sum`) into the `[D, K, A]`
  tables, so a seed gives the same bits on every backend.

Every (row, deal) pair is computed, reached or not: the cost per traversal is the tree's size, which
is why the bet presets keep it small (a frontier of visited nodes, as `jaxcfr.mccfr` packs, would pay
off on trees far larger than the presets). The traverser is a traced loop index, so one program serves
both players. Pluribus's refinements are the options of `jaxcfr.mccfr` (same names and defaults):
linear weighting by discount intervals, pruning of p's actions whose regret is at most
`prune_threshold` on a share `prune_probability` of traversals after `prune_after` iterations (never on
the last street, nor the action of highest regret), and a `regret_floor`. Batches split over devices
as `jaxcfr.mccfr`'s (each device samples B / devices deals from its own key; the increments are summed
with `psum` before they apply).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import algorithms, distributed, tree
from jaxcfr.mccfr import ALWAYS
from jaxcfr.poker.blueprint.game import BlueprintGame, deal, deal_buckets, showdown
from jaxcfr.protocol import Solver
from jaxcfr.solvers import normalize_policy, regret_matching

NAME = 'blueprint-es-mccfr'


class BlueprintState(NamedTuple):
  """The trainer's state: `[D, K, A]` tables and the key the next update consumes."""

  iteration: jax.Array  # [] int32: updates completed (each: B traversals per player)
  cumulative_regret: jax.Array  # [D, K, A]
  cumulative_policy: jax.Array  # [D, K, A]
  key: jax.Array  # [] PRNG key


def legal_cells(game: BlueprintGame) -> jax.Array:
  return game.legal_mask[:, None, :]  # [D, 1, A]


def current_policy(state: BlueprintState, game: BlueprintGame) -> jax.Array:
  """`[D, K, A]` regret matching of the cumulative regrets (uniform where none is positive)."""
  return regret_matching(state.cumulative_regret, legal_cells(game))


def average_policy(state: BlueprintState, game: BlueprintGame) -> jax.Array:
  """`[D, K, A]` average strategy (the blueprint); uniform at cells never visited."""
  return normalize_policy(state.cumulative_policy, legal_cells(game))


def blueprint_solver(
  batch_size: int = 1024,
  devices: int = 1,
  linear_until: int = ALWAYS,
  discount_interval: int = 1,
  prune_threshold: float | None = None,
  prune_probability: float = 0.95,
  prune_after: int = 0,
  regret_floor: float | None = None,
) -> Solver:
  """External-sampling MCCFR over sampled deals, `batch_size` traversals per player per update (a
  `jaxcfr.protocol.Solver` whose game is a `BlueprintGame`). Hyper-parameters as `es-mccfr`'s."""
  given = dict(
    batch_size=batch_size, linear_until=linear_until, discount_interval=discount_interval,
    prune_threshold=prune_threshold, prune_probability=prune_probability, prune_after=prune_after,
    regret_floor=regret_floor,
  )  # fmt: skip
  hyperparameters = algorithms.REGISTRY['es-mccfr'].resolve(**given)  # the registry's checks
  if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
    raise ValueError(f'devices must be a positive integer, got {devices!r}')
  if batch_size % devices:
    raise ValueError(f'batch size {batch_size} must be a multiple of the device count {devices}')
  if devices > jax.device_count():
    raise ValueError(f'{devices} devices requested; {jax.device_count()} available ({jax.default_backend()})')
  pruning = prune_threshold is not None

  def init(game: BlueprintGame, key: jax.Array | None = None) -> BlueprintState:
    if key is None:
      raise ValueError('the blueprint trainer draws deals from a key: init(game, jax.random.key(seed))')
    zeros = jnp.zeros((game.num_decisions, game.max_buckets, game.num_actions), game.dtype)
    state = BlueprintState(jnp.zeros((), jnp.int32), zeros, zeros, key)
    if devices > 1:
      state = distributed.replicate(state, _mesh(devices))  # over every process's devices
    return state

  def update(state: BlueprintState, game: BlueprintGame) -> BlueprintState:
    t = state.iteration + 1
    key, deal_key, walk_key = jax.random.split(state.key, 3)
    prune = jnp.asarray(pruning) & (t > prune_after)
    threshold = jnp.asarray(prune_threshold if pruning else 0.0, game.dtype)
    options = dict(prune=prune, prune_probability=prune_probability, threshold=threshold)
    regret, average = _batched(
      game, state.cumulative_regret, state.cumulative_policy, deal_key, walk_key, batch_size, devices,
      regret_floor, options,
    )  # fmt: skip
    if linear_until > 0:
      k = t // discount_interval
      due = (t % discount_interval == 0) & (t <= linear_until)
      factor = jnp.where(due, k / (k + 1), 1).astype(game.dtype)
      regret, average = regret * factor, average * factor
    return BlueprintState(t, regret, average, key)

  return Solver(init, update, current_policy, average_policy, NAME, hyperparameters)


def _batched(game, regret, average, deal_key, walk_key, batch, devices, regret_floor, options):
  """The tables after a batch of traversals for player 0, then one for player 1 (under the regrets
  player 0's batch left); over devices, each device's increments are summed (`psum`) before they
  apply. The deals of both players' batches and their buckets come from one batched call, and one
  traversal program serves both players (a loop over the player: half the compilation)."""
  count = batch // devices
  if devices > 1:  # one stream per device: results depend on the device count
    deal_keys, walk_keys = jax.random.split(deal_key, devices), jax.random.split(walk_key, devices)
  else:
    deal_keys, walk_keys = deal_key[None], walk_key[None]

  def run(deal_keys, walk_keys, game, regret, average, reduce):
    buckets, outcome = sample_deals(game, deal_keys[0], 2 * count)  # [2b, 2, S], [2b]
    keys = jax.random.split(walk_keys[0])

    def one_player(player, tables):
      regret, average = tables
      start = player * count
      increments = traverse(
        game, regret, jax.lax.dynamic_slice_in_dim(buckets, start, count),
        jax.lax.dynamic_slice_in_dim(outcome, start, count), keys[player], player, **options,
      )  # fmt: skip
      regret_increment, average_increment = reduce(increments)
      regret = regret + regret_increment
      if regret_floor is not None:
        regret = jnp.maximum(regret, regret_floor)
      return regret, average + average_increment

    return jax.lax.fori_loop(0, 2, one_player, (regret, average))

  if devices == 1:
    return run(deal_keys, walk_keys, game, regret, average, lambda increments: increments)
  spec = jax.sharding.PartitionSpec

  def per_device(deal_keys, walk_keys, game, regret, average):
    return run(deal_keys, walk_keys, game, regret, average, lambda x: jax.tree.map(_psum, x))

  sharded = jax.shard_map(
    per_device, mesh=_mesh(devices), in_specs=(spec('batch'), spec('batch'), spec(), spec(), spec()),
    out_specs=spec(), check_vma=False,
  )  # fmt: skip
  return sharded(deal_keys, walk_keys, game, regret, average)


def _psum(x):
  return jax.lax.psum(x, 'batch')


def sample_deals(game: BlueprintGame, key: jax.Array, batch: int) -> tuple[jax.Array, jax.Array]:
  """`batch` uniform deals as a traversal takes them: both players' buckets on every street (int32
  [B, 2, S], one batched lookup) and the sign of player 0's showdown on the whole board (int32 [B])."""
  hole, board = deal(game, key, batch)
  return deal_buckets(game, hole, board), showdown(hole, board)


def _mesh(devices: int) -> jax.sharding.Mesh:
  return jax.make_mesh(
    (devices,),
    ('batch',),
    devices=distributed.mesh_devices(devices),
    axis_types=(jax.sharding.AxisType.Auto,),
  )


def traverse(
  game: BlueprintGame,
  regret: jax.Array,  # [D, K, A]
  buckets: jax.Array,  # int32 [B, 2, S]: each deal's buckets by player and street
  outcome: jax.Array,  # int32 [B]: sign(rank of player 0 - rank of player 1) on the whole board
  key: jax.Array,
  player,  # 0 or 1; may be traced
  *,
  prune=False,
  prune_probability: float = 0.0,
  threshold=0.0,
) -> tuple[jax.Array, jax.Array]:
  """External-sampling traversals for `player` of the given deals (`sample_deals`; or every deal of a
  small deck: `game.all_deals`, `game.deal_buckets`, `game.showdown`) under the regret-matching
  strategy of `regret`: `(regret increment, average increment)`, `[D, K, A]` each, summed over deals.

  Summed over every deal of a deck (each once) with a pure opponent strategy, the regret increment is
  the full-width counterfactual regret of the history-compiled twin, and the average increment the
  opponent's reach-weighted strategy (`jaxcfr.solvers.player_regrets`); the tests check both.

  Everything that needs no other depth is computed for all decision rows at once (`[D, B, A]`: the
  strategies, the opponent's samples, what is explored); only the reach (top down) and the values
  (bottom up) go depth by depth, a gather and a reduction each, which keeps the program small.
  """
  num_actions = game.num_actions
  num_cells = game.num_decisions * game.max_buckets
  by_seat = jnp.moveaxis(buckets, 0, -1)  # [2, S, B]
  cells = (
    jnp.arange(game.num_decisions)[:, None] * game.max_buckets + by_seat[game.player, game.street]
  )  # [D, B]
  legal = game.legal_mask[:, None, :]  # [D, 1, A]
  # Regret matching over the table, then one gather: far cheaper than over [D, B, A] once B > K.
  sigma = tree.gather(regret_matching(regret, legal).reshape(num_cells, num_actions), cells)  # [D, B, A]
  draws = jax.random.uniform(key, (game.num_decisions + 1, outcome.shape[0]), regret.dtype)
  keep = None
  if prune is not False:  # on a share of the traversals, p's actions of low regret (not the best)
    regrets = tree.gather(regret.reshape(num_cells, num_actions), cells)  # [D, B, A]
    best = regrets == jnp.max(jnp.where(legal, regrets, -jnp.inf), -1, keepdims=True)
    keep = ((regrets > threshold) | best) | ~(prune & (draws[-1] < prune_probability))[None, :, None]
  instant, reach = walk(game, sigma, outcome, draws[:-1], player, keep)
  # The traverser's regrets at its rows and the opponent's strategy at its rows, where reached: one
  # deterministic segment sum of [regret | average] increments (their rows never overlap).
  own = (game.player == player)[:, None, None]  # [D, 1, 1]
  increments = jnp.concatenate([instant, jnp.where(own, 0, sigma)], -1).reshape(-1, 2 * num_actions)
  rows = jnp.where(reach, cells, num_cells).reshape(-1)
  sums = tree.segment_sum(increments, rows, num_cells)  # [D * K, 2A]
  return sums[:, :num_actions].reshape(regret.shape), sums[:, num_actions:].reshape(regret.shape)


def walk(
  game: BlueprintGame,
  sigma: jax.Array,  # [D, B, A]: each row's current strategy for the acting player's cards in each deal
  outcome: jax.Array,  # int32 [B]: sign(rank of player 0 - rank of player 1) on the whole board
  draws: jax.Array,  # [D, B]: uniform draws of the opponent's samples
  player,  # the traverser, 0 or 1; may be traced
  keep: jax.Array | None = None,  # bool [D, B, A]: the traverser's actions not pruned (None: all)
) -> tuple[jax.Array, jax.Array]:
  """One external-sampling traversal per deal over the whole tree, given every row's strategy (from a
  regret table or a network): `(instant regrets [D, B, A], reach bool [D, B])`. The instant regret
  v(child) - v(row) is the traverser's, at its rows and explored actions (0 elsewhere); `reach` says
  which (row, deal) pairs the traversal visits. Pruning (`keep`) applies to the traverser's rows
  before the last street."""
  dtype = sigma.dtype
  batch = outcome.shape[0]
  num_actions = game.num_actions
  legal = game.legal_mask[:, None, :]  # [D, 1, A]
  own = (game.player == player)[:, None, None]  # [D, 1, 1]
  # The opponent samples one action from its current strategy; the traverser explores every legal
  # action, less the pruned ones (never on the last street).
  sampled = _inverse_cdf(sigma, legal, draws)  # [D, B]
  explored = jnp.where(own, legal, jnp.arange(num_actions) == sampled[..., None])  # [D, B, A]
  if keep is not None:
    prunable = own & (game.street < game.num_streets - 1)[:, None, None]
    explored = explored & jnp.where(prunable, keep, True)
  weights = jnp.where(own, sigma, 1).astype(dtype) * explored  # [D, B, A]

  # Top down: which (row, deal) pairs the traversal reaches.
  edge = explored[game.parent, :, game.slot]  # [D, B]: the edge from the parent is explored
  reach, above = [], None
  for level in game.levels:
    n = level.size[0]
    if not n:
      break
    here = edge[level.offset : level.offset + n]
    above = jnp.ones_like(here) if above is None else here & above[level.parent]
    reach.append(above)
  reach = jnp.concatenate(reach)  # [D, B]

  # Bottom up: the traverser's values of every node; each decision row's children's values.
  sign = jnp.asarray(1 - 2 * player, dtype)
  values, below_rows, value_rows = None, [], []
  for level in reversed(game.levels):
    n = level.size[0]
    terminal = sign * (level.fold[:, None] + level.stake[:, None] * outcome.astype(dtype)[None, :])  # [t, B]
    if n:
      padded = jnp.concatenate([values, jnp.zeros((1, batch), dtype)])
      below = jnp.moveaxis(tree.gather(padded, level.children), 1, 2)  # [n, B, A]
      value = _sum_actions(weights[level.offset : level.offset + n] * below)  # [n, B]
      below_rows.append(below)
      value_rows.append(value)
      terminal = jnp.concatenate([value, terminal])
    values = terminal
  below = jnp.concatenate(below_rows[::-1])  # [D, B, A]
  value = jnp.concatenate(value_rows[::-1])  # [D, B]
  return jnp.where(own & explored, below - value[..., None], 0), reach


def _inverse_cdf(probs: jax.Array, allowed: jax.Array, uniform_draw: jax.Array) -> jax.Array:
  """`[..., A]` probabilities, `[..., A]` allowed slots, `[...]` draws -> the first allowed slot of
  positive probability whose cumulative probability exceeds the draw (the last such slot when the
  total rounds below it): a slot of probability 0 is never drawn (as `jaxcfr.mccfr`'s). Unrolled over
  the few actions: elementwise work that fuses, where reductions over a short last axis do not."""
  allowed = jnp.broadcast_to(allowed, probs.shape)
  total = jnp.zeros_like(uniform_draw)
  first, last = jnp.full(uniform_draw.shape, -1, jnp.int32), jnp.zeros(uniform_draw.shape, jnp.int32)
  for a in range(probs.shape[-1]):
    possible = allowed[..., a] & (probs[..., a] > 0)
    total = total + probs[..., a]
    first = jnp.where((first < 0) & possible & (total > uniform_draw), a, first)
    last = jnp.where(possible, a, last)
  return jnp.where(first >= 0, first, last)


def _sum_actions(values: jax.Array) -> jax.Array:
  """`[..., A]` -> `[...]`, summed by an unrolled loop over the few actions (fuses on CPUs)."""
  total = values[..., 0]
  for a in range(1, values.shape[-1]):
    total = total + values[..., a]
  return total


def traversals_per_update(solver: Solver) -> int:
  """Traversals one update runs (both players)."""
  return 2 * int(solver.hyperparameters['batch_size'])


def table_bytes(game: BlueprintGame) -> int:
  """Bytes of the two `[D, K, A]` tables in the game's dtype."""
  return 2 * game.num_decisions * game.max_buckets * game.num_actions * np.dtype(game.dtype).itemsize
