"""Compiles a game tree, once, on the host, into depth-sliced arrays.

Glossary of shapes: P players, I information states (infosets), A distinct
actions, D depths, H_d histories at depth d, W_d the fan-out of depth d (the
most children any history at depth d has: actions at decision histories,
outcomes at chance histories). Padding is per depth, so a wide chance layer
(Leduc deals 6 cards) does not widen the betting layers.

Histories at depth d + 1 are the children of depth d in parent order, so a
top-down pass is a gather from the flattened `[H_d * W_d]` products of depth
d, and a bottom-up pass is a gather of depth d + 1 values through
`child[d]` (`H_{d+1}` marks an absent child and reads a zero).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr.games import base
from jaxcfr.games import load_game

DEFAULT_MAX_HISTORIES = 50_000_000


class GameInfo:
  """Host-side description of a compiled game; not traced.

  Compares equal for games of the same shape and information-state keys, so
  a batch of games that differ only in payoffs or chance probabilities
  shares one compiled program.
  """

  def __init__(self, name: str, infoset_keys: tuple[str, ...], shape_key: tuple):
    self.name = name
    self.infoset_keys = infoset_keys  # [I]
    digest = hashlib.sha256(repr(shape_key).encode())
    for key in infoset_keys:
      digest.update(key.encode())
      digest.update(b'\0')
    self.fingerprint = digest.hexdigest()[:16]

  def __eq__(self, other) -> bool:
    return isinstance(other, GameInfo) and self.fingerprint == other.fingerprint

  def __hash__(self) -> int:
    return hash(self.fingerprint)

  def __repr__(self) -> str:
    return f'GameInfo({self.name!r}, fingerprint={self.fingerprint})'


@dataclasses.dataclass(frozen=True)
class CompiledGame:
  """A game tree as depth-sliced arrays (a pytree; sizes are static).

  Per-depth fields are tuples with one array per depth `d = 0 .. D-1`.
  """

  infoset: tuple[jax.Array, ...]  # [H_d] int32: infoset of a decision history, I otherwise
  player: tuple[jax.Array, ...]  # [H_d] int32: actor, CHANCE_PLAYER or TERMINAL_PLAYER
  chance_prob: tuple[jax.Array, ...]  # [H_d, W_d]: outcome probabilities at chance histories, else 0
  child: tuple[jax.Array, ...]  # [H_d, W_d] int32: child index in depth d + 1, H_{d+1} if none
  parent: tuple[jax.Array, ...]  # [H_d] int32: parent index * W_{d-1} + column (0 at depth 0)
  utility: tuple[jax.Array, ...]  # [H_d, P]: returns at terminal histories, else 0
  infoset_player: jax.Array  # [I] int32
  legal_mask: jax.Array  # [I, A] bool
  # Static.
  num_players: int
  num_actions: int
  depth_sizes: tuple[int, ...]  # H_d
  widths: tuple[int, ...]  # W_d
  player_depths: tuple[tuple[int, ...], ...]  # per player, the depths where it acts
  depth_consistent: bool  # every infoset's histories share one depth
  info: GameInfo

  @property
  def num_infosets(self) -> int:
    return self.infoset_player.shape[-1]

  @property
  def num_histories(self) -> int:
    return sum(self.depth_sizes)

  @property
  def num_depths(self) -> int:
    return len(self.depth_sizes)

  @property
  def dtype(self):
    return self.utility[0].dtype

  @property
  def name(self) -> str:
    return self.info.name

  @property
  def infoset_keys(self) -> tuple[str, ...]:
    return self.info.infoset_keys

  def replace(self, **changes) -> CompiledGame:
    return dataclasses.replace(self, **changes)


_DATA_FIELDS = (
    'infoset',
    'player',
    'chance_prob',
    'child',
    'parent',
    'utility',
    'infoset_player',
    'legal_mask',
)
_META_FIELDS = (
    'num_players', 'num_actions', 'depth_sizes', 'widths', 'player_depths', 'depth_consistent', 'info'
)
jax.tree_util.register_dataclass(CompiledGame, data_fields=list(_DATA_FIELDS), meta_fields=list(_META_FIELDS))


class _Layer:
  """Host-side lists for one depth while walking."""

  def __init__(self):
    self.states = []
    self.parent = []  # (parent index, column)
    self.infoset = []
    self.player = []
    self.children = []  # per history: list of (column, probability or None)
    self.utility = []


def compile_game(
    game: base.Game | str,
    dtype=jnp.float32,
    max_histories: int | None = DEFAULT_MAX_HISTORIES,
    progress: Callable[[int, int], None] | None = None,
) -> CompiledGame:
  """Walks `game` breadth-first and returns its `CompiledGame`.

  Args:
    game: a game object following OpenSpiel's state protocol, or a spec.
    dtype: float dtype of probabilities and utilities (float64 needs
      `jax_enable_x64`).
    max_histories: stop with a `GameError` once the tree exceeds this many
      histories (None: no limit).
    progress: called as `progress(depth, histories_so_far)` after each depth.
  """
  game = load_game(game)
  dtype = jnp.dtype(dtype)
  if dtype not in (jnp.float32, jnp.float64):
    raise base.GameError(f'dtype must be float32 or float64, got {dtype}')
  if dtype == jnp.float64 and not jax.config.jax_enable_x64:
    raise base.GameError('float64 needs jax.config.update("jax_enable_x64", True) before use')
  num_players = game.num_players()
  num_actions = game.num_distinct_actions()

  infoset_ids: dict[str, int] = {}
  infoset_player: list[int] = []
  infoset_legal: list[tuple[int, ...]] = []
  infoset_depth: list[int] = []
  depth_consistent = True

  layers: list[_Layer] = []
  current = _Layer()
  current.states.append(game.new_initial_state())
  current.parent.append((0, 0))
  total = 1
  while current.states:
    depth = len(layers)
    following = _Layer()
    for index, state in enumerate(current.states):
      if state.is_terminal():
        current.player.append(base.TERMINAL_PLAYER)
        current.infoset.append(-1)
        current.children.append(())
        current.utility.append(state.returns())
        continue
      current.utility.append(None)
      if state.is_chance_node():
        outcomes = state.chance_outcomes()
        current.player.append(base.CHANCE_PLAYER)
        current.infoset.append(-1)
        current.children.append(tuple((column, p) for column, (_, p) in enumerate(outcomes)))
        for column, (action, _) in enumerate(outcomes):
          following.states.append(state.child(action))
          following.parent.append((index, column))
        continue
      player = state.current_player()
      if not 0 <= player < num_players:
        raise base.GameError(f'{game}: unsupported current player {player} (simultaneous node?)')
      key = state.information_state_string(player)
      legal = tuple(state.legal_actions())
      infoset = infoset_ids.get(key)
      if infoset is None:
        infoset = infoset_ids[key] = len(infoset_player)
        infoset_player.append(player)
        infoset_legal.append(legal)
        infoset_depth.append(depth)
        if legal and (legal[0] < 0 or legal[-1] >= num_actions):
          raise base.GameError(f'{game}: action ids {legal} outside 0..{num_actions - 1}')
      else:
        if infoset_player[infoset] != player or infoset_legal[infoset] != legal:
          raise base.GameError(
              f'{game}: information state {key!r} has histories with different players or legal actions'
          )
        depth_consistent &= infoset_depth[infoset] == depth
      current.player.append(player)
      current.infoset.append(infoset)
      current.children.append(tuple((action, None) for action in legal))
      for action in legal:
        following.states.append(state.child(action))
        following.parent.append((index, action))
    current.states = None  # release the states of finished depths
    layers.append(current)
    total += len(following.states)
    if max_histories is not None and total > max_histories:
      raise base.GameError(
          f'{game} has more than {max_histories:,} histories (reached depth {depth + 1}); '
          'raise the limit to compile it anyway'
      )
    if progress is not None:
      progress(depth, total)
    current = following

  return _assemble(
      str(game), layers, infoset_ids, infoset_player, infoset_legal, num_players, num_actions, dtype,
      depth_consistent,
  )


def _assemble(
    name, layers, infoset_ids, infoset_player, infoset_legal, num_players, num_actions, dtype,
    depth_consistent,
) -> CompiledGame:
  num_infosets = len(infoset_player)
  sizes = tuple(len(layer.player) for layer in layers)
  widths = tuple(max([c[-1][0] + 1 for c in layer.children if c] + [1]) for layer in layers)
  infoset, player, chance_prob, child, parent, utility = [], [], [], [], [], []
  for d, layer in enumerate(layers):
    h, w = sizes[d], widths[d]
    player_d = np.asarray(layer.player, np.int32)
    infoset_d = np.asarray(layer.infoset, np.int32)
    infoset_d[infoset_d < 0] = num_infosets
    prob_d = np.zeros((h, w), np.float64)
    child_d = np.full((h, w), sizes[d + 1] if d + 1 < len(sizes) else 0, np.int32)
    utility_d = np.zeros((h, num_players), np.float64)
    next_parent = layers[d + 1].parent if d + 1 < len(layers) else []
    for j, (i, column) in enumerate(next_parent):
      child_d[i, column] = j
    for i, children in enumerate(layer.children):
      for column, p in children:
        if p is not None:
          prob_d[i, column] = p
      if layer.utility[i] is not None:
        utility_d[i] = layer.utility[i]
    if d == 0:
      parent_d = np.zeros((h,), np.int32)
    else:
      parent_d = np.asarray([i * widths[d - 1] + column for i, column in layer.parent], np.int32)
    infoset.append(infoset_d)
    player.append(player_d)
    chance_prob.append(prob_d)
    child.append(child_d)
    parent.append(parent_d)
    utility.append(utility_d)
  legal_mask = np.zeros((num_infosets, num_actions), bool)
  for i, legal in enumerate(infoset_legal):
    legal_mask[i, list(legal)] = True
  keys = tuple(infoset_ids)  # insertion order = infoset id order
  info = GameInfo(name, keys, (num_players, num_actions, sizes, widths))
  as_int = lambda arrays: tuple(jnp.asarray(a, jnp.int32) for a in arrays)  # noqa: E731
  as_float = lambda arrays: tuple(jnp.asarray(a, dtype) for a in arrays)  # noqa: E731
  return CompiledGame(
      infoset=as_int(infoset),
      player=as_int(player),
      chance_prob=as_float(chance_prob),
      child=as_int(child),
      parent=as_int(parent),
      utility=as_float(utility),
      infoset_player=jnp.asarray(infoset_player, jnp.int32).reshape(num_infosets),
      legal_mask=jnp.asarray(legal_mask),
      num_players=num_players,
      num_actions=num_actions,
      depth_sizes=sizes,
      widths=widths,
      player_depths=tuple(
          tuple(d for d, layer in enumerate(layers) if p in layer.player) for p in range(num_players)
      ),
      depth_consistent=bool(depth_consistent),
      info=info,
  )


def timed_compile(game, **kwargs) -> tuple[CompiledGame, float]:
  """`compile_game` and the seconds it took (arrays ready on the device)."""
  start = time.perf_counter()
  compiled = compile_game(game, **kwargs)
  jax.block_until_ready(compiled)
  return compiled, time.perf_counter() - start
