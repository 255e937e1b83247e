"""Compiles a game tree, once, on the host, into depth-sliced arrays.

Glossary of shapes: P players, I information states (infosets), A distinct
actions, L the most legal actions of any infoset, F features per infoset
(the game's information-state tensor size), D depths, H_d histories at
depth d, W_d the fan-out of depth d (the most children any history at depth
d has: legal actions at decision histories, outcomes at chance histories).
Children are numbered by slot (the position of the action in the legal
list), so padding is per depth and a wide chance layer (Leduc deals 6 cards)
does not widen the betting layers, nor do 13 action ids widen a layer where
only 3 bids are still legal.

Histories at depth d + 1 are the children of depth d in parent order, so a
top-down pass is a gather from the flattened `[H_d * W_d]` products of depth
d, and a bottom-up pass is a gather of depth d + 1 values through
`child[d]` (`H_{d+1}` marks an absent child and reads a zero).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import sequence_form
from jaxcfr.compiled import CompiledGame, GameInfo
from jaxcfr.games import base, load_game

__all__ = ['DEFAULT_MAX_HISTORIES', 'CompiledGame', 'GameInfo', 'compile_game', 'timed_compile']

DEFAULT_MAX_HISTORIES = 50_000_000


class _Layer:
  """Host-side lists for one depth while walking."""

  def __init__(self):
    self.states = []
    self.parent = []  # (parent index, slot)
    self.infoset = []
    self.player = []
    self.children = []  # per history: (slot, chance probability or None) per child
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
  num_features = _feature_size(game)

  infoset_ids: dict[str, int] = {}
  infoset_player: list[int] = []
  infoset_legal: list[tuple[int, ...]] = []
  infoset_features: list = []  # per infoset, its player's information-state tensor (F numbers)
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
        if num_features:
          tensor = state.information_state_tensor(player)
          if len(tensor) != num_features:
            raise base.GameError(
              f'{game}: information-state tensor of {key!r} has {len(tensor)} numbers, not {num_features}'
            )
          infoset_features.append(tensor)
      else:
        if infoset_player[infoset] != player or infoset_legal[infoset] != legal:
          raise base.GameError(
            f'{game}: information state {key!r} has histories with different players or legal actions'
          )
        depth_consistent &= infoset_depth[infoset] == depth
      current.player.append(player)
      current.infoset.append(infoset)
      current.children.append(tuple((slot, None) for slot in range(len(legal))))
      for slot, action in enumerate(legal):
        following.states.append(state.child(action))
        following.parent.append((index, slot))
    current.states = None  # release the states of finished depths
    layers.append(current)
    total += len(following.states)
    if max_histories is not None and total > max_histories:
      raise base.GameError(
        f'{game} has more than {max_histories:,} histories (reached depth {depth + 1}); '
        'raise max_histories (--max-histories on the command line) to compile it anyway'
      )
    if progress is not None:
      progress(depth, total)
    current = following

  keys = list(infoset_ids)  # insertion order = infoset id order
  if depth_consistent:
    # Number infosets depth by depth (stable), so each depth owns a contiguous block.
    order = sorted(range(len(keys)), key=lambda i: infoset_depth[i])
    renumber = np.empty(len(keys), np.int64)
    renumber[order] = np.arange(len(keys))
    keys = [keys[i] for i in order]
    infoset_player = [infoset_player[i] for i in order]
    infoset_legal = [infoset_legal[i] for i in order]
    infoset_depth = [infoset_depth[i] for i in order]
    if num_features:
      infoset_features = [infoset_features[i] for i in order]
    for layer in layers:
      layer.infoset = [int(renumber[i]) if i >= 0 else -1 for i in layer.infoset]
  return _assemble(
    str(game),
    layers,
    keys,
    infoset_player,
    infoset_legal,
    infoset_depth,
    _features(infoset_features, len(keys), num_features),
    num_players,
    num_actions,
    dtype,
    depth_consistent,
  )


def _feature_size(game) -> int:
  """F: the game's information-state tensor size, 0 if it has none."""
  if hasattr(game, 'get_type'):  # a bare pyspiel game
    from jaxcfr.games import openspiel  # noqa: PLC0415 (optional dependency)

    return openspiel.information_state_tensor_size(game)
  size = getattr(game, 'information_state_tensor_size', None)
  return 0 if size is None else int(size())


def _features(tensors: list, num_infosets: int, num_features: int) -> np.ndarray:
  """`[I, F]` float32 from one tensor per infoset (none when F = 0)."""
  if not num_features:
    return np.zeros((num_infosets, 0), np.float32)
  return np.asarray(tensors, np.float32).reshape(num_infosets, num_features)


def _members(row_d: np.ndarray, start: int, count: int, padding: int) -> np.ndarray | None:
  """`[count, K]` history indices of infosets start..start+count-1 at one depth (`padding` fills),
  or None if padding would more than quadruple the work."""
  local = row_d - start
  decision = np.nonzero((local >= 0) & (local < count))[0]
  if count == 0:
    return np.zeros((0, 1), np.int32)
  sizes = np.bincount(local[decision], minlength=count)
  width = int(sizes.max())
  if count * width > 4 * len(decision) + 1024:
    return None
  order = decision[np.argsort(local[decision], kind='stable')]
  slot = np.arange(len(order)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
  table = np.full((count, width), padding, np.int32)
  table[local[order], slot] = order
  return table


def _assemble(
  name,
  layers,
  keys,
  infoset_player,
  infoset_legal,
  infoset_depth,
  features,
  num_players,
  num_actions,
  dtype,
  depth_consistent,
) -> CompiledGame:
  num_infosets = len(infoset_player)
  sizes = tuple(len(layer.player) for layer in layers)
  widths = tuple(max([c[-1][0] + 1 for c in layer.children if c] + [1]) for layer in layers)
  distributions: dict[tuple[float, ...], int] = {}  # chance distribution -> chance row
  row, player, child, parent, utility = [], [], [], [], []
  for d, layer in enumerate(layers):
    h, w = sizes[d], widths[d]
    player_d = np.asarray(layer.player, np.int32)
    row_d = np.asarray(layer.infoset, np.int32)
    row_d[row_d < 0] = num_infosets
    row_d[row_d < 0] = num_infosets
    child_d = np.full((h, w), sizes[d + 1] if d + 1 < len(sizes) else 0, np.int32)
    utility_d = np.zeros((h, num_players), np.float64)
    next_parent = layers[d + 1].parent if d + 1 < len(layers) else []
    for j, (i, column) in enumerate(next_parent):
      child_d[i, column] = j
    for i, children in enumerate(layer.children):
      if player_d[i] == base.CHANCE_PLAYER:
        distribution = tuple(p for _, p in children)
        row_d[i] = num_infosets + 1 + distributions.setdefault(distribution, len(distributions))
      if layer.utility[i] is not None:
        utility_d[i] = layer.utility[i]
    if d == 0:
      parent_d = np.zeros((h,), np.int32)
    else:
      parent_d = np.asarray([i * widths[d - 1] + column for i, column in layer.parent], np.int32)
    row.append(row_d)
    player.append(player_d)
    child.append(child_d)
    parent.append(parent_d)
    utility.append(utility_d)
  legal_mask = np.zeros((num_infosets, num_actions), bool)
  max_legal = max([len(legal) for legal in infoset_legal] + [1])
  legal_actions = np.full((num_infosets, max_legal), num_actions, np.int32)
  action_slot = np.full((num_infosets, num_actions), max_legal, np.int32)
  for i, legal in enumerate(infoset_legal):
    legal_mask[i, list(legal)] = True
    legal_actions[i, : len(legal)] = legal
    action_slot[i, list(legal)] = np.arange(len(legal))
  chance_width = max([len(p) for p in distributions] + [1])
  chance_table = np.zeros((len(distributions), chance_width))
  for distribution, c in distributions.items():
    chance_table[c, : len(distribution)] = distribution
  counts = np.bincount(np.asarray(infoset_depth, np.int64), minlength=len(layers))[: len(layers)]
  offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
  members = []
  if depth_consistent:
    for d in range(len(layers)):
      table = _members(row[d], offsets[d], int(counts[d]), sizes[d])
      if table is None:
        members = []
        break
      members.append(table)
  info = GameInfo(name, tuple(keys), (num_players, num_actions, sizes, widths, features.shape[1]))
  as_int = lambda arrays: tuple(_device(a, np.int32) for a in arrays)  # noqa: E731
  as_float = lambda arrays: tuple(_device(a, dtype) for a in arrays)  # noqa: E731
  return CompiledGame(
    row=as_int(row),
    player=as_int(player),
    child=as_int(child),
    parent=as_int(parent),
    utility=as_float(utility),
    infoset_player=_device(np.reshape(infoset_player, num_infosets), np.int32),
    legal_mask=_device(legal_mask, bool),
    chance_table=_device(chance_table, dtype),
    legal_actions=_device(legal_actions.reshape(num_infosets, max_legal), np.int32),
    action_slot=_device(action_slot.reshape(num_infosets, num_actions), np.int32),
    features=_device(features, np.float32),
    members=as_int(members),
    sequence_form=sequence_form.build(
      row,
      player,
      child,
      legal_actions,
      np.asarray(infoset_player, np.int64),
      num_actions,
      num_players,
      chance_table.shape,
    ),
    num_players=num_players,
    num_actions=num_actions,
    depth_sizes=sizes,
    widths=widths,
    player_depths=tuple(
      tuple(d for d, layer in enumerate(layers) if p in layer.player) for p in range(num_players)
    ),
    depth_consistent=bool(depth_consistent),
    infoset_offsets=offsets if members else (),
    sampled_widths=tuple(_sampled_widths(player, child, sizes, p) for p in range(num_players)),
    chance_depths=tuple(d for d, player_d in enumerate(player) if np.any(player_d == base.CHANCE_PLAYER)),
    info=info,
  )


def _device(array, dtype) -> jax.Array:
  """A NumPy array on the default device, converted on the host (`jnp.asarray` would
  compile a conversion program for every new shape, a few ms each)."""
  return jax.device_put(np.asarray(array, dtype))


def _sampled_widths(player, child, sizes, traverser: int) -> tuple[int, ...]:
  """Per depth t, an upper bound on the depth-t histories one external-sampling
  traversal for `traverser` visits: counting up from depth t, a traverser's
  history adds its children's counts, any other history takes the largest."""
  count = np.ones((sizes[-1] + 1, 1), np.int32)  # [H_d + 1, D - d]: a padding row of zeros last
  count[-1] = 0
  for d in reversed(range(len(sizes) - 1)):
    below = count[child[d]]  # [H_d, W_d, D - d - 1]
    here = np.where((player[d] == traverser)[:, None], below.sum(1), below.max(1, initial=0))
    count = np.concatenate([np.ones((sizes[d], 1), np.int32), here], axis=1)
    count = np.concatenate([count, np.zeros((1, count.shape[1]), np.int32)])
  return tuple(int(max(c, 1)) for c in count[0])


def timed_compile(game, **kwargs) -> tuple[CompiledGame, float]:
  """`compile_game` and the seconds it took (arrays ready on the device)."""
  start = time.perf_counter()
  compiled = compile_game(game, **kwargs)
  jax.block_until_ready(compiled)
  return compiled, time.perf_counter() - start
