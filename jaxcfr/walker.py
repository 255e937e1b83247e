"""Walks subtrees of a game depth-first into compact per-depth arrays (host only, no JAX).

A depth-first walk that visits children in slot order (the position of the
action in the legal list, or of the outcome in the chance list) appends the
histories of each depth in the same order as a breadth-first walk: both order
a depth by the lexicographic order of the slot paths that reach it. So the
compiler's breadth-first layout comes out of a walk that holds only one path
of states at a time, and the walk of a list of subtree roots (each given by
its action path from the initial state) appends exactly the slice of each
depth that those roots own: walks of consecutive runs of roots concatenate,
depth by depth, to the walk of all of them. That is what lets worker
processes share a compilation (`compiler`); this module imports no JAX, so a
worker loads it without initialising any device (`serve`).

Ids here are local to one walk: infosets and chance distributions are
numbered in the order the walk first meets them, and the compiler renumbers
them in breadth-first order of first appearance.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np

from jaxcfr.games import base


class HistoryLimit(Exception):  # noqa: N818 (a signal, not an error: the compiler raises the GameError)
  """The walk met more histories than its limit; args: the depth it reached."""


@dataclasses.dataclass
class Walk:
  """The histories below some roots, per depth from `depth` (the roots' depth) down.

  Shapes: H_d histories at depth `depth + d` (d = 0 for the roots), T_d terminals among them, N
  infosets and C chance distributions met, F features, P players.
  """

  depth: int  # absolute depth of the roots
  player: list  # per depth [H_d] int8: actor, CHANCE_PLAYER or TERMINAL_PLAYER
  row: list  # per depth [H_d] int32: local infoset (decisions), local distribution (chance), -1
  parent: list  # per depth [H_d] int32: index of the parent in the depth above (root ordinal at d = 0)
  slot: list  # per depth [H_d] int32: position of the history among its parent's children
  utility: list  # per depth [T_d, P] float64: returns of the terminals in order
  keys: list  # [N] str: information-state keys
  infoset_player: np.ndarray  # [N] int32
  infoset_legal: list  # [N] tuple of legal action ids
  infoset_depth: np.ndarray  # [N] int64: the least absolute depth of the infoset's histories
  features: np.ndarray  # [N, F] float32: the tensor of the first history at that depth
  distributions: list  # [C] tuple of chance probabilities
  depth_consistent: bool  # every infoset met at one depth only
  frontier: list  # action paths of the histories at `stop` (left unexpanded), in order

  @property
  def num_histories(self) -> int:
    return sum(len(p) for p in self.parent)


def walk(game, roots, num_features: int, stop: int | None = None, limit: int | None = None) -> Walk:
  """Walks the subtrees below `roots` (action paths from the initial state, all of one length,
  in breadth-first order) depth-first.

  Args:
    game: a game object (see `jaxcfr.games.base`).
    roots: action paths of the subtree roots.
    num_features: F, the information-state tensor size (0: none recorded).
    stop: an absolute depth whose histories are recorded (parent and slot) but not expanded;
      their action paths become `frontier`.
    limit: raise `HistoryLimit` once more than this many histories are met.
  """
  start = len(roots[0]) if roots else 0
  num_actions = game.num_distinct_actions()
  num_players = game.num_players()
  player, row, parent, slot, utility = [], [], [], [], []
  ids: dict[str, int] = {}
  keys, infoset_player, infoset_legal, infoset_depth, features = [], [], [], [], array.array('f')
  distributions: dict[tuple, int] = {}
  frontier = []
  consistent = True
  count = 0
  terminal, chance = base.TERMINAL_PLAYER, base.CHANCE_PLAYER

  def visit(state, depth, up, position, path):
    nonlocal consistent, count
    level = depth - start
    if level == len(parent):
      for arrays, code in ((player, 'b'), (row, 'i'), (parent, 'i'), (slot, 'i'), (utility, 'd')):
        arrays.append(array.array(code))
    index = len(parent[level])
    parent[level].append(up)
    slot[level].append(position)
    count += 1
    if limit is not None and count > limit:
      raise HistoryLimit(depth)
    if depth == stop:
      frontier.append(path)
      return
    if state.is_terminal():
      player[level].append(terminal)
      row[level].append(-1)
      utility[level].extend(state.returns())
      return
    if state.is_chance_node():
      outcomes = state.chance_outcomes()
      distribution = tuple(p for _, p in outcomes)
      player[level].append(chance)
      row[level].append(distributions.setdefault(distribution, len(distributions)))
      for column, (action, _) in enumerate(outcomes):
        visit(state.child(action), depth + 1, index, column, None if path is None else path + (action,))
      return
    actor = state.current_player()
    if not 0 <= actor < num_players:
      raise base.GameError(f'{game}: unsupported current player {actor} (simultaneous node?)')
    key = state.information_state_string(actor)
    legal = tuple(state.legal_actions())
    infoset = ids.get(key)
    if infoset is None:
      infoset = ids[key] = len(keys)
      keys.append(key)
      infoset_player.append(actor)
      infoset_legal.append(legal)
      infoset_depth.append(depth)
      if legal and (legal[0] < 0 or legal[-1] >= num_actions):
        raise base.GameError(f'{game}: action ids {legal} outside 0..{num_actions - 1}')
      if num_features:
        features.extend(_tensor(game, state, actor, key, num_features))
    else:
      if infoset_player[infoset] != actor or infoset_legal[infoset] != legal:
        raise base.GameError(
          f'{game}: information state {key!r} has histories with different players or legal actions'
        )
      if infoset_depth[infoset] != depth:
        consistent = False
        if depth < infoset_depth[infoset]:  # the breadth-first first history is the shallowest
          infoset_depth[infoset] = depth
          if num_features:
            tensor = _tensor(game, state, actor, key, num_features)
            features[infoset * num_features : (infoset + 1) * num_features] = array.array('f', tensor)
    player[level].append(actor)
    row[level].append(infoset)
    for column, action in enumerate(legal):
      visit(state.child(action), depth + 1, index, column, None if path is None else path + (action,))

  sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # one frame per depth
  try:
    for ordinal, path in enumerate(roots):
      state = game.new_initial_state()
      for action in path:
        state = state.child(action)
      visit(state, start, ordinal, 0, None if stop is None else tuple(path))  # paths only for a frontier
  finally:
    # `visit` refers to itself, a cycle that would keep every buffer below alive until the garbage
    # collector runs: the walk's arrays use them, and the caller frees those when done.
    visit = None  # noqa: F841
  return Walk(
    depth=start,
    player=[np.frombuffer(a, np.int8) for a in player],
    row=[np.frombuffer(a, np.int32) for a in row],
    parent=[np.frombuffer(a, np.int32) for a in parent],
    slot=[np.frombuffer(a, np.int32) for a in slot],
    utility=[np.frombuffer(a, np.float64).reshape(-1, num_players) for a in utility],
    keys=keys,
    infoset_player=np.asarray(infoset_player, np.int32),
    infoset_legal=infoset_legal,
    infoset_depth=np.asarray(infoset_depth, np.int64),
    features=np.frombuffer(features, np.float32).reshape(len(keys), num_features),
    distributions=list(distributions),
    depth_consistent=consistent,
    frontier=frontier,
  )


def _tensor(game, state, player, key, num_features):
  tensor = state.information_state_tensor(player)
  if len(tensor) != num_features:
    raise base.GameError(
      f'{game}: information-state tensor of {key!r} has {len(tensor)} numbers, not {num_features}'
    )
  return tensor


def serve() -> None:
  """A worker's loop: reads the pickled game from stdin, then pickled `walk` argument tuples
  (after the game), and writes a pickled `Walk` (or the exception it raised) to stdout for each,
  until stdin closes."""
  source, sink = sys.stdin.buffer, os.fdopen(os.dup(1), 'wb')
  os.dup2(2, 1)  # anything the game prints goes to stderr, not into the results
  game = pickle.load(source)
  while True:
    try:
      task = pickle.load(source)
    except EOFError:
      return
    try:
      result = walk(game, *task)
    except Exception as error:  # noqa: BLE001 (sent to the parent, which raises it)
      result = error
    try:
      data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 (an exception that does not pickle)
      data = pickle.dumps(RuntimeError(repr(result)))
    sink.write(data)
    sink.flush()


# Loads `jaxcfr.walker` and `jaxcfr.games` (on this process's module path) under a bare `jaxcfr`
# package, not running `jaxcfr/__init__.py` (which imports JAX): an idle worker then costs a fraction
# of the memory and start-up time of one that imports JAX. Other games' modules may need all of jaxcfr.
_BOOT_BARE = """
import sys, types
sys.path[:0] = {path!r}
package = types.ModuleType('jaxcfr')
package.__path__ = [{directory!r}]
sys.modules['jaxcfr'] = package
from jaxcfr import walker
walker.serve()
"""
_BOOT_FULL = 'import sys; sys.path[:0] = {path!r}; from jaxcfr import walker; walker.serve()'


class Pool:
  """Worker processes that each run `serve`; `map` walks tasks over them, results in task order.

  Started as fresh interpreters (JAX is not fork-safe once initialised). Use as a context manager:
  leaving it stops the workers, also when a result raised.
  """

  def __init__(self, game, workers: int):
    payload = pickle.dumps(game, protocol=pickle.HIGHEST_PROTOCOL)
    module = type(game).__module__
    bare = module.startswith('jaxcfr.games') or module.startswith('pyspiel')
    directory = os.path.dirname(os.path.abspath(__file__))
    boot = (_BOOT_BARE if bare else _BOOT_FULL).format(directory=directory, path=sys.path)
    self._processes = []
    for _ in range(workers):
      process = subprocess.Popen([sys.executable, '-c', boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
      process.stdin.write(payload)
      self._processes.append(process)
    self._stopped = False

  def __enter__(self) -> Pool:
    return self

  def __exit__(self, *exc) -> None:
    self.close()

  def close(self) -> None:
    self._stopped = True
    for process in self._processes:
      if process.poll() is None:
        process.kill()
      process.wait()
      for stream in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):  # unwritten input to a stopped worker
          stream.close()

  def map(self, tasks: list) -> Iterator:
    """Yields `walk(game, *task)` for each task in order (a task's exception is raised), while
    the workers take tasks as they become free."""
    results, ready, lock = {}, threading.Condition(), threading.Lock()
    pending = iter(enumerate(tasks))

    def work(process):
      while not self._stopped:
        with lock:
          item = next(pending, None)
        if item is None:
          return
        index, task = item
        try:
          pickle.dump(task, process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
          process.stdin.flush()
          result = pickle.load(process.stdout)
        except (OSError, EOFError, ValueError, pickle.UnpicklingError) as error:  # ValueError: closed
          result = RuntimeError(f'a compile worker stopped (exit status {process.poll()}): {error!r}')
        with ready:
          results[index] = result
          ready.notify()
        if isinstance(result, BaseException):
          return

    threads = [threading.Thread(target=work, args=(process,), daemon=True) for process in self._processes]
    for thread in threads:
      thread.start()
    for index in range(len(tasks)):
      with ready:
        ready.wait_for(lambda index=index: index in results)
        result = results.pop(index)
      if isinstance(result, BaseException):
        raise result
      yield result
