"""The hold'em blueprint: the abstract betting tree against a brute-force walk of the scalar rules,
the sampled traversal against full-width counterfactual regrets of the history-compiled twin, and the
trainer on a short-deck game whose exact value OpenSpiel's universal_poker gives."""

import functools
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import host_devices_env, import_paths

import jaxcfr
from abstractions import BetAbstraction, NoLimitRules, apply_action, initial_state, legal_actions
from jaxcfr import solvers
from jaxcfr.poker.blueprint import game as game_lib
from jaxcfr.poker.blueprint import mccfr
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.rules.cards import Deck

# A short-deck game small enough for exact solvers: blinds 1/2, 12 chips, fold / call / pot raise /
# all-in with no cap but the stacks (universal_poker's fcpa), preflop and a 3-card flop.
RULES = NoLimitRules(1, 2, 12)
POT = BetAbstraction((((1.0,),),) * 4, raise_cap=10)
DECK = Deck(4, 2)
BOARD = (0, 3)


@functools.cache
def exact_game():
  return game_lib.make_game(POT, game_lib.lossless_buckets(DECK, BOARD), rules=RULES, deck=DECK,
                            board_cards=BOARD, exact=True)  # fmt: skip


@functools.cache
def every_deal():
  """Every deal of the short deck, each once: (buckets [M, 2, S], outcome [M])."""
  hole, board = (jnp.asarray(x) for x in game_lib.all_deals(DECK, BOARD))
  return game_lib.deal_buckets(exact_game(), hole, board), game_lib.showdown(hole, board)


# The tree.


def brute_force(bets, rules, num_streets):
  """Every betting history by recursion over `abstractions.betting`: {actions: state}."""
  histories = {}

  def walk(state, path):
    histories[path] = state
    if state.finished or state.street >= num_streets:
      return
    for action in legal_actions(state, bets):
      walk(apply_action(state, action), (*path, action))

  walk(initial_state(rules), ())
  return histories


def tree_paths(tree):
  """Each node's action history, read from the tree's parent links and action slots."""
  paths = [()]
  for node in range(1, tree.num_nodes):
    parent = tree.parent[node]
    assert parent < node  # depth-major: parents come first
    paths.append((*paths[parent], tree.actions(tree.decision[parent])[tree.parent_slot[node]]))
  return paths


@pytest.mark.parametrize(
  'bets,rules,streets',
  [
    ('small', tree_lib.ACPC, 4),
    (POT, RULES, 2),
    (POT, RULES, 1),
    (BetAbstraction((((0.5, 2.0),),) * 4, raise_cap=(2, 1, 0, 3)), NoLimitRules(50, 100, 1000), 4),
    (BetAbstraction((((0.5, 2.0),),) * 4, raise_cap=(2, 1, 0, 3)), NoLimitRules(50, 100, 1000, ante=20), 4),
  ],
)
def test_the_tree_is_every_history_of_the_rules(bets, rules, streets):
  tree = tree_lib.build_tree(bets, rules, streets)
  bets = tree_lib.preset(bets) if isinstance(bets, str) else bets
  histories = brute_force(bets, rules, streets)
  paths = tree_paths(tree)
  assert len(paths) == tree.num_nodes == len(histories) and set(paths) == set(histories)
  for node, path in enumerate(paths):
    state = histories[path]
    terminal = state.finished or state.street >= streets
    assert tree.terminal[node] == terminal
    assert tuple(tree.committed[node]) == state.committed
    assert tree.folded[node] == (-1 if state.folded is None else state.folded)
    if terminal:
      assert (tree.children[node] == -1).all() and tree.decision[node] == -1
      continue
    row = tree.decision[node]
    actions = legal_actions(state, bets)
    assert tree.player[node] == state.to_act and tree.street[node] == state.street
    assert tree.legal[row].sum() == len(actions) == (tree.children[node] >= 0).sum()
    kinds = {'fold': 0, 'check': 1, 'call': 1, 'bet': 2}
    assert [(tree.kind[row, a], tree.amount[row, a]) for a in range(len(actions))] == [
      (kinds[a.kind], a.amount) for a in actions
    ]
  # Depth-major, decisions before terminals within a depth; rows in node order.
  for d in range(tree.num_depths):
    nodes = np.arange(tree.depth_offsets[d], tree.depth_offsets[d + 1])
    assert (~tree.terminal[nodes[: tree.depth_decisions[d]]]).all()
    assert tree.terminal[nodes[tree.depth_decisions[d] :]].all()
  np.testing.assert_array_equal(tree.decisions, np.flatnonzero(~tree.terminal))


def test_presets_keep_the_brief_sizes():
  small = tree_lib.build_tree('small')
  # 2.5x open = pot fraction 0.75 of the pot after calling; 3x re-raise = 1.0.
  root = small.decisions[0]
  assert [(a.kind, a.amount) for a in small.actions(0)] == [('fold', 0), ('call', 100), ('bet', 250),
                                                             ('bet', 20_000)]  # fmt: skip
  reraise = small.children[root, 2]
  assert [a.amount for a in small.actions(small.decision[reraise]) if a.kind == 'bet'] == [750, 20_000]
  counts = small.counts()
  assert counts['nodes'] == len(brute_force(small.bets, tree_lib.ACPC, 4))
  assert counts['decision_nodes'] == small.num_decisions < 2_000
  default_flop = tree_lib.PRESETS['default'].sizes(1, 0)
  assert default_flop == (0.33, 0.75, 1.5) and tree_lib.PRESETS['default'].all_in
  # Short stacks: a 2x open (0.5 of the pot after calling) or all-in at 25 bb; a third of the pot on the flop.
  short = tree_lib.build_tree('short', NoLimitRules(50, 100, 2_500))
  assert [(a.kind, a.amount) for a in short.actions(0)] == [('fold', 0), ('call', 100), ('bet', 200),
                                                             ('bet', 2_500)]  # fmt: skip
  assert tree_lib.PRESETS['short'].sizes(1, 0) == (0.33,) and tree_lib.PRESETS['short'].sizes(0, 1) == (1.0,)


@pytest.mark.slow
def test_the_default_preset_tree_against_the_walk():
  tree = tree_lib.build_tree('default')
  assert tree.num_nodes == len(brute_force(tree.bets, tree_lib.ACPC, 4))
  assert tree.counts()['decision_nodes_per_street']['preflop'] == 18  # open, 3-, 4-, 5-bet (cap 4)


@pytest.mark.parametrize('rules', [RULES, NoLimitRules(1, 2, 12, ante=1)], ids=['no-ante', 'ante'])
def test_terminal_payoffs_are_zero_sum_chips(rules):
  tree = tree_lib.build_tree(POT, rules, 2)
  assert tuple(tree.committed[0]) == (rules.ante + 1, rules.ante + 2)  # antes are in the pot, dead
  fold, stake = tree_lib.utility(tree)
  for node in np.flatnonzero(tree.terminal):
    state = tree.states[node]
    if state.folded is not None:  # the folder loses what it put in
      assert fold[node] == (-1 if state.folded == 0 else 1) * state.committed[state.folded]
      assert stake[node] == 0
    else:  # the showdown's winner gets the loser's chips (equal stakes)
      assert fold[node] == 0 and stake[node] == state.committed[0] == state.committed[1]
  assert (fold[~tree.terminal] == 0).all() and (stake[~tree.terminal] == 0).all()


def test_raise_caps_per_street():
  bets = BetAbstraction((((1.0,),),) * 4, raise_cap=(0, 1, 2, 3))
  assert [bets.cap(s) for s in range(4)] == [0, 1, 2, 3]
  state = initial_state(NoLimitRules())
  assert [a.kind for a in legal_actions(state, bets)] == ['fold', 'call']  # no preflop raise at cap 0
  with pytest.raises(ValueError, match='raise_cap'):
    BetAbstraction(raise_cap=(1, 2))


# Buckets and deals.


def test_lossless_buckets_tell_every_deal_apart():
  buckets = np.asarray(every_deal()[0])
  hole, board = game_lib.all_deals(DECK, BOARD)
  sizes = game_lib.lossless_buckets(DECK, BOARD).buckets
  for street, shown in enumerate((0, 3)):
    keys = {}
    for m in range(len(hole)):
      for p in (0, 1):
        seen = (tuple(sorted(hole[m, p])), tuple(sorted(board[m, :shown])))
        bucket = int(buckets[m, p, street])
        assert 0 <= bucket < sizes[street]
        assert keys.setdefault(bucket, seen) == seen  # one bucket, one (hole, board seen)
    assert len(keys) == {0: 28, 1: 28 * 20}[street]


def test_sampled_deals_are_distinct_cards_of_the_deck():
  game = exact_game()
  hole, board = game_lib.deal(game, jax.random.key(1), 2000)
  cards = np.concatenate([np.asarray(hole).reshape(2000, 4), np.asarray(board)], 1)
  assert all(len(set(row)) == 7 for row in cards)
  assert set(cards.ravel()) == set(DECK.cards.tolist())


# The traversal.


def pure_regrets(game, seed):
  """Regrets whose regret matching plays one random legal action everywhere: [D, K, A]."""
  legal = np.asarray(game.legal_mask)[:, None, :]
  scores = np.where(
    legal, np.random.default_rng(seed).random((*legal.shape[:1], game.max_buckets, legal.shape[2])), -1
  )
  return jnp.asarray(np.where(scores == scores.max(-1, keepdims=True), 1.0, -1.0), jnp.float32)


@pytest.mark.parametrize('player', [0, 1])
def test_traversing_every_deal_gives_the_full_width_regrets(player):
  """Against a pure opponent, traversals of every deal once are exactly the twin's counterfactual
  regrets (times the number of deals) and the opponent's reach-weighted strategy."""
  game = exact_game()
  buckets, outcome = every_deal()
  regret = pure_regrets(game, player)
  increments = jax.jit(mccfr.traverse, static_argnums=5)(
    game, regret, buckets, outcome, jax.random.key(0), player
  )
  policy = jax.jit(  # compiled, as below: op by op this test is far slower
    lambda r: game_lib.twin_policy_of(game, mccfr.current_policy(mccfr.BlueprintState(0, r, r, None), game))
  )(regret)
  twin = game.twin.game
  regrets_of = jax.jit(solvers.player_regrets, static_argnums=2)
  exact_regret, _ = regrets_of(twin, policy, player)
  _, exact_average = regrets_of(twin, policy, 1 - player)
  regret_rows, average_rows = (
    np.asarray(x.reshape(-1, game.num_actions)[game.twin.cell]) for x in increments
  )
  own = np.asarray(twin.infoset_player) == player
  np.testing.assert_allclose(regret_rows[own] / outcome.shape[0], exact_regret[own], atol=2e-6)
  np.testing.assert_allclose(average_rows[~own], exact_average[~own], atol=1e-4)
  assert np.abs(exact_regret[own]).max() > 0.05 and np.abs(exact_average[~own]).max() > 1
  # Nothing lands outside the twin's infosets or on the other player's.
  assert np.abs(regret_rows[~own]).max() == 0 and np.abs(average_rows[own]).max() == 0
  assert float(jnp.abs(increments[0]).sum()) == pytest.approx(np.abs(regret_rows).sum(), rel=1e-6)


def test_sampled_regrets_are_unbiased():
  """Against a mixed opponent, the mean of sampled traversals (deals and opponent actions sampled)
  matches the full-width regrets within five standard errors."""
  game = exact_game()
  rng = np.random.default_rng(3)
  shape = (game.num_decisions, game.max_buckets, game.num_actions)
  regret = jnp.asarray(rng.normal(size=shape), jnp.float32)
  policy = jax.jit(
    lambda r: game_lib.twin_policy_of(game, mccfr.current_policy(mccfr.BlueprintState(0, r, r, None), game))
  )(regret)
  exact, _ = jax.jit(solvers.player_regrets, static_argnums=2)(game.twin.game, policy, 0)
  batch = 4096

  @jax.jit
  def sample(key):
    deal_key, walk_key = jax.random.split(key)
    buckets, outcome = mccfr.sample_deals(game, deal_key, batch)
    increment = mccfr.traverse(game, regret, buckets, outcome, walk_key, 0)[0]
    return increment.reshape(-1, game.num_actions)[game.twin.cell] / batch

  means = np.stack([np.asarray(sample(k)) for k in jax.random.split(jax.random.key(5), 30)])
  mean, error = means.mean(0), means.std(0, ddof=1) / np.sqrt(len(means))
  own = (np.asarray(game.twin.game.infoset_player) == 0)[:, None] & np.asarray(game.twin.game.legal_mask)
  # Cells that the samples almost never reach (exact regrets, weighted by the deal's probability, of
  # a few 1e-4 chips) may read 0 in every sample: an absolute slack of 5e-4 lets them pass; more than
  # 2,000 cells have exact regrets above 1e-3, where the bound is mostly the standard errors.
  assert np.all(np.abs(mean - np.asarray(exact))[own] <= 5 * error[own] + 5e-4)
  assert (np.abs(np.asarray(exact))[own] > 1e-3).sum() > 2000


def test_pruning_skips_low_regret_actions_before_the_last_street():
  game = exact_game()
  buckets, outcome = every_deal()
  regret = pure_regrets(game, 7)  # every legal action but one at -1
  args = (game, regret, buckets, outcome, jax.random.key(0))
  walk = jax.jit(mccfr.traverse, static_argnames=('player', 'prune', 'prune_probability'))
  plain = walk(*args, player=0)[0]
  pruned = walk(*args, player=0, prune=True, prune_probability=1.0, threshold=0.0)[0]
  street = np.asarray(tree_lib.build_tree(POT, RULES, 2).street)[
    np.asarray(tree_lib.build_tree(POT, RULES, 2).decisions)
  ]
  low = np.asarray(regret) < 0
  preflop = (street == 0)[:, None, None] & np.asarray(game.legal_mask)[:, None, :]
  assert np.all(np.asarray(pruned)[preflop & low] == 0) and np.any(np.asarray(plain)[preflop & low] != 0)
  flop = (street == 1)[:, None, None]
  np.testing.assert_array_equal(np.asarray(pruned)[np.broadcast_to(flop, low.shape) & ~low],
                                np.asarray(plain)[np.broadcast_to(flop, low.shape) & ~low])  # fmt: skip


# Training.


@functools.cache
def trained():
  """The blueprint trainer on the exact game, its exact exploitability measured on the twin."""
  return jaxcfr.train(
    exact_game(), mccfr.blueprint_solver(batch_size=256), iterations=600, eval_at=[10, 100, 600]
  )


@functools.cache
def universal_poker():
  """The same game as OpenSpiel's universal_poker (fcpa), compiled: the oracle."""
  import blueprint_oracle  # noqa: PLC0415 (needs pyspiel)

  return jaxcfr.compile_game(blueprint_oracle.DealtGame(4, 2, BOARD, (1, 2), 12), dtype=jnp.float64)


@pytest.mark.slow  # the default suite's 10 minutes; the universal_poker oracle test stays
def test_training_converges_to_the_exact_game():
  """The blueprint trainer's exact exploitability (on the twin) falls towards 0."""
  result = trained()
  curve = [point['exploitability'] for point in result.curve]
  assert curve[0] > curve[1] > curve[2] and curve[2] < 0.1 * curve[0]
  policy = np.asarray(result.policy)
  np.testing.assert_allclose(policy.sum(-1), 1, atol=1e-5)
  assert np.all(policy[~np.broadcast_to(np.asarray(exact_game().legal_mask)[:, None, :], policy.shape)] == 0)


def test_the_exact_game_is_universal_poker_and_the_blueprint_nears_its_value():
  """Any policy has the same NashConv and values on our twin and on OpenSpiel's universal_poker
  (the same tree, deals, showdowns and infosets), the trained blueprint is as exploitable in the
  oracle as on the twin, and its value is within that of the oracle's game value."""
  pytest.importorskip('pyspiel')
  import blueprint_oracle  # noqa: PLC0415

  game, oracle = exact_game(), universal_poker()
  tree = tree_lib.build_tree(POT, RULES, 2)
  assert oracle.num_infosets == game.twin.game.num_infosets
  rng = np.random.default_rng(0)
  random = mccfr.current_policy(mccfr.BlueprintState(0, *[jnp.asarray(rng.normal(size=(game.num_decisions,
    game.max_buckets, game.num_actions)), jnp.float32)] * 2, None), game)  # fmt: skip
  for policy in (random, trained().policy):
    ours = jaxcfr.training.evaluate_profile(policy, game)
    mapped = blueprint_oracle.policy_on(
      oracle, tree, game.buckets, DECK.cards.tolist(), np.asarray(policy, np.float64)
    )
    theirs = jaxcfr.training.evaluate_profile(jnp.asarray(mapped), oracle)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-5)
  exact = jaxcfr.train(oracle, jaxcfr.make_solver('dcfr'), iterations=200, eval_at=[200])  # ~1e-4
  assert exact.exploitability < 1e-3
  result = trained()
  assert abs(result.values[0] - exact.values[0]) <= result.exploitability + exact.exploitability


def test_checkpoints_resume_bit_identically(tmp_path):
  game = exact_game()
  solver = mccfr.blueprint_solver(batch_size=64, prune_threshold=-0.5, prune_after=3, regret_floor=-50.0,
                                  discount_interval=2)  # fmt: skip
  straight = jaxcfr.train(game, solver, key=4, iterations=12, evaluate=False)
  directory = str(tmp_path / 'run')
  jaxcfr.train(
    game, solver, key=4, iterations=6, evaluate=False, checkpoint_dir=directory, checkpoint_every=3
  )
  resumed = jaxcfr.train(
    game, solver, key=4, iterations=12, evaluate=False, checkpoint_dir=directory, resume=True
  )
  assert resumed.resumed_from == 6
  for field in ('cumulative_regret', 'cumulative_policy'):
    np.testing.assert_array_equal(getattr(straight.state, field), getattr(resumed.state, field))
  assert np.isnan(straight.exploitability) and straight.curve == []


_TWO_DEVICES = """
import jax, numpy as np
from test_blueprint import exact_game
from jaxcfr.poker.blueprint import mccfr
game = exact_game()
solver = mccfr.blueprint_solver(batch_size=64, devices=2, linear_until=0)
state = solver.init(game, jax.random.key(3))
after = jax.jit(solver.update)(state, game)
# The same update by hand: each device deals 2 x 32 deals from its own key; player 0's increments,
# summed over the devices, apply before player 1's traversals.
_, deal_key, walk_key = jax.random.split(state.key, 3)
deal_keys, walk_keys = jax.random.split(deal_key, 2), jax.random.split(walk_key, 2)
deals = [mccfr.sample_deals(game, k, 64) for k in deal_keys]
keys = [jax.random.split(k) for k in walk_keys]
regret, average = state.cumulative_regret, state.cumulative_policy
for player in (0, 1):
  part = slice(32 * player, 32 * (player + 1))
  increments = [
    mccfr.traverse(game, regret, deals[d][0][part], deals[d][1][part], keys[d][player], player)
    for d in (0, 1)
  ]
  regret = regret + increments[0][0] + increments[1][0]
  average = average + increments[0][1] + increments[1][1]
np.testing.assert_allclose(after.cumulative_regret, regret, rtol=1e-5, atol=1e-4)
np.testing.assert_allclose(after.cumulative_policy, average, rtol=1e-5, atol=1e-4)
assert np.abs(np.asarray(regret)).max() > 0
print('ok', len(jax.devices()))
"""


@pytest.mark.slow
def test_two_devices_sum_their_shards():
  """On two forced CPU devices (a subprocess: the count is set before JAX starts), an update is the
  sum of each device's traversals of its own deals, player 0's applied before player 1's."""
  env = host_devices_env(2, PYTHONPATH=os.pathsep.join(import_paths(__file__)))
  done = subprocess.run(
    [sys.executable, '-c', _TWO_DEVICES], capture_output=True, text=True, env=env, timeout=600
  )
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ['ok', '2']
