"""Training a hold'em blueprint end to end: the game from abstraction tables and a bet preset, the
library training loop (`jaxcfr.train`: budgets, progress, checkpoints, exact resume), the file.

    from jaxcfr.poker.blueprint import training
    game, tree = training.tables_game('tables-small/', 'small')
    solver = blueprint_solver(batch_size=1024)
    result = training.train(game, solver, seconds=3600, checkpoint_dir='run')
    training.save(result, game, tree, 'small', abstraction, 'blueprint.npz')
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import abstractions
from jaxcfr import memory
from jaxcfr import training as library
from jaxcfr.poker.blueprint import files, mccfr
from jaxcfr.poker.blueprint import game as game_lib
from jaxcfr.poker.blueprint import tree as tree_lib


def load_tables(directory: str) -> abstractions.Abstraction:
  """The tables of `jaxcfr abstract` in `directory` (`BlueprintError` with one line if missing or bad)."""
  try:
    return abstractions.load(directory)
  except abstractions.AbstractionError as error:
    raise files.BlueprintError(f'--abstraction: {error}') from None


def tables_game(
  abstraction: abstractions.Abstraction, bets: str = 'small', dtype=jnp.float32
) -> tuple[game_lib.BlueprintGame, tree_lib.BettingTree]:
  """The abstract hold'em game (ACPC rules: blinds 50/100, stacks 20,000) of a bet preset and tables."""
  tree = tree_lib.build_tree(tree_lib.preset(bets))
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


def network_game(bets: str = 'small', history: bool = True):
  """(the abstract game without buckets, its tree, its rows' feature inputs) of a bet preset (ACPC rules)."""
  from jaxcfr.poker.blueprint import deep  # noqa: PLC0415

  tree = tree_lib.build_tree(tree_lib.preset(bets))
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
