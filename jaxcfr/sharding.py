"""One game over several devices: the compiled game and the full-width solvers'
state split along a 1-D device mesh (GSPMD: `jit` with sharded inputs, XLA
inserts the collectives).

    sharded = jaxcfr.shard_game(game, 4)          # padded, then placed on 4 devices
    result = jaxcfr.train(sharded, jaxcfr.make_solver('dcfr'), iterations=1000)
    policy = jaxcfr.unpad_policy(result.policy, sharded)   # [I, A] of the original game

The big leading axes go on the mesh axis: histories per depth (`[H_d, ...]`),
infosets (`[I, ...]`, the solver state with them), the sequence-form tables
over edges and terminals. Those sizes are first padded to a multiple of the
device count (`pad_game`) with histories, infosets, edges and terminals that no
real history reaches and that carry zero utility, so every pass computes the
same numbers as on one device (up to the order of floating-point sums). Arrays
whose leading axis is not one of these (the chance table) are replicated, and
so are the sequence form's per-level tables unless `split_levels`.

Several hosts: call `jaxcfr.distributed.initialize()` on every host first (it
makes `jax.devices()` the global list; a count of devices then takes each
process's share), then run the same program everywhere:
`shard_game(game, jax.devices())` builds each array from the host copy every
process holds (`jax.make_array_from_callback`), so each process places only
its own shards. Results read on the host (`jax.device_get`) need the arrays
to be fully replicated or gathered first (`jax.experimental.multihost_utils`).

Shapes: P players, I infosets, A actions, H_d histories of depth d, E = I * A
edges, Z terminals; primes for padded sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxcfr import distributed
from jaxcfr.compiled import CompiledGame, SequenceForm
from jaxcfr.games import base

AXIS = 'shard'  # the mesh axis name


def make_mesh(devices: int | Sequence[jax.Device] | Mesh) -> Mesh:
  """A 1-D mesh over `devices`: a count (the first N of `jax.devices()`), a list, or a mesh."""
  if isinstance(devices, Mesh):
    return devices
  if isinstance(devices, int):
    available = jax.devices()
    if not 1 <= devices <= len(available):
      raise ValueError(
        f'asked for {devices} devices but JAX sees {len(available)} ({jax.default_backend()}); on a CPU, '
        f'set XLA_FLAGS=--xla_force_host_platform_device_count={devices} before JAX starts'
      )
    devices = distributed.mesh_devices(devices)  # over several processes: each one's share
  return Mesh(np.asarray(list(devices)), (AXIS,))


def shard_game(
  game: CompiledGame, devices: int | Sequence[jax.Device] | Mesh, split_levels: bool = False
) -> CompiledGame:
  """`game` padded to the device count (`pad_game`) and placed on a 1-D mesh over `devices`.

  Every full-width solver, `jaxcfr.train` and the evaluation functions take the
  result as they take `game`; its policies are `[I', A]` (`unpad_policy` cuts
  them back to `[I, A]`). `shard_state` places a solver state to match.

  `split_levels` also splits the sequence form's per-level tables whose size the
  device count divides (Liar's Dice on 4 devices: 18 MB a device instead of 31 of
  56). Their sums then run in another order: equal to one device's up to rounding,
  which regret matching can amplify where a regret is zero up to rounding (1.7e-4
  after 20 DCFR iterations there), so it is off by default.
  """
  mesh = make_mesh(devices)
  padded = pad_game(game, mesh.size)
  host = jax.tree.map(np.asarray, padded)
  sizes = _sharded_sizes(padded, mesh.size, split_levels)
  leaves, treedef = jax.tree.flatten(host)
  placed = [_place(leaf, mesh, sizes) for leaf in leaves]
  placed_game = jax.tree.unflatten(treedef, placed)
  # The chance table is small and read everywhere: replicated.
  return placed_game.replace(chance_table=_place(host.chance_table, mesh, set()))


def game_mesh(game) -> Mesh | None:
  """The mesh a sharded game lies on; None for a game on one device."""
  sharding = getattr(getattr(game, 'legal_mask', None), 'sharding', None)
  if isinstance(sharding, NamedSharding) and sharding.mesh.size > 1:
    return sharding.mesh
  return None


def shard_state(state: Any, game: CompiledGame) -> Any:
  """`state` placed like the sharded `game`: leaves `[I', ...]` split over infosets, others replicated.

  The identity for a game on one device.
  """
  mesh = game_mesh(game)
  if mesh is None:
    return state

  def place(leaf):
    sharding = state_sharding(leaf, game)
    if getattr(leaf, 'sharding', None) == sharding:
      return leaf
    return distributed.place(leaf, sharding)  # from the host copy: every process places its shards

  return jax.tree.map(place, state)


def state_sharding(leaf: jax.Array, game: CompiledGame) -> NamedSharding:
  """How `shard_state` places one leaf of a state of the sharded `game`."""
  mesh = game_mesh(game)
  shape = np.shape(leaf)
  split = len(shape) >= 1 and shape[0] == game.num_infosets and shape[0] % mesh.size == 0
  return NamedSharding(mesh, PartitionSpec(AXIS) if split else PartitionSpec())


def unpad_policy(policy: jax.Array, game: CompiledGame) -> jax.Array:
  """`[I, A]`: the rows of the original game's infosets of a `[I', A]` policy of the padded `game`."""
  return policy[: len(game.infoset_keys)]


def bytes_per_device(tree: Any) -> dict[Any, int]:
  """Bytes each device holds of the arrays of `tree` (its addressable shards)."""
  total: dict[Any, int] = {}
  for leaf in jax.tree.leaves(tree):
    for shard in getattr(leaf, 'addressable_shards', ()):
      total[shard.device] = total.get(shard.device, 0) + shard.data.nbytes
  return total


# Placement.


def _sharded_sizes(game: CompiledGame, count: int, split_levels: bool) -> set[int]:
  """The leading sizes that go on the mesh axis: histories per depth, infosets, edges, terminals."""
  sizes = {*game.depth_sizes, game.num_infosets}
  form = game.sequence_form
  if form is not None:
    sizes.add(form.terminal_history.shape[0])
    if split_levels:  # levels cannot be padded (their order numbers the values the level above reads)
      sizes |= {level.infosets.shape[0] for player_levels in form.levels for level in player_levels}
  return {size for size in sizes if size % count == 0}


def _place(leaf: np.ndarray, mesh: Mesh, sizes: set[int]) -> jax.Array:
  split = leaf.ndim >= 1 and leaf.shape[0] in sizes
  sharding = NamedSharding(mesh, PartitionSpec(AXIS) if split else PartitionSpec())
  return jax.make_array_from_callback(leaf.shape, sharding, lambda index: leaf[index])


# Padding (host side, NumPy).


def pad_game(game: CompiledGame, multiple: int) -> CompiledGame:
  """`game` with histories per depth, infosets, edges and terminals padded to multiples of `multiple`.

  Padded histories are terminals of zero utility that no history leads to;
  padded infosets belong to no player, have one legal action and no history;
  padded terminals read the root's (zero) utility. Sentinels that name a size
  (H_{d+1} for no child, I for the terminal row, E for the empty sequence) move
  to the padded size. The game's `info` (names, fingerprint) is kept, so
  `len(game.infoset_keys)` is the original I.
  """
  if multiple == 1:
    return game
  sizes = game.depth_sizes
  padded_sizes = tuple(_round_up(size, multiple) for size in sizes)
  num_infosets = game.num_infosets
  padded_infosets = _round_up(num_infosets, multiple)
  extra = padded_infosets - num_infosets
  num_actions = game.num_actions
  depths = range(game.num_depths)

  def pad(array, size, fill):
    array = np.asarray(array)
    block = np.full((size - array.shape[0], *array.shape[1:]), fill, array.dtype)
    return np.concatenate([array, block])

  def move(array, old, new):
    array = np.asarray(array)
    return np.where(array == old, new, array).astype(array.dtype)

  # Rows: infosets keep theirs; the terminal row I and chance rows I + 1 + c shift by the padding.
  row = [np.asarray(r) for r in game.row]
  row = [
    pad(np.where(r >= num_infosets, r + extra, r).astype(r.dtype), padded_sizes[d], padded_infosets)
    for d, r in enumerate(row)
  ]
  player = [pad(game.player[d], padded_sizes[d], base.TERMINAL_PLAYER) for d in depths]
  child = []
  for d in depths:
    below = padded_sizes[d + 1] if d + 1 < len(sizes) else None
    c = np.asarray(game.child[d])
    if below is not None:
      c = move(c, sizes[d + 1], below)
    child.append(pad(c, padded_sizes[d], below if below is not None else 0))
  parent = [pad(game.parent[d], padded_sizes[d], 0) for d in depths]
  utility = [pad(game.utility[d], padded_sizes[d], 0) for d in depths]

  num_slots = game.legal_actions.shape[-1]
  legal_mask = pad(game.legal_mask, padded_infosets, False)
  legal_mask[num_infosets:, 0] = True
  legal_actions = pad(game.legal_actions, padded_infosets, num_actions)
  legal_actions[num_infosets:, 0] = 0
  action_slot = pad(game.action_slot, padded_infosets, num_slots)
  action_slot[num_infosets:, 0] = 0
  changes = dict(
    row=tuple(row),
    player=tuple(player),
    child=tuple(child),
    parent=tuple(parent),
    utility=tuple(utility),
    infoset_player=pad(game.infoset_player, padded_infosets, base.TERMINAL_PLAYER),
    legal_mask=legal_mask,
    legal_actions=legal_actions,
    action_slot=action_slot,
    features=pad(game.features, padded_infosets, 0),
    depth_sizes=padded_sizes,
  )
  if game.members:
    members = [move(game.members[d], sizes[d], padded_sizes[d]) for d in depths]
    # The padded infosets join the last depth's block, with no histories.
    members[-1] = pad(members[-1], members[-1].shape[0] + extra, padded_sizes[-1])
    changes['members'] = tuple(members)
    changes['infoset_offsets'] = (*game.infoset_offsets[:-1], padded_infosets)
  if game.sequence_form is not None:
    changes['sequence_form'] = _pad_sequence_form(game, padded_sizes, padded_infosets, multiple)
  return game.replace(**changes)


def _pad_sequence_form(game: CompiledGame, padded_sizes, padded_infosets: int, multiple: int) -> SequenceForm:
  form = jax.tree.map(np.asarray, game.sequence_form)
  num_actions = game.num_actions
  edges, padded_edges = game.num_infosets * num_actions, padded_infosets * num_actions

  def edge(array):  # the empty sequence E moves to E'
    return np.where(array == edges, padded_edges, array).astype(np.int32)

  def pad(array, size, fill):
    block = np.full((size - array.shape[0], *array.shape[1:]), fill, array.dtype)
    return np.concatenate([array, block])

  # Terminals keep their history, renumbered over the padded depths; padded ones read the root.
  starts = np.concatenate([[0], np.cumsum(game.depth_sizes)])
  padded_starts = np.concatenate([[0], np.cumsum(padded_sizes)])
  depth = np.searchsorted(starts, form.terminal_history, side='right') - 1
  terminal_history = (form.terminal_history - starts[depth] + padded_starts[depth]).astype(np.int32)
  num_terminals = _round_up(len(terminal_history), multiple)
  chance_pad = game.chance_table.shape[0] * game.chance_table.shape[1]
  # Levels keep their tables: the padding entry Z now reads a padded terminal, whose weight is 0.
  levels = form.levels
  position = tuple(
    pad(p, padded_infosets, sum(len(level.infosets) for level in player_levels))
    for p, player_levels in zip(form.position, form.levels, strict=True)
  )
  return SequenceForm(
    ancestors=pad(edge(form.ancestors), padded_infosets, padded_edges),  # padded infosets: no parents
    parent_edge=pad(edge(form.parent_edge), padded_infosets, padded_edges),
    history_count=pad(form.history_count, padded_infosets, 0),
    terminal_history=pad(terminal_history, num_terminals, 0),
    terminal_edges=pad(edge(form.terminal_edges), num_terminals, padded_edges),
    terminal_chance=pad(form.terminal_chance, num_terminals, chance_pad),
    levels=levels,
    position=position,
  )


def _round_up(size: int, multiple: int) -> int:
  return math.ceil(size / multiple) * multiple
