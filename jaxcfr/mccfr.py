"""Sampled MCCFR (Lanctot et al. 2009) as batched array code on a `CompiledGame`.

One `update` runs, for each player in turn (the traverser), a batch of B
sampled traversals and adds their regrets and average-strategy increments
into the `[I, A]` tables as segment sums (`tree.segment_sum`: a scatter-add
on CPUs, which run it in order, a sort and a segmented prefix sum elsewhere, so
a seed gives the same bits on every backend):

- external sampling (`es_mccfr`): chance and opponents sample one action
  from their current policy, the traverser's actions are all explored; the
  regret of `(I, a)` is `v(h.a) - v(h)` with no importance weights, and the
  average strategy adds the current policy at the next player's histories as
  they are visited (OpenSpiel's "simple" averaging);
- outcome sampling (`os_mccfr`): one trajectory per sample, the traverser
  drawing from `exploration * uniform + (1 - exploration) * policy`;
  regrets and average-strategy increments carry importance weights, as in
  OpenSpiel's `outcome_sampling_mccfr.py`.

A traversal is a *frontier* per depth: `[B, M_d]` history indices, where
`M_d` is the static bound `CompiledGame.sampled_widths` (1 for outcome
sampling), so every batch has one compiled shape. Going down, each frontier
history proposes its explored children (`[B, M_d, W_d]`), which a prefix sum
packs into the next frontier (prefix sums and gathers, no scatters); coming
up, each parent slot gathers its child's value.

The batch is split over devices with `shard_map` (data parallel: each device
samples `B / devices` traversals from its own key, and the increments are
summed with `psum`), so results depend only on the seed and the device count,
not on how many processes hold the devices (`jaxcfr.distributed`: the state and
the game are replicated, each process runs its devices' traversals, and the
`psum` crosses processes).

Pluribus's refinements are options: discounting (`linear_until`,
by default always, and `discount_interval`: every `discount_interval` updates, until update
`linear_until`, regrets and averages are multiplied by `k / (k + 1)`, k being
the number of intervals so far, i.e. linear weighting in interval units),
negative-regret pruning (`prune_threshold`, `prune_probability`,
`prune_after`, never at the depths after the last chance depth, i.e. the
last betting round, nor at `no_prune_depths`) and a `regret_floor`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import algorithms, distributed, tree
from jaxcfr.compiler import CompiledGame
from jaxcfr.games.base import TERMINAL_PLAYER
from jaxcfr.protocol import Solver
from jaxcfr.solvers import normalize_policy, regret_matching

ALWAYS = 10**9  # `linear_until` default: linear weighting for the whole run


class MCCFRState(NamedTuple):
  """Sampled solver state; `[I, A]` tables plus the PRNG key the next update consumes."""

  iteration: jax.Array  # [] int32: updates completed (each: B traversals per player)
  cumulative_regret: jax.Array  # [I, A]
  cumulative_policy: jax.Array  # [I, A]
  key: jax.Array  # [] PRNG key


def average_policy(state: MCCFRState, game: CompiledGame) -> jax.Array:
  return normalize_policy(state.cumulative_policy, game.legal_mask)


def es_mccfr(batch_size: int = 1024, devices: int = 1, **refinements) -> Solver:
  """External-sampling MCCFR with `batch_size` traversals per player per update."""
  return _sampled_solver('external', batch_size, devices, exploration=0.0, **refinements)


def os_mccfr(batch_size: int = 1024, devices: int = 1, exploration: float = 0.6, **refinements) -> Solver:
  """Outcome-sampling MCCFR; the traverser explores with probability `exploration`."""
  return _sampled_solver('outcome', batch_size, devices, exploration=exploration, **refinements)


def _sampled_solver(
  scheme: str,
  batch_size: int,
  devices: int,
  exploration: float,
  linear_until: int = ALWAYS,
  discount_interval: int = 1,
  prune_threshold: float | None = None,
  prune_probability: float = 0.95,
  prune_after: int = 0,
  no_prune_depths: tuple[int, ...] = (),
  regret_floor: float | None = None,
) -> Solver:
  name = 'es-mccfr' if scheme == 'external' else 'os-mccfr'
  given = dict(batch_size=batch_size, linear_until=linear_until, discount_interval=discount_interval)
  given.update(regret_floor=regret_floor)
  if scheme == 'external':
    given.update(
      prune_threshold=prune_threshold, prune_probability=prune_probability, prune_after=prune_after
    )
  elif prune_threshold is not None:
    raise ValueError('pruning applies to external sampling only')
  else:
    given.update(exploration=exploration)
  hyperparameters = algorithms.REGISTRY[name].resolve(**given)  # the registry's ranges
  _check(devices=devices)
  if batch_size % devices:
    raise ValueError(f'batch size {batch_size} must be a multiple of the device count {devices}')
  if devices > jax.device_count():
    raise ValueError(f'{devices} devices requested; {jax.device_count()} available ({jax.default_backend()})')
  options = dict(scheme=scheme, exploration=exploration, no_prune_depths=tuple(no_prune_depths))

  def init(game: CompiledGame, key: jax.Array | None = None) -> MCCFRState:
    if key is None:
      raise ValueError('sampled MCCFR draws its samples from a key: init(game, jax.random.key(seed))')
    zeros = jnp.zeros(game.legal_mask.shape, game.dtype)
    state = MCCFRState(jnp.zeros((), jnp.int32), zeros, zeros, key)
    if devices > 1:  # replicated, as `update` returns it, so that one compiled program serves every call
      state = distributed.replicate(state, _mesh(devices))  # over every process's devices
    return state

  def current_policy(state: MCCFRState, game: CompiledGame) -> jax.Array:
    return regret_matching(state.cumulative_regret, game.legal_mask)

  def update(state: MCCFRState, game: CompiledGame) -> MCCFRState:
    t = state.iteration + 1
    key, *player_keys = jax.random.split(state.key, 1 + game.num_players)
    regret, average = state.cumulative_regret, state.cumulative_policy
    pruning = prune_threshold is not None
    for player in range(game.num_players):
      policy = regret_matching(regret, game.legal_mask)
      prune = jnp.asarray(pruning) & (t > prune_after)
      threshold = jnp.asarray(prune_threshold if pruning else 0.0, game.dtype)
      regret_increment, average_increment = _batched_traversals(
        game,
        policy,
        regret,
        player_keys[player],
        player,
        batch_size,
        devices,
        prune=prune,
        prune_probability=prune_probability,
        threshold=threshold,
        **options,
      )
      regret = regret + regret_increment
      if regret_floor is not None:
        regret = jnp.maximum(regret, regret_floor)
      average = average + average_increment
    if linear_until > 0:
      k = t // discount_interval
      factor = jnp.where((t % discount_interval == 0) & (t <= linear_until), k / (k + 1), 1).astype(
        game.dtype
      )
      regret, average = regret * factor, average * factor
    return MCCFRState(t, regret, average, key)

  if no_prune_depths:
    hyperparameters['no_prune_depths'] = tuple(no_prune_depths)
  return Solver(init, update, current_policy, average_policy, name, hyperparameters)


def sample_regrets(
  game: CompiledGame,
  policy: jax.Array,
  key: jax.Array,
  player: int,
  batch_size: int,
  scheme: str = 'external',
  exploration: float = 0.6,
) -> tuple[jax.Array, jax.Array]:
  """One batch of sampled traversals for `player` under `policy` (`[I, A]`),
  without pruning: `(regret, average)` increments, each `[I, A]` and summed
  over the batch. Divided by `batch_size`, the regret is an unbiased estimate
  of the full-width counterfactual regret (`solvers.player_regrets`)."""
  if scheme not in ('external', 'outcome'):
    raise ValueError(f"scheme must be 'external' or 'outcome', got {scheme!r}")
  off = jnp.asarray(False)
  return _traversals(
    game,
    policy,
    jnp.zeros_like(policy),
    key,
    player,
    batch_size,
    scheme=scheme,
    exploration=exploration,
    prune=off,
    prune_probability=0.0,
    threshold=jnp.zeros((), policy.dtype),
    no_prune_depths=(),
  )


def _check(**values) -> None:
  for name, value in values.items():
    if not (isinstance(value, (int, np.integer)) and value >= 1):
      raise ValueError(f'{name} must be a positive integer, got {value}')


def _batched_traversals(game, policy, regret, key, player, batch_size, devices, **options):
  """`(regret increment, average increment)`, both `[I, A]`, summed over the batch
  (and over devices when `devices > 1`)."""
  if devices == 1:
    return _traversals(game, policy, regret, key, player, batch_size, **options)
  mesh = _mesh(devices)
  spec = jax.sharding.PartitionSpec

  def per_device(keys, game, policy, regret):
    increments = _traversals(game, policy, regret, keys[0], player, batch_size // devices, **options)
    return jax.tree.map(lambda x: jax.lax.psum(x, 'batch'), increments)

  keys = jax.random.split(key, devices)  # one stream per device: results depend on the device count
  sharded = jax.shard_map(
    per_device, mesh=mesh, in_specs=(spec('batch'), spec(), spec(), spec()), out_specs=spec(), check_vma=False
  )
  return sharded(keys, game, policy, regret)


def _mesh(devices: int) -> jax.sharding.Mesh:
  return jax.make_mesh(
    (devices,),
    ('batch',),
    devices=distributed.mesh_devices(devices),
    axis_types=(jax.sharding.AxisType.Auto,),
  )


def _traversals(
  game: CompiledGame, policy: jax.Array, regret: jax.Array, key: jax.Array, player: int, batch: int, **options
):
  """`(regret, average)` increments, each `[I, A]`, summed over the batch (see `traversal_samples`)."""
  num_infosets = game.num_infosets
  samples = traversal_samples(game, policy, regret, key, player, batch, **options)

  def total(rows, values):  # the same sums on every backend and run (no scatter-add)
    return tree.to_actions(game, tree.segment_sum(values, rows, num_infosets))

  return total(samples.regret_rows, samples.regret_values), total(
    samples.average_rows, samples.average_values
  )


class Samples(NamedTuple):
  """What one batch of traversals observed, one row per frontier slot of the depths involved.

  Rows are infoset indices, `I` for slots that hold nothing (drop them); values are by legal slot (`[N, L]`).
  """

  regret_rows: jax.Array  # [N] int32: the traverser's infosets
  regret_values: jax.Array  # [N, L]: sampled instantaneous regrets
  average_rows: jax.Array  # [N'] int32
  average_values: jax.Array  # [N', L]: average-strategy increments


def traversal_samples(
  game: CompiledGame,
  policy: jax.Array,  # [I, A]
  regret: jax.Array,  # [I, A]
  key: jax.Array,
  player: int,
  batch: int,
  *,
  scheme: str,
  exploration: float,
  prune,
  prune_probability: float,
  threshold,
  no_prune_depths: tuple[int, ...],
) -> Samples:
  """One batch of `batch` sampled traversals for `player` under `policy` (see the module docstring):
  top down, the frontiers and what each explored (`_explore`); bottom up, the traverser's values, its
  regrets and the average's increments (`_collect`)."""
  enumerate_own = scheme == 'external'
  levels = _explore(
    game, policy, regret, key, player, batch, enumerate_own, exploration, prune, prune_probability,
    threshold, no_prune_depths,
  )  # fmt: skip
  return _collect(game, levels, player, batch, enumerate_own, policy.dtype)


def _explore(
  game: CompiledGame, policy, regret, key, player: int, batch: int, enumerate_own: bool, exploration,
  prune, prune_probability, threshold, no_prune_depths,
) -> list[dict]:  # fmt: skip
  """Top down: per depth, the frontier of each traversal (`node` [B, M]), each history's row, actor and
  transition probabilities, the children it explored and where they sit in the next frontier, and
  (outcome sampling) the reach weights."""
  dtype = policy.dtype
  num_slots = game.legal_actions.shape[1]
  widths = game.sampled_widths[player] if enumerate_own else (1,) * game.num_depths
  table = tree.transition_table(game, policy)  # [I + 1 + C, width]: by slot
  regret_slots = tree.to_slots(game, regret)  # [I, L]
  last_chance = max(game.chance_depths, default=-1)
  # All the traversal's uniform draws in one call (one PRNG kernel compiles far faster than one per depth).
  offsets = np.cumsum([0, 1, *widths])
  draws = jax.random.uniform(key, (batch, int(offsets[-1])), dtype)  # [B, 1 + sum_d M_d]
  prune_sample = prune & (draws[:, :1] < prune_probability)  # [B, 1]

  node = jnp.zeros((batch, 1), jnp.int32)  # [B, M_0]: the root
  own_reach = jnp.ones((batch, 1), dtype)  # traverser's policy product
  others_reach = jnp.ones((batch, 1), dtype)  # chance and opponents
  sample_reach = jnp.ones((batch, 1), dtype)  # probability of sampling the path
  levels = []
  for d in range(game.num_depths):
    width = game.widths[d]
    # One gather per depth: [row, actor, children...] of each frontier history (padding past H_d).
    fields = tree.gather(_padded_fields(game, d), node)  # [B, M, 2 + W]
    row, actor = fields[..., 0], fields[..., 1]
    probs = tree.gather(table[:, :width], row)  # [B, M, W]
    own = actor == player
    level = dict(node=node, row=row, actor=actor, probs=probs, own=own)
    if d + 1 == game.num_depths:
      levels.append(level)
      break
    next_size = game.depth_sizes[d + 1]
    child = fields[..., 2:]  # [B, M, W]
    has_child = child < next_size
    legal_count = has_child.sum(-1, keepdims=True)
    if enumerate_own:
      sample_probs = probs
    else:
      uniform = (has_child / jnp.maximum(legal_count, 1)).astype(dtype)
      sample_probs = jnp.where(own[..., None], exploration * uniform + (1 - exploration) * probs, probs)
    slot = _inverse_cdf(sample_probs, has_child, draws[:, offsets[d + 1] : offsets[d + 2]])  # [B, M]
    sampled = (jnp.arange(width) == slot[..., None]) & has_child  # [B, M, W]
    if enumerate_own:
      explored = jnp.where(own[..., None], has_child, sampled)
      if d <= last_chance and d not in no_prune_depths:
        slot_regret = jnp.pad(regret_slots, ((0, 1), (0, max(0, width - num_slots))))[row, :width]
        best = slot_regret == jnp.max(jnp.where(has_child, slot_regret, -jnp.inf), -1, keepdims=True)
        keep = (slot_regret > threshold) | best
        prunable = own[..., None] & prune_sample[..., None]
        explored = explored & jnp.where(prunable, keep, True)
    else:
      explored = sampled
    level.update(explored=explored, has_child=has_child)
    if not enumerate_own:
      chosen = (sample_probs * sampled).sum(-1)  # [B, M]: probability the sample took
      taken = (probs * sampled).sum(-1)
      level.update(
        own_reach=own_reach, others_reach=others_reach, sample_reach=sample_reach, chosen=chosen, taken=taken
      )
      own_reach = own_reach * jnp.where(own, taken, 1)
      others_reach = others_reach * jnp.where(own, 1, taken)
      sample_reach = sample_reach * chosen
    node, position = _next_frontier(explored, child, widths[d + 1], next_size)
    level.update(position=position)
    levels.append(level)
  return levels


def _next_frontier(explored: jax.Array, child: jax.Array, size: int, next_size: int):
  """(the next frontier [B, M'] of `size` slots: the `explored` [B, M, W] children `child` [B, M, W],
  packed in order, `next_size` padding; each (history m, slot w)'s position in it, 0 where unexplored).

  Position j belongs to the frontier history whose running count of explored children first exceeds j,
  and is its k-th explored slot."""
  batch, _, width = explored.shape
  rank = jnp.cumsum(explored, -1)  # [B, M, W]: explored slots up to and including each slot
  end = jnp.cumsum(rank[..., -1], -1)  # [B, M]: explored children up to each history
  positions = jnp.arange(size)
  owner = (end[:, None, :] <= positions[None, :, None]).sum(-1)  # [B, M']
  valid = owner < end.shape[1]
  owner = jnp.minimum(owner, end.shape[1] - 1)
  k = positions - (_take(end, owner) - _take(rank[..., -1], owner))
  owner_rank = _take(rank, owner[..., None])  # [B, M', W]
  slot = (owner_rank <= k[..., None]).sum(-1)  # the k-th explored slot of its owner
  node = _take(child.reshape(batch, -1), owner * width + jnp.minimum(slot, width - 1))
  node = jnp.where(valid, node, next_size)
  # Coming back up, (history m, slot w) reads its child's value at this position.
  return node, jnp.where(explored, end[..., None] - rank[..., -1:] + rank - 1, 0)


def _collect(game: CompiledGame, levels: list[dict], player: int, batch: int, enumerate_own: bool, dtype):
  """Bottom up: values of the traverser, then regrets and average increments, gathered over all
  depths into one segment sum each (one per depth compiles far slower)."""
  num_infosets, num_slots = game.legal_actions.shape
  regret_rows, regret_values, average_rows, average_values = [], [], [], []
  next_player = (player + 1) % game.num_players
  value = None
  for d in reversed(range(game.num_depths)):
    level = levels[d]
    node, row, actor, probs, own = level['node'], level['row'], level['actor'], level['probs'], level['own']
    utility = tree.gather(jnp.pad(game.utility[d][:, player], (0, 1)), node)  # [B, M]
    if value is None:  # the deepest depth: terminals only
      value = utility
      continue
    explored = level['explored']
    gathered = _take(value, level['position'].reshape(batch, -1)).reshape(explored.shape)
    below = jnp.where(explored, gathered, 0)  # [B, M, W]: the explored children's values
    if enumerate_own:
      weights = jnp.where(own[..., None], probs, 1.0) * explored
      value = utility + (weights * below).sum(-1)
      instant = jnp.where(own[..., None] & explored, below - value[..., None], 0)
    else:
      chosen = level['chosen'][..., None]
      child_values = jnp.where(explored, below / chosen, 0)  # OpenSpiel's baseline-free estimate
      value = utility + jnp.where(own, (probs * child_values).sum(-1), below.sum(-1))
      weight = level['others_reach'] / level['sample_reach']
      legal = own[..., None] & level['has_child']
      instant = jnp.where(legal, weight[..., None] * (child_values - value[..., None]), 0)
    if d in game.player_depths[player]:
      target = jnp.where(own, row, num_infosets).reshape(-1)
      regret_rows.append(target)
      regret_values.append(_fit(instant, num_slots).reshape(-1, num_slots))
      if not enumerate_own:
        increment = (level['own_reach'] / level['sample_reach'])[..., None] * probs
        average_rows.append(target)
        average_values.append(_fit(increment, num_slots).reshape(-1, num_slots))
    if enumerate_own and d in game.player_depths[next_player]:
      average_rows.append(jnp.where(actor == next_player, row, num_infosets).reshape(-1))
      average_values.append(_fit(probs, num_slots).reshape(-1, num_slots))

  def join(rows, values):
    if not rows:
      return jnp.full((0,), num_infosets, jnp.int32), jnp.zeros((0, num_slots), dtype)
    return jnp.concatenate(rows), jnp.concatenate(values)

  return Samples(*join(regret_rows, regret_values), *join(average_rows, average_values))


def _inverse_cdf(probs: jax.Array, allowed: jax.Array, uniform_draw: jax.Array) -> jax.Array:
  """`[..., W]` probabilities and allowed slots, `[...]` draws in [0, 1) -> `[...]` int32: the first allowed
  slot of positive probability whose cumulative probability exceeds the draw, or the last such slot when
  the total rounded below the draw.

  A slot of probability 0 is never drawn. Counting the cumulative probabilities below the draw would pick a
  leading zero-probability slot for a draw of exactly 0 (`jax.random.uniform` returns 0 about once in 2**23
  draws) and a trailing one when the total rounds below the draw; outcome sampling would then divide by its
  probability 0 and turn the traversal's regrets and average increments into NaN and inf for good.
  """
  possible = allowed & (probs > 0)
  last = probs.shape[-1] - 1 - jnp.argmax(possible[..., ::-1], -1)
  above = possible & (jnp.cumsum(probs, -1) > uniform_draw[..., None])
  return jnp.where(above.any(-1), jnp.argmax(above, -1), last)


def _padded_fields(game: CompiledGame, d: int) -> jax.Array:
  """`[H_d + 1, 2 + W_d]` int32: each history's transition row, actor and children,
  then a padding history (terminal, no children) that empty frontier slots point to."""
  size = game.depth_sizes[d]
  next_size = game.depth_sizes[d + 1] if d + 1 < game.num_depths else 0
  children = game.child[d] if d + 1 < game.num_depths else jnp.zeros((size, 0), jnp.int32)
  fields = jnp.concatenate([game.row[d][:, None], game.player[d][:, None], children], axis=1)
  padding = jnp.asarray([[game.num_infosets, TERMINAL_PLAYER] + [next_size] * children.shape[1]], jnp.int32)
  return jnp.concatenate([fields, padding])


def _take(values: jax.Array, index: jax.Array) -> jax.Array:
  """`take_along_axis(values, index, 1)` for indices built in bounds (no clamping)."""
  return jnp.take_along_axis(values, index, 1, mode='promise_in_bounds')


def _fit(values: jax.Array, width: int) -> jax.Array:
  """`[..., W]` -> `[..., width]` (cut or zero-padded)."""
  if values.shape[-1] >= width:
    return values[..., :width]
  return jnp.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, width - values.shape[-1])])
