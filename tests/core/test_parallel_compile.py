"""Compiling over worker processes gives the game one process compiles, bit for bit; limits and
progress reports hold on both paths."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxcfr
from jaxcfr import compiler, walker
from jaxcfr.games import CHANCE_PLAYER, load_game

pyspiel = pytest.importorskip('pyspiel')

GAMES = [
  'kuhn',
  'leduc',
  'openspiel:leduc_poker',
  'openspiel:leduc_poker(suit_isomorphism=True)',  # several chance distributions, met out of order
  'openspiel:kuhn_poker(players=3)',
  'openspiel:liars_dice(dice_sides=3)',
  'openspiel:goofspiel(num_cards=3)',  # simultaneous moves made turn-based
  'openspiel:first_sealed_auction(max_value=3)',  # general-sum, chance
]


@pytest.fixture
def split(monkeypatch):
  """Sends even a small game to the workers, in many runs of few roots."""
  monkeypatch.setattr(compiler, '_SERIAL_HISTORIES', 0)
  monkeypatch.setattr(compiler, '_ROOTS_PER_WORKER', 3)


def assert_identical(ours, theirs):
  leaves, structure = jax.tree_util.tree_flatten(ours)
  other_leaves, other_structure = jax.tree_util.tree_flatten(theirs)
  assert structure == other_structure  # static fields too: sizes, widths, sampled widths, GameInfo
  assert ours.info.fingerprint == theirs.info.fingerprint
  assert ours.infoset_keys == theirs.infoset_keys
  assert len(leaves) == len(other_leaves)
  for a, b in zip(leaves, other_leaves, strict=True):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize('spec', GAMES)
def test_workers_compile_the_same_game(spec, split):
  assert_identical(jaxcfr.compile_game(spec, workers=2), jaxcfr.compile_game(spec, workers=1))


def _breadth_first(game):
  """Infoset keys and chance distributions in breadth-first order of first appearance, and per
  depth the distribution of each chance history in order."""
  keys, distributions, chance = {}, {}, []
  layer = [game.new_initial_state()]
  while layer:
    following = []
    chance.append([])
    for state in layer:
      if state.is_terminal():
        continue
      if state.is_chance_node():
        outcomes = state.chance_outcomes()
        distribution = tuple(p for _, p in outcomes)
        distributions.setdefault(distribution, len(distributions))
        chance[-1].append(list(distribution))
        following += [state.child(action) for action, _ in outcomes]
      else:
        keys.setdefault(state.information_state_string(state.current_player()), len(keys))
        following += [state.child(action) for action in state.legal_actions()]
    layer = following
  return list(keys), list(distributions), chance


@pytest.mark.parametrize('spec', ['leduc', 'openspiel:leduc_poker(suit_isomorphism=True)'])
def test_numbering_is_breadth_first(spec, split):
  game = jaxcfr.compile_game(spec, workers=2, dtype='float64')
  keys, distributions, chance = _breadth_first(load_game(spec))
  assert list(game.infoset_keys) == keys
  table = np.asarray(game.chance_table)
  for row, distribution in enumerate(distributions):
    assert table[row, : len(distribution)].tolist() == list(distribution)
  for d, (row, player) in enumerate(zip(game.row, game.player, strict=True)):  # each chance history's own
    rows = np.asarray(row)[np.asarray(player) == CHANCE_PLAYER] - game.num_infosets - 1
    assert [table[r, : len(c)].tolist() for r, c in zip(rows, chance[d], strict=True)] == chance[d]


@pytest.mark.parametrize('workers', [1, 2])
def test_max_histories_still_raises(workers, split):
  with pytest.raises(jaxcfr.GameError, match='more than 500 histories'):
    jaxcfr.compile_game('openspiel:liars_dice(dice_sides=3)', max_histories=500, workers=workers)
  game = jaxcfr.compile_game('openspiel:liars_dice(dice_sides=3)', max_histories=1147, workers=workers)
  assert game.num_histories == 1147


@pytest.mark.parametrize('workers', [1, 2])
def test_progress_reports_depths_and_histories(workers, split):
  calls = []
  game = jaxcfr.compile_game('leduc', workers=workers, progress=lambda *call: calls.append(call))
  depths, histories = zip(*calls, strict=True)
  assert histories[-1] == game.num_histories and list(histories) == sorted(histories)
  assert max(depths) == game.num_depths - 1 and min(depths) >= 0


def test_workers_must_be_positive():
  with pytest.raises(jaxcfr.GameError, match='workers'):
    jaxcfr.compile_game('kuhn', workers=0)


def test_the_default_workers_are_the_environments_else_the_cores(monkeypatch):
  monkeypatch.setenv(compiler.WORKERS_ENV, '3')
  assert compiler.default_workers() == 3
  monkeypatch.delenv(compiler.WORKERS_ENV)
  assert compiler.default_workers() == len(os.sched_getaffinity(0))
  for bad in ('0', 'two', '-1'):
    monkeypatch.setenv(compiler.WORKERS_ENV, bad)
    with pytest.raises(
      jaxcfr.GameError, match=f'JAXCFR_COMPILE_WORKERS must be a positive integer, got {bad!r}'
    ):
      jaxcfr.compile_game('kuhn')


def test_a_worker_error_reaches_the_caller():
  with walker.Pool(load_game('openspiel:kuhn_poker'), 2) as pool:
    with pytest.raises(jaxcfr.GameError, match='has 11 numbers, not 5'):
      list(pool.map([([()], 0), ([(0, 1)], 5)]))  # a wrong tensor size


def test_workers_do_not_import_jax():
  boot = walker._BOOT_BARE.format(directory=walker.os.path.dirname(walker.__file__), path=sys.path)
  check = boot.replace('walker.serve()', "print('jax' in sys.modules, 'jaxcfr.walker' in sys.modules)")
  output = subprocess.run([sys.executable, '-c', check], capture_output=True, text=True, check=True).stdout
  assert output.split() == ['False', 'True']


@pytest.mark.slow
def test_workers_compile_infosets_that_span_depths(split):
  from test_evaluation import HiddenCount  # noqa: PLC0415 (a custom game: workers import all of jaxcfr)

  for seed in (0, 1, 2):
    ours = jaxcfr.compile_game(HiddenCount(seed), workers=2)
    assert not ours.depth_consistent
    assert_identical(ours, jaxcfr.compile_game(HiddenCount(seed), workers=1))


@pytest.mark.slow
def test_workers_compile_liars_dice_and_three_player_leduc():
  for spec in ('liars_dice', 'openspiel:leduc_poker(players=3)'):
    assert_identical(jaxcfr.compile_game(spec, workers=2), jaxcfr.compile_game(spec, workers=1))


def test_runs_split_evenly():
  for count, parts in [(10, 4), (64, 16), (5, 5), (1000, 7)]:
    runs = compiler._split(list(range(count)), parts)
    assert sum(runs, []) == list(range(count)) and len(runs) == parts
    assert max(map(len, runs)) - min(map(len, runs)) <= 1


def test_a_walk_frees_its_buffers_without_the_garbage_collector():
  """The recursive walk refers to itself; it breaks that cycle when done, so the compiler frees
  the walk's memory as soon as it has copied the arrays out (not at some later collection)."""
  import gc  # noqa: PLC0415
  import weakref  # noqa: PLC0415

  gc.disable()
  try:
    walk = walker.walk(load_game('leduc'), [()], 0)
    buffer = weakref.ref(walk.player[-1].base.obj)  # the array.array the walk appended to
    assert buffer() is not None
    del walk
    assert buffer() is None
  finally:
    gc.enable()
