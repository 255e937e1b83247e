"""Training a hold'em blueprint end to end: the game from abstraction tables and a bet preset, the
library training loop (`jaxcfr.train`: budgets, progress, checkpoints, exact resume), the file.

    from jaxcfr.poker.blueprint import BlueprintSettings, train_blueprint
    settings = BlueprintSettings(abstraction='tables-small/', bets='small', seconds=3600, checkpoint='run')
    run = train_blueprint(settings, out='blueprint.npz')   # what `jaxcfr blueprint train` does
    run.report['traversals_per_second'], run.result.iterations

or, one level down:

    solver = mccfr.blueprint_solver(batch_size=1024)
    game, tree = training.tables_game(training.load_tables('tables-small/'), 'small')
    result = training.train(game, solver, seconds=3600, checkpoint_dir='run')
    training.save('blueprint.npz', result, solver, game, tree, 'small', 'tables-small/')
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

import abstractions
from abstractions.betting import rules_dict
from jaxcfr import algorithms, memory, outputs
from jaxcfr import training as library
from jaxcfr.poker.blueprint import files, mccfr, vector
from jaxcfr.poker.blueprint import game as game_lib
from jaxcfr.poker.blueprint import tree as tree_lib

ALGORITHMS = ('tabular', 'pcs', 'deep-cfr', 'sd-cfr')
TABLES = ('tabular', 'pcs')  # the algorithms that train on abstraction tables
SNAPSHOTS = 64  # sd-cfr: advantage networks kept per player
KEEP_CHECKPOINTS = 3
_REGISTERED = {'tabular': 'es-mccfr', 'deep-cfr': 'deep-cfr', 'sd-cfr': 'sd-cfr'}  # whose flags apply


def load_tables(directory: str) -> abstractions.Abstraction:
  """The tables of `jaxcfr abstract` in `directory` (`BlueprintError` with one line if missing or bad)."""
  try:
    return abstractions.load(directory)
  except abstractions.AbstractionError as error:
    raise files.BlueprintError(f'--abstraction: {error}') from None


def tables_game(
  abstraction: abstractions.Abstraction, bets: str = 'small', dtype=jnp.float32, rules=tree_lib.ACPC
) -> tuple[game_lib.BlueprintGame, tree_lib.BettingTree]:
  """The abstract hold'em game of a bet preset and tables under `rules` (default ACPC's: blinds 50/100,
  stacks 20,000)."""
  tree = tree_lib.build_tree(tree_lib.preset(bets), rules)
  return game_lib.make_game(tree.bets, abstraction, dtype=dtype, tree=tree), tree


def train(game: game_lib.BlueprintGame, solver, **options) -> library.Result:
  """`jaxcfr.train` on the blueprint game, with exact evaluation only where the game carries its twin."""
  exact = game.twin is not None
  return library.train(game, solver, evaluate=exact, **options)


def check_checkpoints(directory: str, keep: int, resume: bool, identity: dict) -> None:
  """Before any work: the checkpoint directory is writable, holds no earlier run unless `resume`, and
  a run to resume has the same `identity` fields (`CheckpointError` with one line otherwise); the full
  identity, game and state are checked again when `jaxcfr.train` restores."""
  from jaxcfr import checkpoints  # noqa: PLC0415

  checkpointer, steps = library.open_checkpoints(directory, keep, resume)
  if not (resume and steps):
    return
  saved = checkpointer.read_metadata(steps[-1]).get('identity', {})
  differences = [
    f'{name} {saved.get(name)!r} (this run: {value!r})'
    for name, value in identity.items()
    if saved.get(name) != value
  ]
  if differences:
    where = os.path.join(checkpointer.directory, str(steps[-1]))
    raise checkpoints.CheckpointError(
      f"checkpoint '{where}' belongs to another run: it has " + '; '.join(differences)
    )


def memory_report(game: game_lib.BlueprintGame, state=None) -> dict:
  """Bytes on the device: the regret and average tables, the game (tree and bucket tables)."""
  report = {'table_bytes': mccfr.table_bytes(game), 'game_bytes': memory.nbytes(game)}
  if state is not None:
    report['state_bytes'] = memory.nbytes(state)
  return report


def save(
  path: str,
  result: library.Result,
  solver,
  game: game_lib.BlueprintGame,
  tree: tree_lib.BettingTree,
  bets_name: str | None,
  abstraction_path: str | None,
  *,
  force: bool = False,
  **run,
) -> dict:
  """Writes the blueprint file of a training result; returns its metadata."""
  batch = int(solver.hyperparameters['batch_size'])
  metadata = files.metadata_for(
    tree,
    bets_name=bets_name,
    deck=game_lib.Deck() if game.deck.shape[0] == 52 else _deck_of(game),
    board_cards=game.board_cards,
    buckets=game.num_buckets,
    abstraction_fingerprint=game.buckets.fingerprint,
    abstraction_path=os.path.abspath(abstraction_path) if abstraction_path else None,
    algorithm=solver.name,
    hyperparameters=library.jsonable(solver.hyperparameters),
    iterations=result.iterations,
    traversals=2 * batch * result.iterations,
    seconds=result.seconds,
    **run,
  )
  files.save_blueprint(path, tree, jax.device_get(result.policy), metadata, force=force)
  return metadata


def _deck_of(game: game_lib.BlueprintGame):
  cards = [int(c) for c in jax.device_get(game.deck)]
  ranks, suits = max(c // 4 for c in cards) + 1, max(c % 4 for c in cards) + 1
  return game_lib.Deck(ranks, suits)


# Deep CFR (`--algorithm deep-cfr`): networks on card and chip features, no abstraction tables.


def network_game(bets: str = 'small', history: bool = True, rules=tree_lib.ACPC):
  """(the abstract game without buckets, its tree, its rows' feature inputs) of a bet preset under
  `rules` (default ACPC's)."""
  from jaxcfr.poker.blueprint import deep  # noqa: PLC0415

  tree = tree_lib.build_tree(tree_lib.preset(bets), rules)
  game = game_lib.make_game(tree.bets, deep.NoBuckets(), tree=tree)
  return game, tree, deep.nodes_of(tree, game.board_cards, history)


def save_networks(
  path: str,
  result: library.Result,
  solver,
  game: game_lib.BlueprintGame,
  tree: tree_lib.BettingTree,
  nodes,
  bets_name: str | None,
  *,
  force: bool = False,
  **run,
) -> dict:
  """Writes the network blueprint of a Deep CFR result (its strategy networks) or an SD-CFR one (its
  reservoirs of advantage networks and their weights); returns its metadata."""
  from jaxcfr.poker.blueprint import (
    deep,  # noqa: PLC0415
    features,  # noqa: PLC0415
  )

  history = nodes.history.shape[-1] > 0
  metadata = files.metadata_for(
    tree,
    bets_name=bets_name,
    deck=game_lib.Deck(),
    board_cards=game.board_cards,
    buckets=[],
    abstraction_fingerprint=None,
    algorithm=solver.name,
    hyperparameters=library.jsonable(solver.hyperparameters),
    features={'layout': 'jaxcfr.poker.features', 'size': features.size(history), 'history': history},
    iterations=result.iterations,
    traversals=2 * int(solver.hyperparameters['traversals']) * result.iterations,
    seconds=result.seconds,
    **run,
  )
  if solver.name == deep.SD_NAME:  # reservoirs of advantage networks
    sizes = (features.size(history), *solver.hyperparameters['advantage_layers'], tree.num_actions)
    networks, weights = zip(*(deep.unravel_snapshots(buffer, sizes) for buffer in result.policy), strict=True)
    files.save_networks(path, tree, networks, metadata, weights=weights, force=force)
  else:
    files.save_networks(path, tree, jax.device_get(result.policy), metadata, force=force)
  return metadata


# The whole run (`jaxcfr blueprint train`): settings checked, the game and solver, training, the file.


@dataclasses.dataclass(frozen=True)
class BlueprintSettings:
  """What `train_blueprint` trains. `algorithm`: 'pcs', the default (public chance sampling in
  vector form on the bucket tables in the directory `abstraction`, `vector.vector_solver`: `boards`
  per player per update, `boards_at_once` of them at a time on each device, the regret rule
  `regret_rule`), 'tabular' (external-sampling MCCFR on the same tables), 'deep-cfr' or 'sd-cfr'
  (networks on card and chip features, no tables; `history`: with the betting history; `snapshots`:
  SD-CFR's advantage networks kept per player). `hyperparameters`: those given, by name (es-mccfr's
  for tabular, deep-cfr's for the networks, none for pcs; the rest keep their defaults). A budget
  (`seconds` and/or `iterations`) is needed. `max_bytes` (default None: the device's memory,
  `jaxcfr.memory.available_bytes`; 0: no limit): a table algorithm whose compiled iteration needs
  more stops before any iteration, with one line and nothing written. `checkpoint`: a directory
  saved to every `checkpoint_seconds`, `keep_checkpoints` kept, a run there continued with `resume`.
  `rules`: the game's blinds and stacks (ACPC's 50/100 and 20,000 by default)."""

  algorithm: str = 'pcs'
  abstraction: str | None = None
  bets: str = 'small'
  seconds: float | None = None
  iterations: int | None = None
  seed: int = 0
  devices: int = 1
  dtype: str = 'float32'
  hyperparameters: dict = dataclasses.field(default_factory=dict)
  snapshots: int | None = None
  history: bool = True
  boards: int | None = None
  boards_at_once: int | None = None
  regret_rule: str | None = None
  max_bytes: float | None = None
  checkpoint: str | None = None
  checkpoint_seconds: float | None = None
  keep_checkpoints: int = KEEP_CHECKPOINTS
  resume: bool = False
  rules: Any = tree_lib.ACPC  # blinds and stacks (`NoLimitRules`)

  @property
  def tabular(self) -> bool:
    """Whether the run trains on abstraction tables (tabular or pcs)."""
    return self.algorithm in TABLES


class Progress(NamedTuple):
  """A training run's progress, as `train_blueprint` reports it."""

  start: int  # the iteration this call started from (a resumed run's checkpoint)
  iteration: int
  seconds: float  # solving seconds, earlier runs included
  traversals_per_second: float | None  # over all runs; None before any time has passed
  label: str  # what the run holds: the tables' size, or the algorithm


class BlueprintRun(NamedTuple):
  """A finished `train_blueprint`: its report (the JSON of `jaxcfr blueprint train`), the library
  training result, and what `save` writes the blueprint file from."""

  report: dict
  result: library.Result
  settings: BlueprintSettings
  solver: Any
  game: game_lib.BlueprintGame
  tree: tree_lib.BettingTree
  nodes: Any  # the networks' feature inputs (None for tabular)

  def save(self, path: str, *, force: bool = False) -> dict:
    """Writes the blueprint file (`load_policy` reads it); returns its metadata."""
    settings = self.settings
    if settings.tabular:
      return save(
        path, self.result, self.solver, self.game, self.tree, settings.bets, settings.abstraction,
        force=force, seed=settings.seed, devices=settings.devices,
      )  # fmt: skip
    return save_networks(
      path, self.result, self.solver, self.game, self.tree, self.nodes, settings.bets, force=force,
      seed=settings.seed, advantage_loss=self.report['advantage_loss'],
    )  # fmt: skip


def check_settings(settings: BlueprintSettings) -> None:
  """`BlueprintError` with one line for settings that cannot train, before any work."""
  fail = files.BlueprintError
  if settings.algorithm not in ALGORITHMS:
    raise fail(f'algorithm must be one of {", ".join(ALGORITHMS)}, got {settings.algorithm!r}')
  if settings.seconds is None and settings.iterations is None:
    raise fail('give a budget: --seconds S and/or --iterations N')
  if not settings.checkpoint:
    for flag in ('resume', 'checkpoint_seconds'):
      if getattr(settings, flag):
        raise fail(f'--{flag.replace("_", "-")} needs --checkpoint DIR')
  registered = _REGISTERED.get(settings.algorithm)
  owned = {p.name for p in algorithms.REGISTRY[registered].hyperparameters} if registered else set()
  for other in ('es-mccfr', 'deep-cfr'):
    for parameter in algorithms.REGISTRY[other].hyperparameters:
      if parameter.name in settings.hyperparameters and parameter.name not in owned:
        mccfr = ' (an MCCFR flag: --algorithm tabular)' if other == 'es-mccfr' else ''
        raise fail(f'{parameter.cli_flag} does not apply to --algorithm {settings.algorithm}{mccfr}')
  if settings.snapshots is not None and settings.algorithm != 'sd-cfr':
    raise fail(f'--snapshots does not apply to --algorithm {settings.algorithm}')
  limit = settings.max_bytes
  if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float) or not limit >= 0):
    raise fail(f'--max-memory must be a number >= 0, got {limit!r}')
  if limit is not None and not settings.tabular:
    raise fail(f'--max-memory does not apply to --algorithm {settings.algorithm}')
  if settings.algorithm == 'pcs':
    _check_pcs(settings)
  else:
    for flag in ('boards', 'boards_at_once', 'regret_rule'):
      if getattr(settings, flag) is not None:
        raise fail(f'--{flag.replace("_", "-")} applies to --algorithm pcs only')
  if settings.tabular:
    if not settings.history:
      raise fail('--no-history applies to --algorithm deep-cfr and sd-cfr only')
    if settings.abstraction is None:
      raise fail(f'--algorithm {settings.algorithm} needs --abstraction DIR (tables of `jaxcfr abstract`)')
  elif settings.abstraction is not None:
    raise fail(f'--abstraction does not apply to --algorithm {settings.algorithm} (no tables)')
  elif settings.devices != 1 or settings.dtype != 'float32':
    raise fail(f'--algorithm {settings.algorithm} runs on one device in float32')


def _check_pcs(settings: BlueprintSettings) -> None:
  fail = files.BlueprintError
  for flag in ('boards', 'boards_at_once'):
    value = getattr(settings, flag)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
      raise fail(f'--{flag.replace("_", "-")} must be a positive integer, got {value!r}')
  if settings.regret_rule is not None and settings.regret_rule not in vector.RULES:
    raise fail(f'--regret-rule must be one of {", ".join(vector.RULES)}, got {settings.regret_rule!r}')
  at_once, boards = settings.boards_at_once or 1, settings.boards  # None: the solver's, always a multiple
  if boards is not None and boards % (at_once * settings.devices):
    raise fail(
      f'--boards {boards} must be a multiple of --boards-at-once x --devices ({at_once} x {settings.devices})'
    )


class _Setup(NamedTuple):
  solver: Any
  game: game_lib.BlueprintGame
  tree: tree_lib.BettingTree
  nodes: Any
  abstraction: abstractions.Abstraction | None
  identity: dict  # what a checkpoint to resume must share
  per_update: int  # traversals an iteration runs
  description: str  # the game and what the run holds, one line
  label: str  # the progress line's


def _tabular_setup(settings: BlueprintSettings, given: dict) -> _Setup:
  if settings.algorithm == 'pcs':
    options = {'batch_size': settings.boards, 'algorithm': settings.regret_rule,
               'boards_per_step': settings.boards_at_once, 'devices': settings.devices}  # fmt: skip
    solver = vector.vector_solver(**{name: value for name, value in options.items() if value is not None})
  else:
    solver = mccfr.blueprint_solver(devices=settings.devices, **given)
  abstraction = load_tables(settings.abstraction)
  identity = {'devices': settings.devices, 'bets': settings.bets, 'abstraction': abstraction.fingerprint}
  if settings.rules != tree_lib.ACPC:  # (the default game leaves earlier checkpoints' identity as it was)
    identity['rules'] = rules_dict(settings.rules)
  if settings.checkpoint:
    check_checkpoints(settings.checkpoint, settings.keep_checkpoints, settings.resume, identity)
  game, tree = tables_game(abstraction, settings.bets, jnp.dtype(settings.dtype), settings.rules)
  sizes = memory_report(game)
  tables = memory.format_bytes(sizes['table_bytes'])
  what = (
    f'buckets {"/".join(map(str, game.num_buckets))}; regret and average tables {tables}, '
    f'game and bucket tables {memory.format_bytes(sizes["game_bytes"])}'
  )
  per_update = mccfr.traversals_per_update(solver)  # 2 * batch_size: deals (tabular) or boards (pcs)
  return _Setup(solver, game, tree, None, abstraction, identity, per_update, what, f'{tables} tables')


def _network_setup(settings: BlueprintSettings, given: dict) -> _Setup:
  from jaxcfr.poker.blueprint import deep, features  # noqa: PLC0415  (flax and optax)

  game, tree, nodes = network_game(settings.bets, settings.history, settings.rules)
  single = settings.algorithm == 'sd-cfr'
  snapshots = settings.snapshots or SNAPSHOTS
  solver = deep.deep_blueprint_solver(nodes, single=single, snapshots=snapshots, **given)
  identity = {'devices': 1, 'bets': settings.bets, 'history': settings.history}
  if settings.rules != tree_lib.ACPC:
    identity['rules'] = rules_dict(settings.rules)
  if settings.checkpoint:
    check_checkpoints(settings.checkpoint, settings.keep_checkpoints, settings.resume, identity)
  shapes = jax.tree.leaves(jax.eval_shape(lambda: solver.init(game, jax.random.key(0))))
  state_bytes = sum(
    leaf.size * leaf.dtype.itemsize for leaf in shapes if jnp.issubdtype(leaf.dtype, jnp.number)
  )
  layers = solver.hyperparameters['advantage_layers']
  what = (
    f'{"SD-CFR" if single else "Deep CFR"}, {features.size(settings.history)} features, advantage networks '
    f'{",".join(map(str, layers))}, reservoirs and networks {memory.format_bytes(state_bytes)}'
  )
  per_update = 2 * int(solver.hyperparameters['traversals'])
  return _Setup(solver, game, tree, nodes, None, identity, per_update, what, settings.algorithm)


def _setup(settings: BlueprintSettings) -> _Setup:
  registered = _REGISTERED.get(settings.algorithm)
  parameters = algorithms.REGISTRY[registered].hyperparameters if registered else ()
  given = {p.name: settings.hyperparameters[p.name] for p in parameters
           if p.name in settings.hyperparameters}  # fmt: skip
  return (_tabular_setup if settings.tabular else _network_setup)(settings, given)


def train_blueprint(
  settings: BlueprintSettings,
  out: str | None = None,
  *,
  force: bool = False,
  on_progress: Callable[[Progress], None] | None = None,
  log: Callable[[str], None] | None = None,
) -> BlueprintRun:
  """Trains the blueprint of `settings` through `jaxcfr.train` (budgets, checkpoints, exact resume)
  and, with `out`, writes its file there (checked before any work; `force` replaces a blueprint
  written earlier). `on_progress` gets a `Progress` as the run goes; `log` the run's lines (the game
  and what it holds, checkpoints). Bad settings, tables, checkpoints or outputs raise one-line errors
  (`BlueprintError`, `CheckpointError`, `OutputError`: ValueErrors but for `CheckpointError`)."""
  check_settings(settings)
  if out is not None:
    outputs.check_file(out, 'out', force=force, suffixes=('.npz',))
  setup = _setup(settings)
  counts = setup.tree.counts()
  if log is not None:
    log(
      f'blueprint: bets {settings.bets} ({counts["nodes"]:,} nodes, '
      f'{counts["decision_nodes"]:,} decision nodes), {setup.description}'
    )

  def report_progress(update: library.Progress) -> None:  # rates over all runs
    rate = setup.per_update * update.iteration / update.seconds if update.seconds > 0 else None
    on_progress(Progress(update.start, update.iteration, update.seconds, rate, setup.label))

  limit = None
  if settings.tabular:
    limit = settings.max_bytes if settings.max_bytes is not None else memory.available_bytes()
  try:
    result = train(
      setup.game, setup.solver, key=settings.seed, iterations=settings.iterations, seconds=settings.seconds,
      checkpoint_dir=settings.checkpoint, checkpoint_seconds=settings.checkpoint_seconds,
      keep_checkpoints=settings.keep_checkpoints, resume=settings.resume, identity=setup.identity,
      on_progress=None if on_progress is None else report_progress, log=log,
      max_bytes=int(limit) if limit else None,  # 0: no limit
    )  # fmt: skip
  except library.MemoryLimitError as error:
    smaller = '--boards-at-once' if settings.algorithm == 'pcs' else '--batch-size'
    raise files.BlueprintError(
      f'{error} (--max-memory): lower {smaller}, or take a smaller bet preset or profile'
    ) from None
  report = _report(settings, setup, counts, result)
  run = BlueprintRun(report, result, settings, setup.solver, setup.game, setup.tree, setup.nodes)
  if out is not None:
    run.save(out, force=force)
  return run


def _report(settings: BlueprintSettings, setup: _Setup, counts: dict, result: library.Result) -> dict:
  """The run's report: what `jaxcfr blueprint train --json` writes."""
  traversals = setup.per_update * result.iterations
  saves = result.checkpoint_seconds
  game = setup.game
  state = (
    memory_report(game, result.state) if settings.tabular else {'state_bytes': memory.nbytes(result.state)}
  )
  report = {
    'algorithm': settings.algorithm,
    'bets': settings.bets,
    'abstraction': setup.abstraction.fingerprint if settings.tabular else None,
    'buckets': list(game.num_buckets) if settings.tabular else None,
    **counts,
    'iterations': result.iterations,
    'traversals': traversals,
    'seconds': result.seconds,
    'traversals_per_second': traversals / max(result.seconds, 1e-9),
    'jit_seconds': result.jit_seconds,
    'resumed_from': result.resumed_from,
    'checkpoints_saved': len(saves),
    'checkpoint_seconds': statistics.median(saves) if saves else None,
    **state,
    'devices': settings.devices,
    'backend': jax.default_backend(),
    'hyperparameters': dict(setup.solver.hyperparameters),
    'seed': settings.seed,
  }
  if not settings.tabular:
    report['advantage_loss'] = [float(x) for x in jax.device_get(result.state.advantage_loss)]
  return report
