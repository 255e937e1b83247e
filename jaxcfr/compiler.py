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

The walk (`jaxcfr.walker`) is depth-first in slot order, which appends every
depth in that breadth-first order while holding one path of states, into
compact per-depth arrays. A large tree is cut at the first depth with enough
subtree roots, and runs of consecutive roots are walked by worker processes;
their per-depth slices concatenate in run order, and infosets and chance
distributions are numbered in breadth-first order of first appearance, so
any number of workers compiles the same arrays.
"""

from __future__ import annotations

import concurrent.futures
import os
import pickle
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import backend, memory, sequence_form, walker
from jaxcfr.compiled import CompiledGame, GameInfo
from jaxcfr.games import base, load_game

__all__ = ['DEFAULT_MAX_HISTORIES', 'CompiledGame', 'GameInfo', 'compile_game', 'timed_compile']

DEFAULT_MAX_HISTORIES = 50_000_000
_ROOTS_PER_WORKER = 64  # the frontier of subtree roots is the first depth with this many per worker
_RUNS_PER_WORKER = 16  # runs of consecutive roots handed out per worker (balance vs. per-run costs)
_TOP_HISTORIES = 20_000  # or the first depth whose top part holds this many histories
_SERIAL_HISTORIES = 50_000  # this process walks runs until this many histories before starting workers
WORKERS_ENV = 'JAXCFR_COMPILE_WORKERS'  # the default `workers`, where set


def compile_game(
  game: base.Game | str,
  dtype=jnp.float32,
  max_histories: int | None = DEFAULT_MAX_HISTORIES,
  progress: Callable[[int, int], None] | None = None,
  workers: int | None = None,
) -> CompiledGame:
  """Walks `game` and returns its `CompiledGame`.

  A large tree is walked by worker processes, each taking runs of the subtrees below the first
  depth that is wide enough; the result is the same, bit for bit, as one process's walk.

  Args:
    game: a game object following OpenSpiel's state protocol, or a spec.
    dtype: float dtype of probabilities and utilities (float64 needs
      `jax_enable_x64`).
    max_histories: stop with a `GameError` once the tree exceeds this many
      histories (None: no limit).
    progress: called as `progress(depth, histories_so_far)` as the walk goes (the deepest depth
      reached so far).
    workers: processes that walk subtrees (default: `default_workers()`); 1, a tree small enough
      that one process walks it before workers would start, or a game class defined in `__main__`,
      walks in this process alone. Workers are fresh interpreters that unpickle `game`.
  """
  game = load_game(game)
  dtype = jnp.dtype(dtype)
  if dtype not in (jnp.float32, jnp.float64):
    raise base.GameError(f'dtype must be float32 or float64, got {dtype}')
  if dtype == jnp.float64 and not jax.config.jax_enable_x64:
    raise base.GameError('float64 needs jax.config.update("jax_enable_x64", True) before use')
  workers = default_workers() if workers is None else workers
  if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
    raise base.GameError(f'workers must be a positive integer, got {workers!r}')
  num_features = _feature_size(game)
  # A game class defined in a script (`__main__`), or a game that does not come back from pickling
  # (a worker receives it pickled), cannot be walked by a worker: walk it here.
  walkers = workers if workers > 1 and _travels(game) else 1
  walks = _walk(game, num_features, max_histories, progress, walkers)
  return _assemble(str(game), game.num_players(), game.num_distinct_actions(), dtype, walks, workers)


def default_workers() -> int:
  """`compile_game`'s default `workers`: `$JAXCFR_COMPILE_WORKERS` where set (1 where other jobs
  already keep the cores busy: a worker is a fresh interpreter, and two walks on one core each take
  twice as long), else the CPU cores this process may run on."""
  value = os.environ.get(WORKERS_ENV, '').strip()
  if not value:
    return backend.cores()
  if not value.isdigit() or int(value) < 1:
    raise base.GameError(f'{WORKERS_ENV} must be a positive integer, got {value!r}')
  return int(value)


def _travels(game) -> bool:
  """Whether a worker process could load `game`: its class is importable and it survives a pickle
  round trip (some pyspiel games' parameters do not, e.g. universal_poker's `firstPlayer`)."""
  if type(game).__module__ == '__main__':
    return False
  try:
    pickle.loads(pickle.dumps(game, protocol=pickle.HIGHEST_PROTOCOL))
  except Exception:  # noqa: BLE001 (any failure means: walk it in this process)
    return False
  return True


def _walk(game, num_features, max_histories, progress, workers) -> list[walker.Walk]:
  """The walk of the top of the tree (down to a frontier depth), then those of runs of the
  frontier's subtrees in order; the top walk alone when the tree ends above any wide enough depth."""
  limit = max_histories
  target = _ROOTS_PER_WORKER * workers
  stop = 1
  while True:  # the first depth with enough subtree roots to share (the top is small: walk it again)
    top = _checked(game, max_histories, walker.walk, game, [()], num_features, stop, limit)
    if not top.frontier or len(top.frontier) >= target or top.num_histories >= _TOP_HISTORIES:
      break
    stop += 1
  total, deepest = top.num_histories, len(top.parent) - 1
  if progress is not None:
    progress(deepest, total)
  if not top.frontier:
    return [top]
  roots = top.frontier
  runs = [list(run) for run in _split(roots, min(len(roots), _RUNS_PER_WORKER * workers))]
  walks = []

  def add(result: walker.Walk) -> None:
    nonlocal total, deepest
    total += result.num_histories - len(result.parent[0])  # the roots are counted in the top walk
    deepest = max(deepest, result.depth + len(result.parent) - 1)
    if max_histories is not None and total > max_histories:
      raise _too_many(game, max_histories, deepest)
    walks.append(result)
    if progress is not None:
      progress(deepest, total)

  # This process walks the first runs: if the tree is small it is done before workers would start.
  while len(walks) < len(runs) and (workers == 1 or total < _SERIAL_HISTORIES):
    budget = None if limit is None else limit - total + len(runs[len(walks)])
    add(_checked(game, max_histories, walker.walk, game, runs[len(walks)], num_features, None, budget))
  if len(walks) < len(runs):
    budget = None if limit is None else limit - total + len(roots)
    tasks = [(run, num_features, None, budget) for run in runs[len(walks) :]]
    with walker.Pool(game, min(workers, len(tasks))) as pool:
      try:
        for result in pool.map(tasks):
          add(result)
      except walker.HistoryLimit as error:
        raise _too_many(game, max_histories, error.args[0]) from None
  return [top, *walks]


def _checked(game, max_histories, function, *args):
  """`function(*args)`, with a walk's `HistoryLimit` raised as the compiler's `GameError`."""
  try:
    return function(*args)
  except walker.HistoryLimit as limit:
    raise _too_many(game, max_histories, limit.args[0]) from None


def _too_many(game, max_histories: int, depth: int) -> base.GameError:
  return base.GameError(
    f'{game} has more than {max_histories:,} histories (reached depth {depth}); '
    'raise max_histories (--max-histories on the command line) to compile it anyway'
  )


def _split(items: list, parts: int) -> list[list]:
  """`items` cut into `parts` consecutive runs of near-equal length."""
  bounds = np.linspace(0, len(items), parts + 1).round().astype(int)
  return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _feature_size(game) -> int:
  """F: the game's information-state tensor size, 0 if it has none."""
  if hasattr(game, 'get_type'):  # a bare pyspiel game
    from jaxcfr.games import openspiel  # noqa: PLC0415 (optional dependency)

    return openspiel.information_state_tensor_size(game)
  size = getattr(game, 'information_state_tensor_size', None)
  return 0 if size is None else int(size())


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


def _assemble(name, num_players, num_actions, dtype, walks: list[walker.Walk], workers: int) -> CompiledGame:
  """The `CompiledGame` of the top walk and the walks of its frontier's subtrees (in order): the
  per-depth slices are concatenated and infosets and chance distributions numbered in breadth-first
  order of first appearance."""
  infosets, distributions, infoset_maps, distribution_maps, depth_consistent = _number_walks(walks, name)
  player, provisional, parents, slots, utility = _concatenate(
    walks, infoset_maps, distribution_maps, num_players, dtype
  )
  walks.clear()  # the walks' arrays are copied out; free them (the caller's list is this one)

  # Ids in breadth-first order of first appearance (so infosets come out numbered depth by depth).
  infoset_ids = _first_appearance(
    [r[p >= 0] for r, p in zip(provisional, player, strict=True)], len(infosets.keys)
  )
  distribution_ids = _first_appearance(
    [r[p == base.CHANCE_PLAYER] for r, p in zip(provisional, player, strict=True)], len(distributions)
  )
  num_infosets = len(infosets.keys)
  order = np.argsort(infoset_ids)
  keys = [infosets.keys[i] for i in order]
  infoset_player = infosets.player[order]
  infoset_legal = [infosets.legal[i] for i in order]
  infoset_depth = infosets.depth[order]
  features = infosets.features(order)
  del infosets  # its copies of the features, its key dictionary
  chance_width = max([len(p) for p in distributions] + [1])
  chance_table = np.zeros((len(distributions), chance_width))
  for distribution, c in distributions.items():
    chance_table[distribution_ids[c], : len(distribution)] = distribution

  sizes, widths, row, child, parent = _depth_arrays(
    player, provisional, parents, slots, infoset_ids, distribution_ids, num_infosets
  )
  del provisional, slots
  legal_mask, legal_actions, action_slot = _legal_tables(infoset_legal, num_infosets, num_actions)
  max_legal = legal_actions.shape[1]
  offsets, members = _member_tables(row, infoset_depth, sizes, depth_consistent)
  info = GameInfo(name, tuple(keys), (num_players, num_actions, sizes, widths, features.shape[1]))
  as_int = lambda arrays: tuple(_device(a, np.int32) for a in arrays)  # noqa: E731
  as_float = lambda arrays: tuple(_device(a, dtype) for a in arrays)  # noqa: E731
  # The sequence form and the sampled widths are NumPy work that mostly releases the GIL: with
  # more than one worker they are computed side by side, while the arrays go to the device.
  with concurrent.futures.ThreadPoolExecutor(min(workers, 2)) as threads:
    # The widths first: on one thread their scratch arrays come and go before the tables exist.
    sampled = threads.submit(_sampled_widths, player, parents, sizes, num_players)
    form = threads.submit(
      sequence_form.build,
      row,
      player,
      parent,
      widths,
      legal_actions,
      infoset_player.astype(np.int64),
      num_actions,
      num_players,
      chance_table.shape,
    )
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
      sequence_form=form.result(),
      num_players=num_players,
      num_actions=num_actions,
      depth_sizes=sizes,
      widths=widths,
      player_depths=tuple(
        tuple(d for d, player_d in enumerate(player) if np.any(player_d == p)) for p in range(num_players)
      ),
      depth_consistent=bool(depth_consistent),
      infoset_offsets=offsets if members else (),
      sampled_widths=sampled.result(),
      chance_depths=tuple(d for d, player_d in enumerate(player) if np.any(player_d == base.CHANCE_PLAYER)),
      info=info,
    )


def _number_walks(walks: list[walker.Walk], name):
  """Provisional ids, in walk order: (the infosets' `_Numbering`, chance distributions -> id, per walk
  the ids of its infoset keys and of its distributions, whether every infoset sits at one depth)."""
  infosets = _Numbering()  # information-state keys -> provisional ids
  distributions: dict[tuple[float, ...], int] = {}  # chance distributions -> provisional ids
  depth_consistent = all(w.depth_consistent for w in walks)
  infoset_maps, distribution_maps = [], []
  for index, w in enumerate(walks):
    infoset_maps.append(infosets.add(w, index, name))
    distribution_maps.append(
      np.asarray([distributions.setdefault(p, len(distributions)) for p in w.distributions], np.int64)
    )
  depth_consistent &= infosets.depth_consistent
  return infosets, distributions, infoset_maps, distribution_maps, depth_consistent


def _concatenate(walks: list[walker.Walk], infoset_maps, distribution_maps, num_players: int, dtype):
  """Per depth: (actor, provisional row, parent, slot, utility), concatenated over the walks: the top
  walk's depths down to its frontier, then the frontier's subtrees' side by side."""
  top, below = walks[0], walks[1:]
  frontier = len(top.parent) - 1 if below else len(top.parent)  # depths below come from the other walks
  player, provisional, parents, slots, utility = [], [], [], [], []
  for d in range(frontier + max([len(w.parent) for w in below] + [0])):
    if d < frontier:
      parts = [(top, infoset_maps[0], distribution_maps[0], d)]
    else:
      parts = [(w, infoset_maps[i + 1], distribution_maps[i + 1], d - frontier) for i, w in enumerate(below)]
      parts = [part for part in parts if part[3] < len(part[0].parent)]
    player_d = memory.aligned(np.concatenate([w.player[level] for w, _, _, level in parts]), np.int32)
    row_d = np.concatenate([_rows(w.player[level], w.row[level], i, c, -1, 0) for w, i, c, level in parts])
    if d <= frontier:
      parent_d, slot_d = top.parent[d], top.slot[d]
    else:  # parents are numbered in the concatenation of the depth above
      level = d - frontier
      above = [len(w.parent[level - 1]) if level - 1 < len(w.parent) else 0 for w in below]
      pieces = [
        (w, offset) for w, offset in zip(below, np.cumsum([0] + above), strict=False) if level < len(w.parent)
      ]
      parent_d = np.concatenate([w.parent[level] + offset for w, offset in pieces])
      slot_d = np.concatenate([w.slot[level] for w, _ in pieces])
    terminal = player_d == base.TERMINAL_PLAYER
    utility_d = memory.empty_aligned((len(player_d), num_players), dtype)
    utility_d.fill(0)
    utility_d[terminal] = np.concatenate([w.utility[level] for w, _, _, level in parts])
    player.append(player_d)
    provisional.append(row_d)
    parents.append(parent_d)
    slots.append(slot_d)
    utility.append(utility_d)
  return player, provisional, parents, slots, utility


def _depth_arrays(player, provisional, parents, slots, infoset_ids, distribution_ids, num_infosets: int):
  """(sizes, widths, and per depth the rows, children and parents of the compiled game) from the
  concatenated depths and the final ids."""
  sizes = tuple(len(p) for p in player)
  widths = tuple(int(slots[d + 1].max()) + 1 if d + 1 < len(sizes) else 1 for d in range(len(sizes)))
  row, child, parent = [], [], []
  for d, (player_d, row_d) in enumerate(zip(player, provisional, strict=True)):
    row_d = _rows(player_d, row_d, infoset_ids, distribution_ids, num_infosets, num_infosets + 1)
    child_d = memory.empty_aligned((sizes[d], widths[d]), np.int32)
    child_d.fill(sizes[d + 1] if d + 1 < len(sizes) else 0)
    if d + 1 < len(sizes):
      child_d[parents[d + 1], slots[d + 1]] = np.arange(sizes[d + 1], dtype=np.int32)
    parent_d = memory.aligned(
      np.zeros(sizes[d]) if d == 0 else parents[d] * widths[d - 1] + slots[d], np.int32
    )
    row.append(row_d)
    child.append(child_d)
    parent.append(parent_d)
  return sizes, widths, row, child, parent


def _legal_tables(infoset_legal: list, num_infosets: int, num_actions: int):
  """(legal mask [I, A], legal actions [I, L] padded with A, each action's slot [I, A], L where
  illegal)."""
  legal_mask = np.zeros((num_infosets, num_actions), bool)
  max_legal = max([len(legal) for legal in infoset_legal] + [1])
  legal_actions = np.full((num_infosets, max_legal), num_actions, np.int32)
  action_slot = np.full((num_infosets, num_actions), max_legal, np.int32)
  for i, legal in enumerate(infoset_legal):
    legal_mask[i, list(legal)] = True
    legal_actions[i, : len(legal)] = legal
    action_slot[i, list(legal)] = np.arange(len(legal))
  return legal_mask, legal_actions, action_slot


def _member_tables(row, infoset_depth, sizes, depth_consistent) -> tuple[tuple[int, ...], list]:
  """(each depth's first infoset id, then the total; per depth the `_members` table of its infosets'
  histories, or none at all where an infoset spans depths or a table would pad too much)."""
  counts = np.bincount(infoset_depth, minlength=len(sizes))[: len(sizes)]
  offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
  members = []
  if depth_consistent:
    for d in range(len(sizes)):
      table = _members(row[d], offsets[d], int(counts[d]), sizes[d])
      if table is None:
        members = []
        break
      members.append(table)
  return offsets, members


class _Numbering:
  """Provisional global ids of the information states the walks met, with what each walk says of
  them (checked to agree) and, per infoset, the walk and row its features come from (each walk's
  rows that may be used are copied: the walks' own arrays can go)."""

  def __init__(self):
    self.ids: dict = {}
    self.keys, self._player, self.legal, self._depth, self._source = [], [], [], [], []
    self.depth_consistent = True
    self._features = []  # per walk: [N_w, F] rows of the infosets it was the source of when added

  def add(self, w: walker.Walk, index: int, name: str) -> np.ndarray:
    """The `[N]` provisional ids of `w`'s local infosets."""
    ids = np.empty(len(w.keys), np.int64)
    sources = []  # local ids of the infosets whose features come from `w` (for now)
    for j, key in enumerate(w.keys):
      i = self.ids.get(key)
      if i is None:
        i = self.ids[key] = len(self.keys)
        self.keys.append(key)
        self._player.append(int(w.infoset_player[j]))
        self.legal.append(w.infoset_legal[j])
        self._depth.append(int(w.infoset_depth[j]))
        self._source.append((index, len(sources)))
        sources.append(j)
      else:
        if self._player[i] != w.infoset_player[j] or self.legal[i] != w.infoset_legal[j]:
          raise base.GameError(
            f'{name}: information state {key!r} has histories with different players or legal actions'
          )
        if self._depth[i] != w.infoset_depth[j]:
          self.depth_consistent = False
          if w.infoset_depth[j] < self._depth[i]:  # the breadth-first first history is the shallowest
            self._depth[i] = int(w.infoset_depth[j])
            self._source[i] = (index, len(sources))
            sources.append(j)
      ids[j] = i
    self._features.append(w.features[np.asarray(sources, np.int64)])
    return ids

  @property
  def player(self) -> np.ndarray:
    return np.asarray(self._player, np.int32).reshape(-1)

  @property
  def depth(self) -> np.ndarray:
    return np.asarray(self._depth, np.int64).reshape(-1)

  def features(self, order: np.ndarray) -> np.ndarray:
    """`[I, F]` float32 features of the infosets `order` lists."""
    width = self._features[0].shape[1]
    features = np.zeros((len(order), width), np.float32)
    if width:
      for row, i in enumerate(order):
        walk_index, j = self._source[i]
        features[row] = self._features[walk_index][j]
    return features


def _rows(player, row, infoset_ids, distribution_ids, terminal: int, chance: int) -> np.ndarray:
  """`[H]` int32 rows: `infoset_ids[row]` at decisions, `chance + distribution_ids[row]` at chance
  histories, `terminal` at terminals."""
  rows = memory.empty_aligned(len(player), np.int32)
  rows.fill(terminal)
  decision = player >= 0
  rows[decision] = infoset_ids[row[decision]]
  at_chance = player == base.CHANCE_PLAYER
  rows[at_chance] = chance + distribution_ids[row[at_chance]]
  return rows


def _first_appearance(rows: list[np.ndarray], count: int) -> np.ndarray:
  """`[count]` new ids of the provisional ids that `rows` (one array per depth, in breadth-first
  order) hold, numbered in order of first appearance."""
  ids = np.full(count, -1, np.int64)
  following = 0
  for row in rows:
    unique, first = np.unique(row, return_index=True)
    unique = unique[np.argsort(first)]
    unique = unique[ids[unique] < 0]
    ids[unique] = np.arange(following, following + len(unique))
    following += len(unique)
  return ids


def _device(array, dtype) -> jax.Array:
  """A NumPy array on the default device, converted on the host (`jnp.asarray` would
  compile a conversion program for every new shape, a few ms each). An aligned array of that
  dtype is handed over as it is: on a CPU it becomes the device array's memory."""
  return jax.device_put(memory.aligned(array, dtype, copy=False))


def _sampled_widths(player, parents, sizes, num_players: int) -> tuple[tuple[int, ...], ...]:
  """Per traverser p, per depth t, an upper bound on the depth-t histories one
  external-sampling traversal for p visits: counting up from depth t, a
  traverser's history adds its children's counts, any other history takes the
  largest. A history's children are consecutive in the depth below (`parents[d + 1]`,
  parent indices, is sorted), so the sums and maxima are segment reductions; one
  traverser at a time, which keeps the scratch to `[H_d, D - d]` counts."""
  depths = len(sizes)
  widths = []
  for p in range(num_players):
    count = np.ones((sizes[-1], 1), np.int32)  # [H_d, D - d]: column k counts depth d + k
    for d in reversed(range(depths - 1)):
      children = np.bincount(parents[d + 1], minlength=sizes[d])
      inner = np.nonzero(children)[0]
      starts = (np.cumsum(children) - children)[inner]
      above = np.zeros((sizes[d], depths - d), np.int32)
      above[:, 0] = 1
      total = np.add.reduceat(count, starts, axis=0)
      others = np.nonzero(player[d][inner] != p)[0]
      total[others] = np.maximum.reduceat(count, starts, axis=0)[others]
      above[inner, 1:] = total
      count = above
    widths.append(tuple(int(max(c, 1)) for c in count[0]))
  return tuple(widths)


def timed_compile(game, **kwargs) -> tuple[CompiledGame, float]:
  """`compile_game` and the seconds it took (arrays ready on the device)."""
  start = time.perf_counter()
  compiled = compile_game(game, **kwargs)
  jax.block_until_ready(compiled)
  return compiled, time.perf_counter() - start
