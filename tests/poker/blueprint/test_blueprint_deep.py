"""Deep CFR on the blueprint's abstract game: the split first layer against the network on the features,
learning on the short-deck exact game (exploitability on its history-compiled twin), bit-identical
resume, and `jaxcfr blueprint train --algorithm deep-cfr` end to end: the file's policy plays a match."""

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runner import run_cli
from jax.experimental import io_callback
from test_blueprint import BOARD, DECK, POT, RULES, exact_game

import jaxcfr
from abstractions import HOLES
from jaxcfr import deep_cfr, evaluation, solvers
from jaxcfr.poker import bots, defaults
from jaxcfr.poker.blueprint import deep, files, policy
from jaxcfr.poker.blueprint import game as game_lib
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe

TINY = dict(
  traversals=64, advantage_layers=(32,), strategy_layers=(32,), advantage_steps=20, strategy_steps=300,
  advantage_capacity=20_000, strategy_capacity=20_000, advantage_batch_size=128, strategy_batch_size=128,
)  # fmt: skip


@functools.cache
def small_game():
  """The short-deck game without its exact twin (quick to build), and its rows."""
  game = game_lib.make_game(
    POT, game_lib.lossless_buckets(DECK, BOARD), rules=RULES, deck=DECK, board_cards=BOARD
  )
  return game, deep.nodes_of(tree_lib.build_tree(POT, RULES, 2), BOARD)


@functools.cache
def tiny():
  """The short-deck game (blinds 1/2, 12 chips, 4x2 deck, preflop and flop), its rows and every deal."""
  tree = tree_lib.build_tree(POT, RULES, 2)
  hole, board = (jnp.asarray(x) for x in game_lib.all_deals(DECK, BOARD))
  return exact_game(), deep.nodes_of(tree, BOARD), hole, board


def test_the_split_first_layer_is_the_network_on_the_features():
  game, nodes = small_game()
  params = tuple(
    jax.tree.map(
      lambda x, k=k: x + 0.1 * jax.random.normal(k, x.shape, jnp.float32),
      deep_cfr.mlp_init(k, (420, 16, 8, game.num_actions)),
    )  # fmt: skip
    for k in jax.random.split(jax.random.key(0))
  )
  hole, board = game_lib.deal(game, jax.random.key(1), 9)

  def both(params, hole, board):  # compiled: op by op, the same arithmetic is far slower
    split = deep.network_outputs(game, nodes, params, hole, board)  # [D, B, A]
    rows = jnp.arange(game.num_decisions)
    x = deep.row_features(game, nodes, rows[:, None], jnp.moveaxis(hole, 1, 0)[game.player], board[None])
    direct = jnp.where((game.player == 0)[:, None, None], deep_cfr.mlp_apply(params[0], x),
                       deep_cfr.mlp_apply(params[1], x))  # fmt: skip
    return split, direct

  split, direct = jax.jit(both)(params, hole, board)
  np.testing.assert_allclose(split, direct, rtol=1e-5, atol=1e-5)
  assert float(jnp.abs(direct).max()) > 0.1


def test_reservoir_keys_rebuild_the_features_of_their_row_and_cards():
  game, _ = small_game()
  hole, board = game_lib.deal(game, jax.random.key(2), 5)
  keys = deep.deal_keys(game, hole, board)  # [D, B, 8]
  acting = np.asarray(hole)[:, np.asarray(game.player)]  # [B, D, 2]
  assert np.array_equal(keys[..., 1:3], np.moveaxis(acting, 0, 1))
  assert np.array_equal(
    keys[..., 0], np.broadcast_to(np.arange(game.num_decisions)[:, None], (game.num_decisions, 5))
  )
  assert np.array_equal(keys[0, :, 3:6], np.asarray(board))


def exploitability(game, nodes, solver, state, hole, board) -> float:
  table = deep.tabulate(game, nodes, jax.jit(solver.average_policy)(state, game), hole, board)
  return float(game.evaluate_profile(table)[0]) / 2


@pytest.mark.slow
def test_deep_cfr_lowers_the_exact_exploitability():
  """On the short-deck game, Deep CFR's strategy network after 120 updates is far less exploitable
  (exactly, on the history-compiled twin) than the uniform policy, and than after 10 updates."""
  game, nodes, hole, board = tiny()
  legal = game.legal_mask
  uniform = jnp.broadcast_to((legal / legal.sum(-1, keepdims=True))[:, None, :],
                             (game.num_decisions, game.max_buckets, game.num_actions))  # fmt: skip
  start = float(game.evaluate_profile(uniform)[0]) / 2
  solver = deep.deep_blueprint_solver(nodes, **TINY)
  run = jax.jit(lambda state, n: jaxcfr.protocol.run(solver, state, game, n))
  state = run(solver.init(game, jax.random.key(0)), 10)
  early = exploitability(game, nodes, solver, state, hole, board)
  state = run(state, 110)
  late = exploitability(game, nodes, solver, state, hole, board)
  assert late < 0.6 * start and late < early, (start, early, late)


@pytest.mark.slow
def test_checkpoints_resume_bit_identically(tmp_path):
  game, nodes = small_game()
  solver = deep.deep_blueprint_solver(nodes, **{**TINY, 'strategy_steps': 5})
  straight = jaxcfr.train(game, solver, key=4, iterations=6, evaluate=False)
  directory = str(tmp_path / 'run')
  jaxcfr.train(
    game, solver, key=4, iterations=3, evaluate=False, checkpoint_dir=directory, checkpoint_every=3
  )
  resumed = jaxcfr.train(
    game, solver, key=4, iterations=6, evaluate=False, checkpoint_dir=directory, resume=True
  )
  assert resumed.resumed_from == 3
  for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state), strict=True):
    if jnp.issubdtype(a.dtype, jnp.number):
      np.testing.assert_array_equal(a, b)
  for a, b in zip(jax.tree.leaves(straight.policy), jax.tree.leaves(resumed.policy), strict=True):
    np.testing.assert_array_equal(a, b)
  assert int(straight.state.advantage_buffers[0].seen) > 0


def test_hyperparameters_are_checked():
  nodes = small_game()[1]
  with pytest.raises(ValueError, match='unknown Deep CFR hyper-parameters: batch_size'):
    deep.deep_blueprint_solver(nodes, batch_size=3)
  with pytest.raises(ValueError, match="must be a number on hold'em"):
    deep.deep_blueprint_solver(nodes, advantage_batch_size=None)


def test_defaults_grow_on_an_accelerator(monkeypatch):
  """The CPU's sizes on a CPU; on a GPU or TPU more traversals, wider networks, larger minibatches,
  and what the caller passes still wins."""
  cpu, gpu = deep.default_hyperparameters('cpu'), deep.default_hyperparameters('gpu')
  assert cpu == defaults.DEEP_BLUEPRINT and deep.default_hyperparameters('tpu') == gpu
  assert gpu['traversals'] > cpu['traversals'] and gpu['advantage_batch_size'] > cpu['advantage_batch_size']
  assert min(gpu['advantage_layers']) > max(cpu['advantage_layers'])
  nodes = small_game()[1]
  assert deep.deep_blueprint_solver(nodes).hyperparameters['traversals'] == cpu['traversals']
  monkeypatch.setattr(jax, 'default_backend', lambda: 'gpu')
  on_gpu = deep.deep_blueprint_solver(nodes, advantage_steps=3).hyperparameters
  assert on_gpu['traversals'] == gpu['traversals'] and on_gpu['advantage_layers'] == gpu['advantage_layers']
  assert on_gpu['advantage_steps'] == 3


_FLAGS = (
  *('--traversals', '8', '--advantage-layers', '16', '--strategy-layers', '16', '--advantage-steps', '2'),
  *('--strategy-steps', '10', '--memory', '4000', '--strategy-memory', '4000'),
  *('--advantage-batch-size', '64', '--strategy-batch-size', '64'),
)


def train(tmp_path, *extra):
  out = tmp_path / 'deep.npz'
  args = ('blueprint', 'train', '--algorithm', 'deep-cfr', '--iterations', '2', *_FLAGS, '--out', str(out))
  return (*run_cli(*args, *extra), out)


@pytest.mark.slow
def test_train_writes_a_network_blueprint_that_plays(tmp_path):
  checkpoint = tmp_path / 'run'
  code, out, err, path = train(tmp_path, '--checkpoint', str(checkpoint), '--json', str(tmp_path / 'r.json'))
  assert code == 0, err
  assert 'bets small (3,746 nodes, 1,496 decision nodes), Deep CFR, 420 features' in out
  report = json.loads((tmp_path / 'r.json').read_text())
  assert report['iterations'] == 2 and report['traversals'] == 2 * 2 * 8 and report['algorithm'] == 'deep-cfr'
  metadata = files.read_metadata(str(path))
  assert metadata['format'] == files.NETWORK_FORMAT and metadata['features'] == {
    'layout': 'jaxcfr.poker.features', 'size': 420, 'history': True
  }  # fmt: skip
  bot = policy.load_policy(str(path))
  assert isinstance(bot, policy.NetworkPolicy)
  state = nlhe.deal(0, 64)
  actions, probabilities = bot.strategy(state, state.hole[np.arange(64), state.to_act][:, None])
  match.check_strategy(bot, actions, probabilities, 64)
  assert nlhe.is_legal(state, actions.kind[:, 1], actions.amount[:, 1]).all()
  # A range query (LBR's): every hole pair for the first hands.
  _, everything = bot.strategy(nlhe.take(state, slice(0, 3)), np.broadcast_to(HOLES, (3, len(HOLES), 2)))
  assert everything.shape[:2] == (3, 1326)
  np.testing.assert_allclose(everything.sum(-1), 1, atol=1e-5)
  result = match.play_match(bot, bots.resolve_policy('always-call'), hands=200, seed=3, batch=100)
  assert np.isfinite(result.mbb_per_hand)
  # Resuming to 3 iterations continues the checkpoint; flags of the other algorithm are refused.
  resume = ('--checkpoint', str(checkpoint), '--resume', '--force')
  code, out, err, _ = train(tmp_path, *resume, '--iterations', '3')
  assert code == 0, err
  assert 'resumed from' in out and files.read_metadata(str(path))['iterations'] == 3


@pytest.mark.parametrize(
  'extra, message',
  [
    (('--abstraction', '/nonexistent'), '--abstraction does not apply to --algorithm deep-cfr'),
    (('--batch-size', '8'), '--batch-size does not apply to --algorithm deep-cfr'),
    (('--devices', '2'), 'runs on one device in float32'),
    (('--advantage-batch-size', 'all'), "must be a number on hold'em"),
  ],
)
def test_bad_input_is_one_line(tmp_path, extra, message):
  code, out, err, path = train(tmp_path, *extra)
  assert code == 2 and message in err and 'Traceback' not in err, err
  assert not path.exists()


def test_table_algorithms_need_their_tables_and_refuse_deep_flags(tmp_path):
  out = str(tmp_path / 'b.npz')
  code, _, err = run_cli('blueprint', 'train', '--iterations', '1', '--out', out)  # pcs, the default
  assert code == 2 and '--algorithm pcs needs --abstraction DIR' in err
  code, _, err = run_cli('blueprint', 'train', '--iterations', '1', '--traversals', '4', '--out', out)
  assert code == 2 and '--traversals does not apply to --algorithm pcs' in err
  tabular = ('blueprint', 'train', '--algorithm', 'tabular', '--iterations', '1')
  code, _, err = run_cli(*tabular, '--out', out)
  assert code == 2 and '--algorithm tabular needs --abstraction DIR' in err
  code, _, err = run_cli(*tabular, '--traversals', '4', '--out', out)
  assert code == 2 and '--traversals does not apply to --algorithm tabular' in err


@pytest.mark.slow  # the default suite's 10 minutes
def test_without_evaluation_the_costly_policy_is_produced_only_at_the_ends():
  """`jaxcfr.train(evaluate=False, seconds=...)` trains the strategy networks once to time them and at
  the end for the result, not at every tenth of the budget (nothing would judge them)."""
  game, nodes = small_game()
  solver = deep.deep_blueprint_solver(nodes, **{**TINY, 'strategy_steps': 2, 'advantage_steps': 2})
  calls = []

  def counted(state, game):
    io_callback(lambda t: calls.append(int(t)), None, state.iteration, ordered=True)  # once per execution
    return solver.average_policy(state, game)

  result = jaxcfr.train(game, dataclasses.replace(solver, average_policy=counted), seconds=3, evaluate=False)
  # Once at iteration 0 (timed, to keep room for the last), then only at the end (the loop may run a few
  # more iterations when the last one is quicker than its reservation).
  assert result.iterations > 10 and calls[0] == 0 and calls[-1] == result.iterations
  assert len(calls) <= 3 and all(t >= 0.9 * result.iterations for t in calls[1:]), calls


def sd_exploitability(game, nodes, snapshots, hole, board) -> float:
  """Exact exploitability of SD-CFR's average: each player's networks mixed by weight x own reach
  (`solvers.player_regrets`' reach-weighted policy on the twin), as playing one sampled network a hand."""
  twin = game.twin.game
  total = jnp.zeros(twin.legal_mask.shape, twin.dtype)
  for p, buffer in enumerate(snapshots):
    size = (420, *TINY['advantage_layers'], game.num_actions)
    params, weights = deep.unravel_snapshots(buffer, size)
    for k, w in enumerate(weights):
      network = jax.tree.map(lambda x, k=k: jnp.asarray(x[k]), params)
      table = deep.tabulate(game, nodes, (network, network), hole, board, advantages=True)
      _, reach_policy = solvers.player_regrets(twin, game_lib.twin_policy_of(game, table), p)
      total = total + jnp.where((twin.infoset_player == p)[:, None], w * reach_policy, 0)
  policy = solvers.normalize_policy(total, twin.legal_mask)
  values = evaluation.expected_values(twin, policy)
  return float((evaluation.best_response_values(twin, policy) - values).sum()) / 2


@pytest.mark.slow
def test_sd_cfr_lowers_the_exact_exploitability():
  """SD-CFR's reservoir of advantage networks, mixed as SD-CFR plays it, is far less exploitable than
  uniform play after 120 updates; its snapshots are a uniform sample of the iterations."""
  game, nodes, hole, board = tiny()
  solver = deep.deep_blueprint_solver(nodes, single=True, snapshots=12, **without_strategy(TINY))
  run = jax.jit(lambda state, n: jaxcfr.protocol.run(solver, state, game, n))
  state = run(solver.init(game, jax.random.key(0)), 120)
  snapshots = jax.jit(solver.average_policy)(state, game)
  for buffer in snapshots:
    assert int(buffer.seen) == 120 and np.array_equal(buffer.weight, buffer.infoset.astype(np.float32))
    assert len(set(np.asarray(buffer.infoset).tolist())) == 12 and int(buffer.infoset.max()) > 60
  legal = game.legal_mask
  uniform = jnp.broadcast_to((legal / legal.sum(-1, keepdims=True))[:, None, :],
                             (game.num_decisions, game.max_buckets, game.num_actions))  # fmt: skip
  start = float(game.evaluate_profile(uniform)[0]) / 2
  late = sd_exploitability(game, nodes, snapshots, hole, board)
  assert late < 0.6 * start, (start, late)


def without_strategy(config):
  return {k: v for k, v in config.items() if not k.startswith('strategy_')}


@pytest.mark.slow
def test_sd_cfr_file_plays_one_network_a_hand(tmp_path):
  out = tmp_path / 'sd.npz'
  flags = [f for f in _FLAGS]
  for flag in ('--strategy-layers', '--strategy-steps', '--strategy-memory', '--strategy-batch-size'):
    i = flags.index(flag)
    del flags[i : i + 2]
  code, _, err = run_cli(
    'blueprint',
    'train',
    '--algorithm',
    'sd-cfr',
    '--iterations',
    '3',
    '--snapshots',
    '2',
    *flags,
    '--out',
    str(out),
  )
  assert code == 0, err
  bot = policy.load_policy(str(out))
  assert [len(w) for w in bot.weights] == [2, 2]
  state = nlhe.deal(1, 256)
  chosen = bot.snapshot(state)
  assert np.array_equal(chosen, bot.snapshot(state)) and set(chosen.ravel().tolist()) == {0, 1}
  actions, probabilities = bot.strategy(state, state.hole[np.arange(256), state.to_act][:, None])
  match.check_strategy(bot, actions, probabilities, 256)
  result = match.play_match(bot, bots.resolve_policy('random'), hands=100, seed=1, batch=100)
  assert np.isfinite(result.mbb_per_hand)
  other = str(tmp_path / 'other.npz')
  extra = ('--iterations', '1', '--strategy-steps', '3', '--out', other)
  code, _, err = run_cli('blueprint', 'train', '--algorithm', 'sd-cfr', *extra)
  assert code == 2 and '--strategy-steps does not apply to --algorithm sd-cfr' in err
