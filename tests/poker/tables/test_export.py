"""The exported bot (`jaxcfr bot export`): the river's equity codes equal the abstraction's, the river
buckets read off by code are the table's, the export fits its tier or says why, the SDK's own
validator (`chipzen.validate`, with its connectivity scenarios) passes the directory with JAX blocked,
and the copied runtime answers exactly as the library's policy over the same bundle."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from standin import write_tables

from abstractions import lookup
from abstractions.features import board_equities
from abstractions.indexing import HOLES
from jaxcfr.poker.blueprint import files
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.eval import baselines
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import FULL_DECK
from jaxcfr.poker.runtime.policy import BlueprintPolicy
from jaxcfr.poker.tables import bundle, export

pytest.importorskip('chipzen')
SIZES = (3, 2, 2, 2)  # the stand-in tables' buckets


@pytest.mark.slow  # the default suite's 10 minutes; the export's own bucket check runs on every export
def test_river_codes_equal_the_abstractions_equities():
  rng = np.random.default_rng(0)
  boards = np.argsort(rng.random((12, 52)), 1)[:, :5]
  equity, valid = (np.asarray(x) for x in board_equities(jnp.asarray(boards)))
  for board, e, v in zip(boards, equity, valid, strict=True):
    codes = bundle.river_codes(HOLES[v], board)
    np.testing.assert_array_equal(codes, np.round(e[v] * 1980).astype(np.int64))
  # A range query asks every pair: those the board blocks get code 0, and the others are unchanged.
  codes = bundle.river_codes(HOLES, boards[0])
  np.testing.assert_array_equal(codes, np.where(valid[0], np.round(equity[0] * 1980), 0))


class _River:
  def __init__(self, river):
    self.river = np.asarray(river)


def test_river_buckets_are_read_off_by_code():
  river = _River([0, 0, 1, 1, 2])  # classes 0..4
  batches = [(np.array([0, 1]), np.array([3, 10])), (np.array([2, 3, 4]), np.array([500, 501, 1900]))]
  found = export.river_buckets(river, batches)
  assert found.shape == (1981,)
  assert (found[:11] == 0).all() and (found[11:502] == 1).all() and (found[502:] == 2).all()
  with pytest.raises(export.ExportError, match='one equity in two buckets'):
    export.river_buckets(river, [(np.array([0, 2]), np.array([7, 7]))])
  with pytest.raises(export.ExportError, match='not rising'):
    export.river_buckets(river, [(np.array([4, 0]), np.array([7, 8]))])


def _standin_blueprint(path: str, rules, fingerprint: str, tables_dir, seed: int) -> None:
  """A blueprint of the small preset under `rules` with random probabilities, for the stand-in tables."""
  tree = tree_lib.build_tree('small', rules)
  metadata = files.metadata_for(
    tree, bets_name='small', deck=FULL_DECK, board_cards=(0, 3, 1, 1), buckets=SIZES,
    abstraction_fingerprint=fingerprint, abstraction_path=str(tables_dir),
  )  # fmt: skip
  values = (
    np.random.default_rng(seed).random((tree.num_decisions, max(SIZES), tree.num_actions))
    * tree.legal[:, None]
  )
  files.save_blueprint(path, tree, values / values.sum(-1, keepdims=True), metadata)


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
  """A blueprint of the small preset with random probabilities on stand-in tables, exported for the
  Free tier with river buckets by code (two, split at the middle equity)."""
  root = tmp_path_factory.mktemp('export')
  tables = lookup.load_tables(write_tables(root / 'tables', SIZES))
  path = str(root / 'blueprint.npz')
  _standin_blueprint(path, nlhe.DEFAULT_RULES, tables.fingerprint, root / 'tables', seed=3)
  packed = bundle.BundleTables(
    preflop=tables.preflop, flop=tables.flop, turn=tables.turn, river=np.zeros(0, np.uint8),
    buckets=tables.buckets, fingerprint=tables.fingerprint,
    river_buckets=(np.arange(1981) >= 990).astype(np.uint8),
  )  # fmt: skip
  report = export.export_bot(path, str(root / 'bot'), 'free', packed)
  return root, path, packed, report


def test_the_export_fits_its_tier_and_holds_its_files(exported):
  root, _, _, report = exported
  bot = root / 'bot'
  assert report.compressed_bytes < report.limit_bytes == int(5 * 2**20 * 0.75)
  assert {p.name for p in bot.iterdir()} == set(export.EXPORT_FILES)
  assert (bot / 'requirements.txt').read_text().split() == ['numpy>=1.24', export.SDK_REQUIREMENT]
  dockerfile = (bot / 'Dockerfile').read_text()
  assert 'ENTRYPOINT ["python", "-u", "bot.py"]' in dockerfile and '\nUSER bot\n' in dockerfile
  assert not list(bot.rglob('*.pkl')) and not list(bot.rglob('*.pickle'))
  with np.load(bot / 'data' / bundle.TABLES_FILE, allow_pickle=False) as data:
    assert set(data.files) == {'preflop', 'river_buckets'}


def test_an_export_over_its_tier_is_refused_before_anything_is_written(exported, tmp_path, monkeypatch):
  _, path, packed, _ = exported
  monkeypatch.setitem(export.TIERS, 'free', export.Tier('free', 0.01, 0.5, 256, 500, 10))
  with pytest.raises(export.ExportError, match='free tier takes 0.01 MB'):
    export.export_bot(path, str(tmp_path / 'bot'), 'free', packed)
  assert not (tmp_path / 'bot').exists() and list(tmp_path.iterdir()) == []


# Run in a fresh Python with `import jax` failing and the exported directory as the bot's own: the
# SDK's validator (static checks, the smoke decision, the connectivity scenarios), then the bundle's
# policy on the given states, and which files the modules of ours came from.
_IN_THE_BOT = r"""
import importlib.abc, json, sys
class NoJax(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.partition('.')[0] in ('jax', 'jaxlib'):
      raise ImportError('no JAX in an exported bot')
sys.meta_path.insert(0, NoJax())
bot, states_path, answers_path = sys.argv[1:4]
from chipzen.validate import validate_bot
results = validate_bot(bot, check_connectivity=True)
import numpy as np
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.tables.bundle import load_bot
policy = load_bot(bot + '/data')  # what bot.py seats: the blueprint, push or fold at short stacks
with np.load(states_path) as data:
  fields = {name: data[name] for name in data.files if name != 'holes'}
  holes = data['holes']
state = nlhe.HandState(**fields)
actions, probabilities = policy.strategy(state, holes)
rng = np.random.default_rng(7)
cards = np.stack([rng.permutation(52)[:9] for _ in range(32)])
short = nlhe.initial(cards[:, :4].reshape(-1, 2, 2), cards[:, 4:], nlhe.NoLimitRules(50, 100, 1000))  # 10 bb
short_actions, short_probabilities = policy.strategy(short, short.hole[:, :1])
np.savez(answers_path, probabilities=probabilities, short_probabilities=short_probabilities,
         short_amounts=short_actions.amount, **actions._asdict())
ours = ('jaxcfr', 'abstractions')
loaded = {n: getattr(m, '__file__', None) for n, m in sys.modules.items() if n.partition('.')[0] in ours}
print(json.dumps({'results': results, 'loaded': loaded}))
"""


def _states(count: int, seed: int) -> tuple[nlhe.HandState, np.ndarray]:
  """`count` states on every street from random legal play, and each actor's own hole pair [n, 1, 2]."""
  rng = np.random.default_rng(seed)
  state = nlhe.deal(seed, count)
  kept = []
  for _ in range(12):
    live = ~state.finished
    if not live.any():
      break
    kept.append(nlhe.take(state, np.flatnonzero(live)))
    options = nlhe.legal(state)
    raising = options.can_raise & (rng.random(count) < 0.3)
    amount = np.where(raising, options.min_raise_to + (rng.random(count) * 400).astype(np.int64), 0)
    amount = np.minimum(amount, options.max_raise_to)
    state = nlhe.apply(state, np.where(raising, nlhe.RAISE, nlhe.CALL), amount, live)
  states = nlhe.concatenate(kept)
  return states, states.hole[np.arange(len(states.street)), states.to_act][:, None, :]


def test_the_sdk_validates_the_export_and_its_runtime_answers_as_the_library(exported, tmp_path):
  root, path, packed, _ = exported
  states, holes = _states(64, seed=4)
  assert set(np.unique(states.street)) == {0, 1, 2, 3}
  np.savez(
    tmp_path / 'states.npz', holes=holes, **{k: v for k, v in states._asdict().items() if k != 'rules'}
  )
  (tmp_path / 'in_the_bot.py').write_text(_IN_THE_BOT)
  command = [sys.executable, '-I', str(tmp_path / 'in_the_bot.py'), str(root / 'bot')]
  command += [str(tmp_path / 'states.npz'), str(tmp_path / 'answers.npz')]
  done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
  assert done.returncode == 0, done.stderr
  report = json.loads(done.stdout.splitlines()[-1])
  failed = [r for r in report['results'] if r[0] == 'fail']
  warned = [r for r in report['results'] if r[0] == 'warn']
  assert not failed, failed
  assert [r[1] for r in warned] == ['imports'] and 'os' in warned[0][2]  # as the SDK's own minimal example
  assert any(r[1] == 'connectivity_full_match' and r[0] == 'pass' for r in report['results'])
  for name, source in report['loaded'].items():  # every module of ours from the exported copy
    assert source is None or pathlib.Path(source).is_relative_to(root / 'bot'), (name, source)
  library = BlueprintPolicy(files.load_blueprint(path), packed)
  actions, probabilities = library.strategy(states, holes)
  with np.load(tmp_path / 'answers.npz') as answers:
    for field, value in zip(actions._fields, actions, strict=True):
      np.testing.assert_array_equal(answers[field], value)
    np.testing.assert_array_equal(answers['probabilities'], probabilities)
    # At 10 bb the exported bot pushes or folds as the library's equilibrium does.
    rng = np.random.default_rng(7)
    cards = np.stack([rng.permutation(52)[:9] for _ in range(32)])
    short = nlhe.initial(cards[:, :4].reshape(-1, 2, 2), cards[:, 4:], nlhe.NoLimitRules(50, 100, 1000))
    actions, probabilities = baselines.PushOrFold().strategy(short, short.hole[:, :1])
    np.testing.assert_allclose(answers['short_probabilities'], probabilities, atol=1e-6)
    np.testing.assert_array_equal(answers['short_amounts'], actions.amount)
    assert set(np.unique(answers['short_amounts'][:, 2])) == {1000}


def test_chipzen_sdk_validate_passes_in_an_environment_of_the_requirements_alone(exported, tmp_path):
  """`chipzen-sdk validate BOT --check-connectivity` (the SDK's own command) in a virtual environment
  that holds only what the export's requirements.txt names: numpy, the SDK and its websockets (the
  installed packages copied in: no download), no JAX and no jaxcfr."""
  import numpy  # noqa: PLC0415
  import websockets  # noqa: PLC0415

  root = exported[0]
  environment = tmp_path / 'env'
  subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(environment)], check=True)
  site = next(environment.glob('lib/python*/site-packages'))
  for package in (numpy, websockets, pytest.importorskip('chipzen')):
    folder = pathlib.Path(package.__file__).parent
    shutil.copytree(folder, site / folder.name)
  libraries = pathlib.Path(numpy.__file__).parents[1] / 'numpy.libs'  # the wheel's shared libraries
  if libraries.exists():
    shutil.copytree(libraries, site / libraries.name)
  command = [str(environment / 'bin' / 'python'), '-m', 'chipzen', 'validate', str(root / 'bot')]
  done = subprocess.run(
    [*command, '--check-connectivity'], capture_output=True, text=True, cwd=tmp_path, timeout=300
  )
  assert done.returncode == 0, done.stdout + done.stderr
  assert '[FAIL]' not in done.stdout and 'All checks passed (1 warning)' in done.stdout, done.stdout
  assert '[WARN] imports: Potentially restricted imports: os.' in done.stdout


def test_an_exported_directory_is_a_policy_spec(exported):
  from jaxcfr.poker import bots  # noqa: PLC0415

  root, path, packed, _ = exported
  policy = bots.resolve_policy(str(root / 'bot'))
  states, holes = _states(16, seed=6)
  expected = BlueprintPolicy(files.load_blueprint(path), packed).strategy(states, holes)
  for got, want in zip(policy.strategy(states, holes), expected, strict=True):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_jaxcfr_bot_export_refuses_bad_input_in_one_line(exported, tmp_path):
  from cli_runner import run_cli  # noqa: PLC0415

  root, path, _, _ = exported
  code, _, err = run_cli('bot', 'export', path, '--out', str(root / 'bot'))
  assert code == 2 and 'bot' in err and len(err.strip().splitlines()) <= 2  # not empty: refused
  code, _, err = run_cli('bot', 'export', str(tmp_path / 'missing.npz'), '--out', str(tmp_path / 'b'))
  assert code == 2 and len(err.strip().splitlines()) <= 2
  assert not (tmp_path / 'b').exists()


def test_blueprints_of_several_depths_export_as_one_depth_aware_bot(exported, tmp_path):
  from jaxcfr.poker.eval import depth  # noqa: PLC0415

  root, path, packed, _ = exported
  shallow = nlhe.NoLimitRules(50, 100, 2500)
  second = str(tmp_path / 'bp-25bb.npz')
  _standin_blueprint(second, shallow, packed.fingerprint, root / 'tables', seed=5)
  export.check_same_abstraction([path, second], packed)
  export.export_bot([path, second], str(tmp_path / 'bot'), 'free', packed)
  bot = bundle.load_bot(str(tmp_path / 'bot' / 'data'))
  assert isinstance(bot, depth.DepthAware) and len(bot.policies) == 2
  assert bot.nearest(nlhe.NoLimitRules(50, 100, 3000)).tree.rules == shallow  # 30 bb: the 25-bb one
  assert bot.nearest(nlhe.NoLimitRules(50, 100, 15_000)).tree.rules == nlhe.DEFAULT_RULES
  state = nlhe.deal(3, 8, nlhe.NoLimitRules(50, 100, 3000))
  actions, probabilities = bot.strategy(state, state.hole[:, :1])
  expected = depth.at_rules(BlueprintPolicy(files.load_blueprint(second), packed), state.rules)
  np.testing.assert_array_equal(probabilities, expected.strategy(state, state.hole[:, :1])[1])
  other = str(tmp_path / 'other.npz')
  _standin_blueprint(other, shallow, 'x', root / 'tables', seed=5)  # trained on other tables
  with pytest.raises(export.ExportError, match='one bot holds one abstraction'):
    export.check_same_abstraction([path, other], packed)
