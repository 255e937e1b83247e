"""`jaxcfr blueprint train` end to end on stand-in tables (full-size tables of a few buckets, written
directly rather than built by k-means), `train_blueprint` from Python, and one clear line with exit
status 2 for bad input."""

import inspect
import json
import shutil

import jax
import numpy as np
import pytest
from cli_runner import run_cli
from standin import write_tables

import abstractions
from jaxcfr import cli, outputs
from jaxcfr.cli import blueprint as blueprint_cli
from jaxcfr.poker.blueprint import BlueprintSettings, files, policy, train_blueprint, training, vector
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.eval import baselines, match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import FULL_DECK


@pytest.fixture(scope='module')
def tables(tmp_path_factory):
  """A table directory `jaxcfr abstract` could have written: buckets (3, 2, 2, 2), by class parity."""
  return write_tables(tmp_path_factory.mktemp('tables') / 'small')


def train(tables, tmp_path, *extra):
  out = tmp_path / 'blueprint.npz'
  args = (
    'blueprint',
    'train',
    '--algorithm',
    'tabular',
    '--abstraction',
    tables,
    '--iterations',
    '2',
    '--batch-size',
    '32',
    '--out',
    str(out),
  )
  return (*run_cli(*args, *extra), out)


def short_run(tables, tmp_path, *algorithm) -> list:
  """A two-iteration `blueprint train` writing `b.npz`, for bad input to amend."""
  return ['blueprint', 'train', *algorithm, '--abstraction', tables, '--iterations', '2', '--out',
          str(tmp_path / 'b.npz')]  # fmt: skip


@pytest.mark.slow
def test_train_writes_a_blueprint_the_policy_reads(tables, tmp_path):
  checkpoint = tmp_path / 'run'
  code, out, err, path = train(
    tables, tmp_path, '--checkpoint', str(checkpoint), '--json', str(tmp_path / 'r.json')
  )
  assert code == 0, err
  assert 'bets small (3,746 nodes, 1,496 decision nodes), buckets 3/2/2/2' in out
  report = json.loads((tmp_path / 'r.json').read_text())
  assert (
    report['iterations'] == 2 and report['traversals'] == 2 * 2 * 32 and report['traversals_per_second'] > 0
  )
  assert report['table_bytes'] == 2 * 1496 * 3 * 4 * 4 and report['decision_nodes'] == 1496
  metadata = files.read_metadata(str(path))
  assert (
    metadata['bets_preset'] == 'small'
    and metadata['abstraction_fingerprint'] == abstractions.load(tables).fingerprint
  )
  assert metadata['iterations'] == 2 and metadata['rules'] == {
    'small_blind': 50,
    'big_blind': 100,
    'stack': 20_000,
  }
  bot = policy.load_policy(str(path))  # the tables found where training read them
  state = nlhe.deal(0, 64)
  actions, probabilities = bot.strategy(state, state.hole[:, :1])
  np.testing.assert_allclose(probabilities.sum(-1), 1, atol=1e-9)
  assert nlhe.is_legal(state, actions.kind[:, 1], actions.amount[:, 1]).all()
  # Resuming to 4 iterations continues the checkpoint; another bet preset is refused.
  resume = ('--checkpoint', str(checkpoint), '--resume', '--force')
  code, out, err, _ = train(tables, tmp_path, *resume, '--iterations', '4')
  assert code == 0, err
  assert 'resumed from' in out and files.read_metadata(str(path))['iterations'] == 4
  code, out, err, _ = train(tables, tmp_path, *resume, '--bets', 'default')
  assert code == 2 and err.count('\n') == 1 and 'Traceback' not in err
  assert "belongs to another run: it has bets 'small' (this run: 'default')" in err


@pytest.mark.slow
def test_a_blueprint_of_another_depth_records_its_rules_and_plays_them(tables, tmp_path):
  code, out, err, path = train(tables, tmp_path, '--stack', '25', '--blinds', '25/50', '--ante', '5')
  assert code == 0, err
  rules = nlhe.NoLimitRules(25, 50, 1250, ante=5)
  written = files.read_metadata(str(path))['rules']
  assert written == {'small_blind': 25, 'big_blind': 50, 'stack': 1250, 'ante': 5}
  bot = policy.load_policy(str(path))
  assert bot.tree.rules == rules
  state = nlhe.deal(0, 64, rules)
  actions, probabilities = bot.strategy(state, state.hole[:, :1])
  assert np.all(actions.amount[actions.kind == nlhe.RAISE] <= 1250)
  result = match.play_match(
    bot, baselines.AlwaysCall(), 40, rules=nlhe.NoLimitRules(50, 100, 2000), aivat=None
  )
  assert np.abs(result.chips).max() <= 2000  # at 20 bb of 50/100 too, read into its own game


@pytest.mark.slow
def test_train_blueprint_from_python_writes_what_the_command_writes(tables, tmp_path):
  """`train_blueprint` is `jaxcfr blueprint train` without the command line: for the same seed and
  iterations, the same blueprint (arrays and metadata but for the seconds) and the same report."""
  command, library = tmp_path / 'command.npz', tmp_path / 'library.npz'
  args = ['blueprint', 'train', '--algorithm', 'tabular', '--abstraction', tables, '--iterations', '2',
          '--batch-size', '32', '--seed', '3']  # fmt: skip
  assert cli.main([*args, '--out', str(command), '--json', str(tmp_path / 'command.json'), '--quiet']) == 0
  updates, lines = [], []
  settings = BlueprintSettings(
    algorithm='tabular', abstraction=tables, iterations=2, seed=3, hyperparameters={'batch_size': 32}
  )
  run = train_blueprint(settings, str(library), on_progress=updates.append, log=lines.append)
  ours, theirs = files.load_blueprint(str(library)), files.load_blueprint(str(command))
  np.testing.assert_array_equal(ours.probabilities, theirs.probabilities)
  timing = {'seconds'}
  assert {k: v for k, v in ours.metadata.items() if k not in timing} == {
    k: v for k, v in theirs.metadata.items() if k not in timing
  }
  assert ours.metadata['iterations'] == 2 and ours.metadata['seed'] == 3
  report = json.loads((tmp_path / 'command.json').read_text())
  written = json.loads(outputs.json_text(run.report))
  timed = {'seconds', 'traversals_per_second', 'jit_seconds'}
  assert set(written) <= set(report) and {k: v for k, v in written.items() if k not in timed} == {
    k: report[k] for k in written if k not in timed
  }
  assert run.result.iterations == 2 and updates[-1].iteration == 2 and updates[-1].label.endswith('tables')
  assert lines[0].startswith('blueprint: bets small (3,746 nodes, 1,496 decision nodes), buckets 3/2/2/2')
  with pytest.raises(files.BlueprintError, match='give a budget'):
    train_blueprint(BlueprintSettings(abstraction=tables))


@pytest.mark.parametrize(
  'change,message',
  [
    (('--abstraction', '/nonexistent/tables'), 'no abstraction tables in /nonexistent/tables'),
    (('--iterations', '0'), 'must be positive'),
    (('--resume',), '--resume needs --checkpoint DIR'),
    (('--batch-size', '0'), 'batch_size must be a positive integer'),
    (('--out', '/nonexistent/dir/x.npz'), "directory '/nonexistent/dir' does not exist"),
    (('--out', 'x.json'), 'must name a NPZ file'),
    (('--devices', '3', '--batch-size', '32'), 'must be a multiple of the device count 3'),
    (('--max-memory', '0.001'), 'more than the limit of 1.07 MB (--max-memory): lower --batch-size'),
    (('--max-memory', '-1'), 'argument --max-memory: must be a non-negative number, got -1'),
    (('--stack', '1'), '--stack must be more than one big blind, got 1'),
    (('--blinds', '100/50'), 'small at most the big'),
    (('--stack', '2', '--ante', '100'), '--ante must be 0 or more and leave more than a big blind behind'),
  ],
)
def test_bad_input_is_one_line_and_exit_status_2(tables, tmp_path, change, message):
  args = short_run(tables, tmp_path, '--algorithm', 'tabular')
  for flag, value in zip(change[::2], [*change[1::2], None], strict=False):
    if flag in args and value is not None:
      args[args.index(flag) + 1] = value
    else:
      args += [flag] if value is None else [flag, value]
  code, out, err = run_cli(*args)
  assert code == 2 and message in err and 'Traceback' not in err, err
  assert not (tmp_path / 'b.npz').exists()


def test_a_file_that_is_not_ours_is_refused_before_training(tables, tmp_path):
  mine = tmp_path / 'mine.npz'
  mine.write_text('my own data')
  code, _, err, _ = train(tables, tmp_path, '--out', str(mine), '--force')
  assert code == 2 and 'was not written by jaxcfr' in err
  assert mine.read_text() == 'my own data'


def test_tables_that_do_not_match_their_fingerprint_are_refused(tables, tmp_path):
  metadata = json.loads(open(f'{tables}/metadata.json').read())
  broken = tmp_path / 'broken'
  broken.mkdir()
  (broken / 'metadata.json').write_text(json.dumps({**metadata, 'fingerprint': '0' * 64}))
  (broken / 'tables.npz').symlink_to(f'{tables}/tables.npz')
  code, _, err, _ = train(str(broken), tmp_path)
  assert code == 2 and 'do not match the fingerprint' in err


def test_the_policy_buckets_by_the_tables_and_the_visible_board(tables, tmp_path):
  """A blueprint on real tables: each query reads the cell of the tables' bucket of the hole pair and
  the board shown so far (the dealt but unseen cards would change it)."""
  tree = tree_lib.build_tree('small')
  abstraction = abstractions.load(tables)
  rng = np.random.default_rng(0)
  values = rng.random((tree.num_decisions, 3, tree.num_actions)) * tree.legal[:, None, :]
  metadata = files.metadata_for(
    tree, bets_name='small', deck=FULL_DECK, board_cards=(0, 3, 1, 1), buckets=(3, 2, 2, 2),
    abstraction_fingerprint=abstraction.fingerprint, abstraction_path=tables,
  )  # fmt: skip
  path = str(tmp_path / 'random.npz')
  files.save_blueprint(path, tree, values / values.sum(-1, keepdims=True), metadata)
  bot = policy.load_policy(path)
  state = nlhe.deal(1, 8)
  for street in range(4):  # check, check to each street
    holes = state.hole[np.arange(8), state.to_act][:, None, :]
    node, on_tree = bot.abstract_nodes(state)
    assert on_tree.all() and (bot.tree.street[node] == street).all()
    _, probabilities = bot.strategy(state, holes)
    shown = state.board[:, : (0, 3, 4, 5)[street]]
    expected = np.asarray(abstraction.bucket(abstractions.STREETS[street], holes[:, 0], shown))
    rows = bot.tree.decision[node]
    np.testing.assert_allclose(probabilities[:, 0], bot.blueprint.probabilities[rows, expected], atol=1e-6)
    state = nlhe.apply(nlhe.apply(state, np.full(8, nlhe.CALL)), np.full(8, nlhe.CALL))


# `--algorithm pcs`: public chance sampling in vector form on the same tables and files.


def pcs_settings(tables, checkpoint=None, **changes):
  options = dict(algorithm='pcs', abstraction=tables, iterations=2, boards=2, checkpoint=checkpoint)
  return BlueprintSettings(**{**options, **changes})


@pytest.fixture(scope='module')
def pcs_run(tables, tmp_path_factory):
  """`jaxcfr blueprint train --algorithm pcs` for 2 iterations of 2 boards, checkpointed: (exit status,
  stdout, stderr, its directory with `pcs.npz`, `r.json` and the checkpoints in `run/`)."""
  directory = tmp_path_factory.mktemp('pcs')
  args = ['blueprint', 'train', '--algorithm', 'pcs', '--abstraction', tables, '--iterations', '2',
          '--boards', '2', '--regret-rule', 'dcfr', '--checkpoint', str(directory / 'run'),
          '--out', str(directory / 'pcs.npz'), '--json', str(directory / 'r.json')]  # fmt: skip
  return (*run_cli(*args), directory)


@pytest.mark.slow  # a training run of its own; pcs bad input runs by default
def test_pcs_writes_a_blueprint_the_policy_plays(pcs_run):
  code, out, err, directory = pcs_run
  assert code == 0, err
  assert '2 iterations, 8 boards in' in out and 'boards/s' in out
  report = json.loads((directory / 'r.json').read_text())
  assert report['algorithm'] == 'pcs' and report['traversals'] == 2 * 2 * 2
  assert report['hyperparameters'] == {
    'batch_size': 2, 'algorithm': 'dcfr', 'boards_per_step': 1, 'alpha': 1.5, 'beta': 0.0, 'gamma': 2.0,
  }  # fmt: skip
  blueprint = files.load_blueprint(str(directory / 'pcs.npz'))
  assert blueprint.metadata['algorithm'] == 'blueprint-pcs' and blueprint.metadata['iterations'] == 2
  assert blueprint.probabilities.shape[:2] == (1496, 3)
  bot = policy.load_policy(str(directory / 'pcs.npz'))
  result = match.play_match(bot, baselines.AlwaysCall(), hands=64, seed=0, batch=64)
  assert result.hands == 64 and np.isfinite(result.mbb_per_hand)


@pytest.mark.slow  # two more training runs; the tabular resume runs by default
def test_pcs_resumed_equals_uninterrupted_bit_for_bit(tables, pcs_run, tmp_path):
  """The command's checkpoint after 2 iterations, resumed to 3, is the 3 iterations of one run."""
  code, _, err, directory = pcs_run
  assert code == 0, err
  checkpoint = shutil.copytree(directory / 'run', tmp_path / 'run')
  resumed = train_blueprint(pcs_settings(tables, str(checkpoint), iterations=3, resume=True)).result
  whole = train_blueprint(pcs_settings(tables, iterations=3)).result
  assert resumed.resumed_from == 2 and resumed.iterations == whole.iterations == 3
  plain = lambda x: jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x
  for ours, theirs in zip(jax.tree.leaves(resumed.state), jax.tree.leaves(whole.state), strict=True):
    np.testing.assert_array_equal(plain(ours), plain(theirs))
  np.testing.assert_array_equal(resumed.policy, whole.policy)


@pytest.mark.parametrize(
  'change,message',
  [
    (('--boards', '0'), '--boards must be a positive integer, got 0'),
    (('--boards', '4', '--boards-at-once', '3'), 'multiple of --boards-at-once x --devices (3 x 1)'),
    (
      ('--boards', '4', '--devices', '3'),
      '--boards 4 must be a multiple of --boards-at-once x --devices (1 x 3)',
    ),
    # The compiled iteration needs more than the limit: refused once compiled, before any iteration
    # (with -m slow: compiling PCS's iteration is the default suite's slowest refusal; the tabular
    # trainer's refusal after compiling runs by default: `test_bad_input_is_one_line_and_exit_status_2`).
    pytest.param(
      ('--max-memory', '0.001', '--checkpoint', 'RUN'),
      'of memory, more than the limit of 1.07 MB',
      marks=pytest.mark.slow,
    ),
    (('--algorithm', 'tabular', '--boards-at-once', '2'), '--boards-at-once applies to --algorithm pcs only'),
    # pcs is the default (no --algorithm above): an MCCFR flag without --algorithm tabular says so.
    (
      ('--batch-size', '32'),
      '--batch-size does not apply to --algorithm pcs (an MCCFR flag: --algorithm tabular)',
    ),
    (('--algorithm', 'tabular', '--boards', '4'), '--boards applies to --algorithm pcs only'),
  ],
)
def test_pcs_bad_input_is_one_line_and_exit_status_2(tables, tmp_path, change, message):
  args = short_run(tables, tmp_path)  # pcs: the default
  for flag, value in zip(change[::2], change[1::2], strict=True):
    value = str(tmp_path / 'run') if value == 'RUN' else value
    if flag in args:
      args[args.index(flag) + 1] = value
    else:
      args += [flag, value]
  code, _, err = run_cli(*args)
  assert code == 2 and err.count('\n') == 1 and message in err and 'Traceback' not in err, err
  assert not (tmp_path / 'b.npz').exists() and not (tmp_path / 'run').exists()


def test_the_command_names_what_the_library_takes():
  """The command line keeps copies (it imports no JAX to build its parser): they must agree."""
  assert blueprint_cli._ALGORITHMS == training.ALGORITHMS and blueprint_cli._RULES == vector.RULES
  assert blueprint_cli._DEFAULT_RULE == vector.DEFAULT_RULE
  # --boards' default is the solver's: one board a device (`batch_size` None there).
  assert inspect.signature(vector.vector_solver).parameters['batch_size'].default is None
  assert vector.vector_solver().hyperparameters['batch_size'] == 1
  assert vector.vector_solver(boards_per_step=2).hyperparameters['batch_size'] == 2
