"""The compiled-game cache (bit-identical round trips, corrupt and stale entries rebuilt, the opt-outs)
and the memory accounting that `jaxcfr games` and `jaxcfr solve` report."""

import json
import os
import subprocess
import sys
import zipfile

import conftest
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compiled

import jaxcfr
from jaxcfr import cli, game_cache, memory

SOLVER = jaxcfr.cfr_plus()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  """A fresh games directory; every game is written, however quick to compile."""
  directory = tmp_path / 'games'
  monkeypatch.setattr(game_cache, 'directory', lambda: str(directory))
  monkeypatch.setattr(game_cache, 'MIN_COMPILE_SECONDS', 0.0)
  monkeypatch.delenv('JAXCFR_NO_CACHE', raising=False)
  return directory


def assert_identical(loaded: jaxcfr.CompiledGame, game: jaxcfr.CompiledGame) -> None:
  """Every leaf equal bit for bit (dtype and shape included), every static field and the GameInfo."""
  assert jax.tree.structure(loaded) == jax.tree.structure(game)
  for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(game), strict=True):
    assert isinstance(a, jax.Array) and a.dtype == b.dtype and a.shape == b.shape
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
  for field in game_cache.dataclasses.fields(game):
    if field.name not in jaxcfr.compiled._DATA_FIELDS:
      assert getattr(loaded, field.name) == getattr(game, field.name), field.name
  assert loaded.info.infoset_keys == game.info.infoset_keys and loaded.name == game.name
  assert loaded.info.fingerprint == game.info.fingerprint and (loaded.sequence_form is None) == (
    game.sequence_form is None
  )


def solve_twice(loaded, game):
  """CFR+ states after 20 iterations on each game (one jitted program serves both)."""
  return [jax.device_get(conftest.solve(SOLVER, g, 20)) for g in (loaded, game)]


@pytest.mark.parametrize(
  'spec,sequence_form,solved',
  [('kuhn', True, True), ('kuhn', False, True), ('openspiel:kuhn_poker', True, True), ('leduc', True, False)],
)
def test_a_saved_game_loads_bit_identical_and_solves_the_same(spec, sequence_form, solved, tmp_path):
  if spec.startswith('openspiel:'):
    pytest.importorskip('pyspiel')
  game = compiled(spec, dtype='float64')
  if not sequence_form:  # a game without perfect recall has none; the solvers walk histories
    game = game.replace(sequence_form=None)
  assert (game.sequence_form is not None) == sequence_form
  key = game_cache.cache_key(jaxcfr.load_game(spec), jnp.float64)
  path = str(tmp_path / 'entry.npz')
  game_cache.save(path, game, key)
  loaded = game_cache.load(path, key)
  assert_identical(loaded, game)
  if solved:  # equal leaves give equal results; a few iterations of a small game confirm it
    for a, b in zip(*(jax.tree.leaves(state) for state in solve_twice(loaded, game)), strict=True):
      np.testing.assert_array_equal(a, b)
  assert os.listdir(tmp_path) == ['entry.npz']  # no temporary file left
  with zipfile.ZipFile(path) as archive:  # compressed, with the header that says jaxcfr wrote it
    assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in archive.infolist())
  assert jaxcfr.outputs.is_ours(path)


def test_the_second_load_is_a_hit_and_equals_the_compiled_game(cache_dir):
  messages = []
  game, _, hit = game_cache.load_or_compile('kuhn(players=3)', dtype=jnp.float64, log=messages.append)
  assert not hit and len(os.listdir(cache_dir)) == 1
  again, _, hit = game_cache.load_or_compile('kuhn(players=3)', dtype=jnp.float64, log=messages.append)
  assert hit and messages == []
  assert_identical(again, game)
  other_dtype, _, hit = game_cache.load_or_compile('kuhn(players=3)', dtype=jnp.float32)
  assert not hit and other_dtype.dtype == jnp.float32 and len(os.listdir(cache_dir)) == 2


def test_one_entry_serves_every_spelling_of_an_openspiel_game_under_its_own_name(cache_dir):
  pytest.importorskip('pyspiel')
  assert not game_cache.load_or_compile('openspiel:kuhn_poker')[2]
  game, _, hit = game_cache.load_or_compile('openspiel:kuhn_poker()')
  assert hit and game.name == str(jaxcfr.load_game('openspiel:kuhn_poker()')) == 'openspiel:kuhn_poker()'


def test_quick_games_are_not_written(cache_dir, monkeypatch):
  monkeypatch.setattr(game_cache, 'MIN_COMPILE_SECONDS', 60.0)
  assert not game_cache.load_or_compile('kuhn')[2]
  assert not cache_dir.exists()


def test_no_cache_reads_and_writes_nothing(cache_dir, monkeypatch):
  game_cache.load_or_compile('kuhn', cache=False)
  assert not cache_dir.exists()
  monkeypatch.setenv('JAXCFR_NO_CACHE', '1')
  assert not game_cache.enabled()
  game_cache.load_or_compile('kuhn')
  assert not cache_dir.exists()


def _flip(path):
  data = bytearray(path.read_bytes())
  for position in range(len(data) // 3, len(data) // 3 + 16):
    data[position] ^= 0xFF
  path.write_bytes(bytes(data))


def _truncate(path):
  path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage(path):
  path.write_bytes(b'not a zip archive')


def _changed_array(path):
  """A well-formed archive whose arrays no longer hash to the digest in its header."""
  with np.load(path) as archive:
    contents = {name: archive[name] for name in archive.files}
  contents['a0'] = contents['a0'].copy()
  contents['a0'].flat[0] += 1
  with open(path, 'wb') as file:
    np.savez_compressed(file, **contents)


@pytest.mark.parametrize('damage', [_flip, _truncate, _garbage, _changed_array])
def test_a_corrupt_entry_is_reported_rebuilt_and_never_used(damage, cache_dir):
  game = game_cache.load_or_compile('leduc')[0]
  (path,) = cache_dir.iterdir()
  damage(path)
  with pytest.raises(game_cache.CacheError, match='corrupt'):
    game_cache.load(str(path))
  messages = []
  rebuilt, _, hit = game_cache.load_or_compile('leduc', log=messages.append)
  assert not hit and len(messages) == 1
  assert (
    messages[0].startswith('cache entry for leduc (float32) was corrupt') and 'recompiling' in messages[0]
  )
  assert_identical(rebuilt, game)
  again, _, hit = game_cache.load_or_compile('leduc', log=messages.append)  # the entry was replaced
  assert hit and len(messages) == 1 and os.listdir(cache_dir) == [path.name]
  assert_identical(again, game)


@pytest.mark.parametrize(
  'change', [('__version__', '99.0'), ('FORMAT_VERSION', 99), ('_source_digest', lambda: 'edited')]
)
def test_a_new_version_format_or_compiler_makes_entries_stale(change, cache_dir, monkeypatch):
  game = game_cache.load_or_compile('kuhn')[0]
  monkeypatch.setattr(game_cache, *change)
  messages = []
  rebuilt, _, hit = game_cache.load_or_compile('kuhn', log=messages.append)
  assert not hit and len(messages) == 1 and 'was stale' in messages[0], messages
  assert_identical(rebuilt, game)
  assert game_cache.load_or_compile('kuhn')[2] and len(os.listdir(cache_dir)) == 1  # replaced, not added


def test_a_cached_game_over_max_histories_is_still_refused(cache_dir):
  game_cache.load_or_compile('leduc')
  with pytest.raises(jaxcfr.GameError, match='more than 1,000 histories'):
    game_cache.load_or_compile('leduc', max_histories=1000)


def test_an_unwritable_cache_is_reported_and_the_game_still_compiles(tmp_path, monkeypatch):
  blocker = tmp_path / 'file'
  blocker.write_text('a user file')
  monkeypatch.setattr(game_cache, 'directory', lambda: str(blocker / 'games'))
  monkeypatch.setattr(game_cache, 'MIN_COMPILE_SECONDS', 0.0)
  messages = []
  game, _, hit = game_cache.load_or_compile('kuhn', log=messages.append)
  assert not hit and game.num_histories == 58 and len(messages) == 1 and 'could not cache' in messages[0]
  assert blocker.read_text() == 'a user file'


def test_the_directory_follows_the_compilation_cache(monkeypatch, tmp_path):
  monkeypatch.setenv('JAXCFR_CACHE_DIR', str(tmp_path / 'c'))
  assert game_cache.directory() == str(tmp_path / 'c' / 'games')
  monkeypatch.delenv('JAXCFR_CACHE_DIR')
  monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
  assert game_cache.directory() == str(tmp_path / 'xdg' / 'jaxcfr' / 'games')


def test_memory_sums_every_leaf(kuhn64):
  solver = jaxcfr.dcfr()
  state = solver.init(kuhn64)
  assert memory.nbytes(kuhn64) == sum(leaf.nbytes for leaf in jax.tree.leaves(kuhn64)) > 0
  report = memory.accounting(kuhn64, state)
  assert report['state_bytes'] == sum(leaf.nbytes for leaf in jax.tree.leaves(state)) > 0
  assert report['bytes_per_history'] == report['game_bytes'] / kuhn64.num_histories
  assert [memory.format_bytes(n) for n in (0, 999, 1000, 917_268, 2_410_000_000)] == [
    '0 B',
    '999 B',
    '1 kB',
    '917 kB',
    '2.41 GB',
  ]
  assert memory.describe(report).startswith('memory: game ')


def test_solve_reports_a_cache_hit_and_memory(cache_dir, tmp_path, capsys):
  results = []
  for run in range(2):
    path = tmp_path / f'run{run}.json'
    assert cli.main(['solve', 'kuhn', '--iterations', '5', '--json', str(path), '--quiet']) == 0
    results.append(json.loads(path.read_text()))
  assert [r['game_cache'] for r in results] == ['miss', 'hit']
  assert 'loaded from the game cache' in capsys.readouterr().out
  game = jaxcfr.compile_game('kuhn', dtype=jnp.float32)
  state = jaxcfr.make_solver('dcfr').init(game)
  for result in results:
    assert result['game_bytes'] == sum(leaf.nbytes for leaf in jax.tree.leaves(game))
    assert result['state_bytes'] == sum(leaf.nbytes for leaf in jax.tree.leaves(state))
    assert result['bytes_per_history'] == result['game_bytes'] / 58
  assert results[0]['exploitability'] == results[1]['exploitability']


def test_solve_with_no_cache_writes_no_game(cache_dir, tmp_path):
  path = tmp_path / 'run.json'
  assert cli.main(['solve', 'kuhn', '--iterations', '5', '--json', str(path), '--quiet', '--no-cache']) == 0
  assert json.loads(path.read_text())['game_cache'] == 'off'
  assert not cache_dir.exists()


def test_games_reports_memory(tmp_path, monkeypatch):
  registry = {name: jaxcfr.games.REGISTRY[name] for name in ('kuhn', 'leduc')}  # liars_dice takes seconds
  monkeypatch.setattr(jaxcfr.games, 'REGISTRY', registry)
  path = tmp_path / 'games.json'
  assert cli.main(['games', '--json', str(path)]) == 0
  rows = {row['name']: row for row in json.loads(path.read_text())['games']}
  assert list(rows) == ['kuhn', 'leduc'] and rows['leduc']['num_histories'] == 9457
  game = compiled('leduc', dtype='float32')
  assert rows['leduc']['game_bytes'] == memory.nbytes(game)
  assert rows['leduc']['bytes_per_history'] == memory.nbytes(game) / 9457


@pytest.mark.slow
def test_a_second_command_line_run_loads_the_game(tmp_path):
  """`jaxcfr solve` twice in fresh processes, for a game slow enough (> 1 s) to be written."""
  env = {**os.environ, 'JAX_PLATFORMS': 'cpu', 'JAXCFR_CACHE_DIR': str(tmp_path / 'cache')}
  command = [sys.executable, '-m', 'jaxcfr.cli', 'solve', 'liars_dice', '--iterations', '2', '--json', '-']
  results = []
  for _ in range(2):
    process = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert process.returncode == 0, process.stderr
    results.append(json.loads(process.stdout))
  assert [r['game_cache'] for r in results] == ['miss', 'hit']
  assert results[1]['compile_seconds'] < results[0]['compile_seconds'] / 3
  assert results[0]['exploitability'] == results[1]['exploitability']
  assert len(os.listdir(tmp_path / 'cache' / 'games')) == 1


def test_aligned_arrays_back_cpu_device_arrays_in_place():
  """`memory.aligned` copies into 64-byte aligned memory (converting the dtype), hands an
  aligned array over without a copy when asked, and a CPU device array then uses that memory:
  the compiler's and the cache's arrays exist once on the host."""
  source = np.arange(1000, dtype=np.int64).reshape(10, 100)
  array = memory.aligned(source, np.int32)
  assert array.dtype == np.int32 and array.ctypes.data % memory.ALIGNMENT == 0
  np.testing.assert_array_equal(array, source)
  assert memory.aligned(array, copy=False) is array and memory.aligned(array) is not array
  assert memory.empty_aligned((0, 3), np.float32).shape == (0, 3)
  if jax.default_backend() == 'cpu':
    assert jax.device_put(array).unsafe_buffer_pointer() == array.ctypes.data
