"""Card-abstraction tables: feature batches against direct computation, saving
and loading with their metadata, jitted lookups, clear errors, and the CLI (which
never deletes or overwrites what it did not write)."""

import argparse
import functools
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import abstractions
import jaxcfr.cli
from abstractions import tables
from abstractions.features import HOLES
from jaxcfr.cli import abstract as cli

SIZES = {s: abstractions.hand_indexer(s).size for s in ('flop', 'turn', 'river')}


@pytest.fixture(scope='module')
def synthetic(tmp_path_factory):
  """Tables whose bucket is a known function of the canonical index, saved once."""
  buckets = (169, 7, 11, 13)
  data = {
    'preflop': np.arange(169, dtype=np.uint8),
    # index % k, written by repeating one period (no int32 temporaries of the 123M river classes)
    **{
      street: np.resize(np.arange(k, dtype=np.uint8), SIZES[street])
      for street, k in [('flop', 7), ('turn', 11), ('river', 13)]
    },
  }
  metadata = {'format': tables.FORMAT_VERSION, 'buckets': list(buckets), 'seed': 0}
  out = tmp_path_factory.mktemp('abstraction') / 'tables'
  fingerprint = tables.save(data, metadata, out)
  return out, data, fingerprint


def test_save_and_load_round_trip(synthetic):
  out, data, fingerprint = synthetic
  assert sorted(os.listdir(out)) == ['metadata.json', 'tables.npz']
  assert os.listdir(out.parent) == ['tables']  # no staging left behind
  assert abstractions.is_table_directory(out)
  assert abstractions.load_metadata(out)['format'] == 'jaxcfr-abstraction'
  loaded = abstractions.load(out)
  assert loaded.buckets == (169, 7, 11, 13) and loaded.fingerprint == fingerprint
  for street in abstractions.STREETS:
    np.testing.assert_array_equal(np.asarray(getattr(loaded, street)), data[street])
  assert abstractions.load_metadata(out)['fingerprint'] == fingerprint


def test_lookup_inside_jit(synthetic):
  loaded = abstractions.load(synthetic[0], verify=False)
  rng = np.random.default_rng(0)
  deals = np.argsort(rng.random((500, 52)), axis=1)[:, :7].astype(np.int32)
  streets = [('flop', 3, 7), ('turn', 4, 11), ('river', 5, 13)]

  # The lookup and, for reference, the classes of the same deals, in one compiled function (eager
  # dispatch of the indexers is far slower; XLA may share the index arithmetic of the two).
  @jax.jit
  def lookup(t, d):
    classes = [abstractions.preflop_class(d[:, :2])]
    classes += [abstractions.canonical_index(d[:, : 2 + n], street) for street, n, _ in streets]
    return t.buckets_of(d[:, :2], d[:, 2:]), classes

  buckets, reference = lookup(loaded, deals)
  buckets = np.asarray(buckets)
  assert buckets.shape == (500, 4)
  np.testing.assert_array_equal(buckets[:, 0], np.asarray(reference[0]))
  for column, (_, _, k) in enumerate(streets, start=1):
    np.testing.assert_array_equal(buckets[:, column], np.asarray(reference[column]) % k)
  # A suit permutation of the deal changes no bucket.
  permuted = ((deals >> 2) * 4 + np.array([2, 0, 3, 1])[deals & 3]).astype(np.int32)  # no recompile
  np.testing.assert_array_equal(np.asarray(lookup(loaded, permuted)[0]), buckets)


def test_load_errors(synthetic, tmp_path):
  out, data, _ = synthetic
  with pytest.raises(abstractions.AbstractionError, match='missing metadata.json'):
    abstractions.load(tmp_path / 'nowhere')
  broken = tmp_path / 'broken'
  broken.mkdir()
  (broken / 'metadata.json').write_text('{not json')
  with pytest.raises(abstractions.AbstractionError, match='cannot read'):
    abstractions.load(broken)
  (broken / 'metadata.json').write_text(
    json.dumps({'format': tables.FORMAT_VERSION, 'buckets': [169, 7, 11, 13]})
  )
  with pytest.raises(abstractions.AbstractionError, match='tables.npz'):
    abstractions.load(broken)
  # Tables that do not match their fingerprint.
  metadata = abstractions.load_metadata(out)
  changed = dict(data, flop=np.roll(data['flop'], 1))
  np.savez(broken / 'tables.npz', **changed)
  (broken / 'metadata.json').write_text(json.dumps(metadata))
  with pytest.raises(abstractions.AbstractionError, match='fingerprint'):
    abstractions.load(broken)
  # A bucket beyond the stated size.
  with pytest.raises(abstractions.AbstractionError, match='outside'):
    tables.save(data, dict(metadata, buckets=[169, 7, 11, 12]), tmp_path / 'bad')
  assert not (tmp_path / 'bad').exists()
  assert issubclass(abstractions.AbstractionError, ValueError)


def test_board_classes():
  boards, weights = abstractions.board_classes(3)
  assert len(boards) == 1755 and weights.sum() == 22_100
  assert sorted(set(weights.tolist())) == [4, 12, 24]


# One turn board with each of its 48 river cards, then two more river boards (the second a
# straight flush): the river batch is compiled once for both tests below.
TURN_BOARD = np.array([1, 14, 27, 40], np.int32)
RIVERS = np.setdiff1d(np.arange(52), TURN_BOARD).astype(np.int32)  # [48]
RIVER_BOARDS = np.concatenate(
  [
    np.concatenate([np.broadcast_to(TURN_BOARD, (48, 4)), RIVERS[:, None]], 1),
    np.array([[0, 5, 10, 20, 51], [3, 7, 11, 15, 19]], np.int32),
  ]
)  # [50, 5]


@pytest.fixture(scope='module')
def river_batch():
  """(class, equity code, valid) [50, H] of every pair on RIVER_BOARDS from `tables._river_batch`."""
  return tuple(np.asarray(x) for x in tables._river_batch(jnp.asarray(RIVER_BOARDS)))


def test_river_batch_matches_board_equities(river_batch):
  index, code, valid = river_batch
  rows = [17, 48, 49]  # three boards: the shape test_board_equities_equal_direct_enumeration compiles
  boards, index, code, valid = RIVER_BOARDS[rows], index[rows], code[rows], valid[rows]
  equity, valid2 = (np.asarray(x) for x in jax.jit(abstractions.board_equities)(boards))
  np.testing.assert_array_equal(valid, valid2)
  np.testing.assert_array_equal(code[valid], np.round(equity[valid] * tables.EQUITY_STEPS))
  deals = np.concatenate(
    [np.broadcast_to(HOLES, (3, 1326, 2)), np.broadcast_to(boards[:, None], (3, 1326, 5))], -1
  )
  np.testing.assert_array_equal(
    index, np.asarray(jax.jit(lambda d: abstractions.canonical_index(d, 'river'))(deals))
  )


def test_river_percentiles_on_real_equities(river_batch):
  """Real river equity codes (heavy ties) over 50 boards: every bucket non-empty, monotone."""
  _, code, valid = river_batch
  codes = code[valid]
  distinct = np.unique(codes)
  k = min(200, len(distinct))
  assert k >= 100
  thresholds = tables.clustering.percentile_thresholds(codes, None, k)
  buckets = np.asarray(abstractions.percentile_buckets(codes, thresholds))
  assert np.array_equal(np.unique(buckets), np.arange(k))
  order = np.argsort(codes, kind='stable')
  assert np.all(np.diff(buckets[order]) >= 0)
  # Some single value holds more than a bucket's share: the plain percentile cuts collided here.
  assert np.bincount(codes).max() > len(codes) / k


def test_turn_features_match_direct_equities(river_batch):
  """The turn histogram and EHS of a few hands against brute-force river equities."""
  board, rivers = TURN_BOARD, RIVERS
  river_code = np.zeros(SIZES['river'], np.uint16)
  index, code, valid = (x[:48] for x in river_batch)
  river_code[index[valid]] = code[valid]
  batch = tables._features_batch('turn', 10)
  turn_index, histogram, ehs, ehs2, valid = (
    np.asarray(x) for x in batch(jnp.asarray(board[None]), jnp.asarray(rivers[None]), jnp.asarray(river_code))
  )
  assert valid.sum() == 1128
  hands = [h for h in [0, 400, 1325] if valid[0, h]]
  free = [[r for r in rivers if r not in HOLES[h]] for h in hands]  # 46 river cards each
  direct = np.asarray(
    jax.jit(abstractions.equity)(
      np.broadcast_to(HOLES[hands][:, None], (len(hands), 46, 2)),
      np.concatenate([np.broadcast_to(board, (len(hands), 46, 4)), np.array(free)[..., None]], -1),
    )
  )  # [hands, 46], in one compiled call
  for row, h in enumerate(hands):
    assert ehs[0, h] == pytest.approx(direct[row].mean(), abs=1e-5)
    assert ehs2[0, h] == pytest.approx((direct[row] ** 2).mean(), abs=1e-5)
    np.testing.assert_array_equal(
      histogram[0, h], np.bincount(np.minimum((direct[row] * 10).astype(int), 9), minlength=10)
    )
  deals = np.concatenate([HOLES, np.broadcast_to(board, (1326, 4))], -1)
  expected = np.asarray(jax.jit(lambda d: abstractions.canonical_index(d, 'turn'))(deals))
  np.testing.assert_array_equal(turn_index[0][valid[0]], expected[valid[0]])


def test_build_settings_validation():
  with pytest.raises(abstractions.AbstractionError, match='169'):
    abstractions.BuildSettings(buckets=(200, 200, 200, 200))
  with pytest.raises(abstractions.AbstractionError, match='four positive'):
    abstractions.BuildSettings(buckets=(169, 0, 200, 200))
  with pytest.raises(abstractions.AbstractionError, match='flop_turns'):
    abstractions.BuildSettings(flop_turns=0)


def cli_args(*argv):
  parser = argparse.ArgumentParser(prog='jaxcfr')
  cli.add_parser(parser.add_subparsers(dest='command', required=True))
  return parser.parse_args(['abstract', *argv])


def test_cli_arguments():
  settings = cli.settings_from_args(cli_args('--out', 'x', '--profile', 'small'))
  assert settings.buckets == (8, 12, 12, 8) and settings.turn_rivers == 8
  assert settings.flop_turns == 12 and settings.bins == 25  # the small profile's sampling
  default = cli.settings_from_args(cli_args('--out', 'x'))
  assert (default.bins, default.turn_rivers, default.flop_turns) == (50, 48, 49)  # exact features
  settings = cli.settings_from_args(
    cli_args('--out', 'x', '--buckets', '169,50,60,70', '--turn-rivers', '48')
  )
  assert (
    settings.buckets == (169, 50, 60, 70) and settings.turn_rivers == 48 and settings.kmeans_iterations == 20
  )
  for bad in ['1,2,3', 'a,b,c,d', '169,0,1,1', '170,1,1,1']:
    with pytest.raises(abstractions.AbstractionError):
      cli.run(cli_args('--out', 'x', '--buckets', bad, '--quiet'))


# `jaxcfr abstract --out`: tiny stand-in tables (the shape check is lifted), so no test builds or
# writes the real 123M-class tables.


@pytest.fixture
def fake_build(monkeypatch):
  """`cli.build_tables` returns tiny tables whose values follow the seed; returns the call count."""
  calls = []

  def build(settings, quiet=False):
    calls.append(settings)
    data = {s: np.full(3, settings.seed % 2, np.uint8) for s in abstractions.STREETS}
    return data, {'format': 'ignored', 'buckets': list(settings.buckets), 'settings': {'seed': settings.seed}}

  monkeypatch.setattr(cli, 'build_tables', build)
  monkeypatch.setattr(tables, '_check', lambda data, buckets: None)
  return calls


def snapshot(path):
  """Every file under `path` (or the file itself) with its bytes."""
  if path.is_file():
    return {'': path.read_bytes()}
  return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob('*'))}


def test_abstract_refuses_paths_it_did_not_write(tmp_path, monkeypatch, fake_build):
  (tmp_path / 'results.csv').write_text('a,b\n1,2\n')
  (tmp_path / 'notes').mkdir()
  (tmp_path / 'notes' / 'notes.txt').write_text('my notes')
  (tmp_path / 'other').mkdir()
  (tmp_path / 'other' / 'metadata.json').write_text('{"format": 1}')  # no fingerprint: not ours
  before = snapshot(tmp_path)
  monkeypatch.chdir(tmp_path)
  for out, message in [
    ('results.csv', 'is not a directory written by jaxcfr; choose another path'),
    ('notes', 'is not a directory written by jaxcfr; choose another path'),
    ('other', 'is not a directory written by jaxcfr'),
    ('.', 'is not a directory written by jaxcfr'),
    ('missing/tables', "directory '.*missing' does not exist"),
  ]:
    for force in ([], ['--force']):
      with pytest.raises(abstractions.AbstractionError, match=f'--out: .*{message}'):
        cli.run(cli_args('--out', out, '--quiet', *force))
  assert not fake_build and snapshot(tmp_path) == before


def test_abstract_replaces_its_own_tables_only_with_force(tmp_path, fake_build):
  out = tmp_path / 'tables'
  assert cli.run(cli_args('--out', str(out), '--quiet', '--seed', '1')) == 0
  assert abstractions.is_table_directory(out) and sorted(os.listdir(out)) == list(sorted(tables.TABLE_FILES))
  first = snapshot(out)
  with pytest.raises(abstractions.AbstractionError, match='exists; pass --force to replace it'):
    cli.run(cli_args('--out', str(out), '--quiet', '--seed', '2'))
  assert len(fake_build) == 1 and snapshot(out) == first
  assert cli.run(cli_args('--out', str(out), '--quiet', '--seed', '2', '--force')) == 0
  assert abstractions.load_metadata(out)['settings'] == {'seed': 2}
  assert abstractions.load_metadata(out)['format'] == 'jaxcfr-abstraction'  # whatever the builder said
  assert os.listdir(tmp_path) == ['tables']
  # Our tables with a user's file beside them: refused even with --force, nothing removed.
  (out / 'notes.txt').write_text('mine')
  second = snapshot(out)
  with pytest.raises(
    abstractions.AbstractionError, match=r'also holds files jaxcfr did not write \(notes.txt\)'
  ):
    cli.run(cli_args('--out', str(out), '--quiet', '--force'))
  assert len(fake_build) == 2 and snapshot(out) == second


def test_abstract_replaces_tables_saved_before_the_marker(tmp_path, fake_build):
  """Older tables ("format": 1, four bucket sizes, a SHA-256 fingerprint) are ours too."""
  out = tmp_path / 'old'
  out.mkdir()
  legacy = {'format': 1, 'buckets': [169, 7, 11, 13], 'fingerprint': 'ab' * 32}
  (out / 'metadata.json').write_text(json.dumps(legacy))
  (out / 'tables.npz').write_bytes(b'old tables')
  assert abstractions.is_table_directory(out)
  with pytest.raises(abstractions.AbstractionError, match='pass --force'):
    cli.run(cli_args('--out', str(out), '--quiet'))
  assert cli.run(cli_args('--out', str(out), '--quiet', '--force')) == 0
  assert abstractions.load_metadata(out)['format'] == 'jaxcfr-abstraction'
  (tmp_path / 'empty').mkdir()  # an empty directory holds nothing to lose
  assert cli.run(cli_args('--out', str(tmp_path / 'empty'), '--quiet')) == 0


@pytest.mark.skipif(not os.path.isdir('/proc/self'), reason='needs /proc')
def test_abstract_refuses_an_unwritable_out_before_any_work(fake_build, capsys):
  # Root passes os.access on /proc; creating anything there fails.
  with pytest.raises(abstractions.AbstractionError, match="--out: cannot write '/proc/abs'"):
    cli.run(cli_args('--out', '/proc/abs', '--quiet'))
  assert jaxcfr.cli.main(['abstract', '--out', '/proc/abs', '--quiet']) == 2
  error = capsys.readouterr().err
  assert error.startswith('jaxcfr: error: --out:') and 'Traceback' not in error
  assert not fake_build


def test_failed_save_leaves_nothing_behind(tmp_path, fake_build, monkeypatch):
  out = tmp_path / 'tables'
  assert cli.run(cli_args('--out', str(out), '--quiet')) == 0
  before = snapshot(out)

  def full_disk(*args, **kwargs):
    raise OSError(28, 'No space left on device')

  monkeypatch.setattr(tables.np, 'savez', full_disk)
  with pytest.raises(
    abstractions.AbstractionError, match=r'--out: cannot write .*\(No space left on device\)'
  ):
    cli.run(cli_args('--out', str(out), '--quiet', '--force'))
  assert snapshot(out) == before and os.listdir(tmp_path) == ['tables']


def test_build_progress_in_a_log_is_a_few_lines(capsys, monkeypatch):
  # A build step takes minutes; here the steps are instant, so every line is allowed at once.
  monkeypatch.setattr(tables, 'Progress', functools.partial(tables.Progress, min_interval=0))
  for _ in tables._batches(100_000, 10, 'river equity', quiet=False):
    pass
  lines = capsys.readouterr().err.splitlines()
  assert len(lines) <= 11 and lines[-1].startswith('river equity: 100,000 board done in ')
  for _ in tables._batches(100_000, 10, 'river equity', quiet=True):
    pass
  assert capsys.readouterr().err == ''


@pytest.mark.slow
def test_small_profile_build(tmp_path):
  out = tmp_path / 'small'
  assert cli.run(cli_args('--profile', 'small', '--out', str(out), '--quiet')) == 0
  loaded = abstractions.load(out)
  metadata = abstractions.load_metadata(out)
  assert loaded.buckets == (8, 12, 12, 8) and metadata['profile'] == 'small'
  for street, k in zip(abstractions.STREETS, loaded.buckets, strict=True):
    counts = np.bincount(np.asarray(getattr(loaded, street)), minlength=k)
    assert len(counts) == k and (counts > 0).all()
  aces = 13 * 12 + 12
  assert metadata['preflop_equity'][aces] == pytest.approx(0.8520, abs=2e-3)  # AA against a random hand
  assert int(loaded.preflop[aces]) == 7  # the top percentile bucket
