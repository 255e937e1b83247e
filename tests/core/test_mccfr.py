"""Sampled MCCFR: unbiased regrets, convergence with and without Pluribus's
refinements, devices, determinism, resume, and the command line."""

import functools
import json
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runner import run_cli
from conftest import compiled, host_devices_env

import jaxcfr
from jaxcfr import checkpoints, mccfr, solvers


def random_policy(game, seed):
  regret = jax.random.normal(jax.random.key(seed), game.legal_mask.shape, game.dtype)
  return solvers.regret_matching(regret, game.legal_mask)


@functools.cache
def jitted_run(solver):
  return jax.jit(lambda state, game, n: jaxcfr.run(solver, state, game, n))


def solve(solver, game, iterations, seed=0):
  return jitted_run(solver)(solver.init(game, jax.random.key(seed)), game, iterations)


def exploitability(game, state):
  return float(jaxcfr.exploitability(game, mccfr.average_policy(state, game)))


@pytest.mark.parametrize('scheme', ['external', 'outcome'])
@pytest.mark.parametrize('player', [0, 1])
def test_sampled_regrets_are_unbiased(scheme, player):
  """The batch mean of sampled regrets matches the full-width counterfactual regret
  within five standard errors, on every (infoset, action) of Kuhn."""
  game = compiled('kuhn')
  policy = random_policy(game, 3)
  exact, _ = jax.jit(solvers.player_regrets, static_argnums=2)(game, policy, player)
  batch, repeats = 4000, 25
  sample = jax.jit(
    lambda key: mccfr.sample_regrets(game, policy, key, player, batch, scheme=scheme)[0] / batch
  )
  means = np.stack([np.asarray(sample(key)) for key in jax.random.split(jax.random.key(11), repeats)])
  mean, error = means.mean(0), means.std(0, ddof=1) / np.sqrt(repeats)
  legal = np.asarray(game.legal_mask) & (np.asarray(game.infoset_player) == player)[:, None]
  assert np.all(np.abs(mean - np.asarray(exact))[legal] <= 5 * error[legal] + 1e-9)
  assert np.all(mean[~legal] == 0)
  assert np.abs(np.asarray(exact))[legal].max() > 0.05  # the check compares something


@pytest.mark.parametrize(
  'factory,spec,iterations,bound',
  [
    (functools.partial(mccfr.es_mccfr, batch_size=256, linear_until=0), 'kuhn', 400, 5e-3),
    (functools.partial(mccfr.os_mccfr, batch_size=256, linear_until=0), 'kuhn', 400, 2e-2),
    pytest.param(  # ES on Leduc converges by default in test_pruning_and_linear_weighting_keep_convergence
      functools.partial(mccfr.es_mccfr, batch_size=512, linear_until=10**9),
      'leduc',
      300,
      8e-2,
      marks=pytest.mark.slow,
    ),
    pytest.param(  # seed 0 stood at 0.40003 after 300 (seeds 1, 2: 0.32); after 1000 all three ~0.18
      functools.partial(mccfr.os_mccfr, batch_size=512, linear_until=10**9),
      'leduc',
      1000,
      0.25,
      marks=pytest.mark.slow,
    ),
  ],
)
def test_samplers_converge(factory, spec, iterations, bound):
  game = compiled(spec, 'float32')
  solver = factory()
  early = exploitability(game, solve(solver, game, iterations // 10))
  late = exploitability(game, solve(solver, game, iterations))
  assert late < bound and late < early / 2


def test_outcome_sampling_with_linear_weighting_converges_on_kuhn():
  """The default OS-MCCFR (linear weighting) with seed 0: at update 10 an opponent's zero-probability
  action was sampled (a uniform draw of exactly 0), its sample probability 0 made that traversal's
  regret NaN and average increment inf, and the poisoned infoset stayed uniform, stalling near 0.042."""
  game = compiled('kuhn', 'float32')
  state = solve(mccfr.os_mccfr(batch_size=1024), game, 1000)
  assert np.all(np.isfinite(state.cumulative_regret)) and np.all(np.isfinite(state.cumulative_policy))
  assert exploitability(game, state) < 5e-3


def test_inverse_cdf_never_draws_a_zero_probability_slot():
  """A draw of exactly 0 skips leading zero-probability slots, a draw above a total that rounded below 1
  takes the last slot of positive probability, and slots that are not allowed are never drawn."""
  probs = jnp.asarray([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.3, 0.3, 0.3], [0.25, 0.75, 0.5]], jnp.float32)
  allowed = jnp.asarray([[True] * 3] * 3 + [[True, True, False]])
  inverse_cdf = jax.jit(mccfr._inverse_cdf)

  def slots(draw):
    return np.asarray(inverse_cdf(probs, allowed, jnp.full(4, draw, jnp.float32))).tolist()

  assert slots(0.0) == [1, 0, 0, 0]
  assert slots(0.45) == [1, 0, 1, 1]
  assert slots(0.5) == [1, 2, 1, 1]
  assert slots(1 - 2**-23) == [1, 2, 2, 1]  # the largest float32 draw; 0.3 * 3 rounds below it


@pytest.mark.slow  # the default suite's minutes; test_pruning_skips_hopeless_actions runs by default
def test_pruning_and_linear_weighting_keep_convergence():
  game = compiled('leduc', 'float32')
  refinements = dict(linear_until=100, discount_interval=10, prune_threshold=-2000.0, prune_after=50)
  solver = mccfr.es_mccfr(batch_size=512, regret_floor=-1e5, **refinements)
  early = solve(solver, game, 60)
  late = jitted_run(solver)(early, game, 240)  # 300 in all (resuming equals an uninterrupted run: tested)
  assert exploitability(game, late) < min(exploitability(game, early) / 2, 0.1)
  assert float(jnp.min(late.cumulative_regret)) >= -1e5  # the floor holds


def test_pruning_skips_hopeless_actions():
  """With every traversal pruned, raising (regret -100, below the threshold) gets no
  regret update at player 0's first-round infosets, and calling (the best) does."""
  game = compiled('leduc', 'float32')
  regret = jnp.zeros(game.legal_mask.shape, game.dtype).at[:, 2].set(-100.0)
  policy = solvers.regret_matching(regret, game.legal_mask)
  kwargs = dict(scheme='external', exploration=0.0, prune_probability=1.0, no_prune_depths=())
  traverse = jax.jit(
    lambda prune: mccfr._traversals(
      game, policy, regret, jax.random.key(0), 0, 256, prune=prune, threshold=jnp.asarray(-1.0), **kwargs
    )
  )
  (pruned, _), (unpruned, _) = traverse(jnp.asarray(True)), traverse(jnp.asarray(False))
  first_round = np.zeros(game.num_infosets, bool)  # depths before the public card
  first_round[game.infoset_offsets[2] : game.infoset_offsets[4]] = True
  own = first_round & (np.asarray(game.infoset_player) == 0) & np.asarray(game.legal_mask[:, 2])
  assert own.sum() > 0
  assert np.all(np.asarray(pruned)[own, 2] == 0) and np.any(np.asarray(unpruned)[own, 2] != 0)
  assert np.any(np.asarray(pruned)[own, 1] != 0)


def test_deterministic_given_a_seed():
  game = compiled('kuhn', 'float32')
  solver = mccfr.es_mccfr(batch_size=64)
  a, b, c = solve(solver, game, 20, seed=1), solve(solver, game, 20, seed=1), solve(solver, game, 20, seed=2)
  np.testing.assert_array_equal(a.cumulative_regret, b.cumulative_regret)
  assert not np.array_equal(a.cumulative_regret, c.cumulative_regret)


@pytest.mark.parametrize('factory', [mccfr.es_mccfr, mccfr.os_mccfr])
def test_200_plus_200_resumed_iterations_equal_400(factory, tmp_path):
  game = compiled('kuhn', 'float32')
  solver = factory(batch_size=32)
  straight = solve(solver, game, 400)
  checkpointer = checkpoints.Checkpointer(str(tmp_path / 'ck'))
  checkpointer.save(200, solve(solver, game, 200), {'algorithm': 'mccfr'}, {'iteration': 200}, 'test')
  like = solver.init(game, jax.random.key(99))
  restored, _ = checkpointer.restore(like, {'algorithm': 'mccfr'})
  resumed = jitted_run(solver)(restored, game, 200)
  np.testing.assert_array_equal(jax.random.key_data(resumed.key), jax.random.key_data(straight.key))
  for name in ('iteration', 'cumulative_regret', 'cumulative_policy'):
    np.testing.assert_array_equal(getattr(resumed, name), getattr(straight, name))


@pytest.mark.slow  # by default sharded MCCFR is checked exactly by test_blueprint.py (two devices)
def test_four_host_devices_match_one_within_noise_and_repeat_exactly():
  """In a subprocess with four forced CPU devices: the batch is split four ways."""
  script = textwrap.dedent(
    """
    import json, jax, numpy as np
    from jaxcfr import compile_game, exploitability, mccfr, run
    game = compile_game('kuhn')
    out = {}
    for devices in (1, 4, 4):
      solver = mccfr.es_mccfr(batch_size=64, devices=devices, linear_until=0)
      state = run(solver, solver.init(game, jax.random.key(0)), game, 100)  # op by op: no long compile
      policy = mccfr.average_policy(state, game)
      out.setdefault(devices, []).append([float(exploitability(game, policy)), np.asarray(policy).tolist()])
    print(json.dumps({'count': jax.device_count(), 'runs': {str(k): v for k, v in out.items()}}))
    """
  )
  env = host_devices_env(4)
  process = subprocess.run(
    [sys.executable, '-c', script], capture_output=True, text=True, env=env, timeout=600
  )
  assert process.returncode == 0, process.stderr
  result = json.loads(process.stdout)
  assert result['count'] == 4
  (one,), (four, again) = result['runs']['1'], result['runs']['4']
  assert four == again  # same seed, same device count: identical
  assert four[1] != one[1]  # four streams, not one
  assert abs(four[0] - one[0]) < 0.35 * max(four[0], one[0])  # same quality within sampling noise


def test_cli_solves_with_mccfr():
  code, out, err = run_cli(
    'solve', 'kuhn', '--algorithm', 'es-mccfr', '--iterations', '300', '--batch-size', '128', '--json', '-'
  )
  assert code == 0, err
  result = json.loads(out)
  assert result['devices'] == 1 and result['batch_size'] == 128
  assert result['trajectories'] == 300 * 128 * 2
  assert result['hyperparameters']['batch_size'] == 128
  assert result['exploitability'] < 0.01 and abs(result['game_value'] + 1 / 18) < 0.01


def test_cli_splits_over_devices():
  code, out, err = run_cli(
    'solve', 'kuhn', '--algorithm', 'os-mccfr', '--iterations', '50', '--batch-size', '64', '--devices', '2',
    '--json', '-',
  )  # fmt: skip
  assert code == 0, err
  assert json.loads(out)['devices'] == 2


@pytest.mark.parametrize(
  'args,message',
  [
    (['--algorithm', 'es-mccfr', '--devices', '3', '--batch-size', '100'], 'multiple of the device count'),
    (['--algorithm', 'os-mccfr', '--exploration', '0'], 'exploration'),
    (['--algorithm', 'os-mccfr', '--prune-threshold', '-5'], '--prune-threshold does not apply to os-mccfr'),
    (['--algorithm', 'es-mccfr', '--prune-probability', '2'], 'prune_probability'),
    (['--algorithm', 'es-mccfr', '--batch-size', '0'], 'positive integer'),
    (['--algorithm', 'es-mccfr', '--simultaneous'], '--simultaneous does not apply to es-mccfr'),
  ],
)
def test_bad_mccfr_input(args, message):
  code, out, err = run_cli('solve', 'kuhn', *args)
  assert code == 2 and message in err and 'Traceback' not in err and out == ''


@pytest.mark.parametrize('spec', ['kuhn', 'leduc', 'kuhn(players=3)'])
def test_sampled_widths_match_a_recursive_count(spec):
  """`CompiledGame.sampled_widths` (the compiler's segment reductions, one traverser at a time)
  against a recursion over the game's states: the most depth-t histories one external-sampling
  traversal for p visits, all of p's actions taken and one of any other actor's or chance's."""
  game = compiled(spec)

  def visits(state, depth, traverser):  # [D]: the most histories visited at each depth
    counts = np.zeros(game.num_depths, np.int64)
    counts[depth] = 1
    if state.is_terminal():
      return counts
    chance = state.is_chance_node()
    actions = [action for action, _ in state.chance_outcomes()] if chance else state.legal_actions()
    below = np.stack([visits(state.child(action), depth + 1, traverser) for action in actions])
    mine = not chance and state.current_player() == traverser
    return counts + (below.sum(0) if mine else below.max(0))

  root = jaxcfr.load_game(spec).new_initial_state()
  expected = [tuple(np.maximum(visits(root, 0, p), 1).tolist()) for p in range(game.num_players)]
  assert game.sampled_widths == tuple(expected)
  assert max(max(widths) for widths in expected) > 1  # some depth holds several histories
