"""Policies at other depths (`jaxcfr.poker.eval.depth`): the batched translation into a policy's own game,
its answers read back as legal actions, the same play where only the chip unit changes, and the
depth-aware bot's switch to push or fold."""

import types

import numpy as np
import pytest

from abstractions.betting import NoLimitRules
from jaxcfr.poker import pushfold
from jaxcfr.poker.eval import baselines, depth, match
from jaxcfr.poker.rules import nlhe

OWN = nlhe.DEFAULT_RULES  # 50/100, 20,000


class Built:
  """A stand-in blueprint: built for `rules` (its tree's), refusing other hands, playing `inner`."""

  def __init__(self, inner, rules=OWN):
    self.inner = inner
    self.tree = types.SimpleNamespace(rules=rules)
    self.asked = []  # the batch size of every query

  @property
  def name(self):
    return f'built:{self.inner.name}'

  def strategy(self, state, holes):
    assert state.rules == self.tree.rules, state.rules
    self.asked.append(len(state.street))
    return self.inner.strategy(state, holes)


def test_a_policy_of_the_same_depth_in_other_chips_plays_the_same_hands():
  # 1/2 blinds and 400 behind is the default game in other chips: every amount scales by 1/50, so the
  # built policy's results in mbb/hand are the same as at its own table, deal for deal.
  other = NoLimitRules(small_blind=1, big_blind=2, stack=400)
  at_home = match.play_match(
    Built(baselines.AlwaysPot()), baselines.EquityThreshold(), 200, seed=4, aivat=None
  )
  policy = Built(baselines.AlwaysPot())
  away = match.play_match(policy, baselines.EquityThreshold(), 200, seed=4, rules=other, aivat=None)
  assert policy.asked and away.mbb_per_hand == at_home.mbb_per_hand
  np.testing.assert_array_equal(away.chips * 50, at_home.chips)


def test_at_a_short_stack_every_answer_is_legal_and_the_policy_sees_only_its_own_game():
  short = NoLimitRules(small_blind=50, big_blind=100, stack=1000)
  for inner in (baselines.AlwaysPot(), baselines.UniformRandom()):
    policy = Built(inner)
    result = match.play_match(policy, baselines.UniformRandom(), 400, seed=2, rules=short, aivat=None)
    assert policy.asked and np.abs(result.chips).max() <= 1000  # the match checks every action's legality


def test_an_all_in_for_less_is_replayed_as_the_model_games_smallest_raise():
  short = NoLimitRules(small_blind=50, big_blind=100, stack=1000)
  state = nlhe.deal(0, 1, short)
  state = nlhe.apply(state, np.array([nlhe.RAISE], np.int8), np.array([600]))  # the small blind to 600
  state = nlhe.apply(state, np.array([nlhe.RAISE], np.int8), np.array([1000]))  # all-in: 400 more, < 500
  model, in_step = depth.model_states(state, OWN)
  assert in_step.tolist() == [True] and model.rules == OWN
  assert model.round_bet[0].tolist() == [600, 1100]  # the minimum raise of the deep game
  assert int(model.to_act[0]) == 0 and int(state.to_act[0]) == 0
  actions, probs = depth.AtRules(Built(baselines.AlwaysPot()), OWN).strategy(state, state.hole[:, :1])
  # always-pot re-raises in its game; at the table nothing is left to raise: every slot is legal
  options = nlhe.legal(state)
  assert not options.can_raise[0]
  assert set(actions.kind[0][actions.valid[0]].tolist()) <= {nlhe.FOLD, nlhe.CALL}
  assert probs[0, 0, actions.kind[0] == nlhe.CALL].sum() == 1.0


def test_where_the_games_part_the_policy_checks_or_calls():
  # 250 bb deep, a raise to 210 bb and a call see a flop with 40 bb behind; in the 200-bb game the
  # raise is the all-in and the call ends the hand.
  deep = NoLimitRules(small_blind=50, big_blind=100, stack=25_000)
  state = nlhe.deal(1, 1, deep)
  state = nlhe.apply(state, np.array([nlhe.RAISE], np.int8), np.array([21_000]))
  model, in_step = depth.model_states(state, OWN)
  assert in_step.tolist() == [True] and model.round_bet[0].tolist() == [20_000, 100]  # clamped: all-in
  state = nlhe.apply(state, np.array([nlhe.CALL], np.int8), np.array([0]))
  assert int(state.street[0]) == 1 and not state.finished[0]
  model, in_step = depth.model_states(state, OWN)
  assert model.finished[0] and in_step.tolist() == [False]
  policy = Built(baselines.AlwaysPot())
  actions, probs = depth.AtRules(policy, OWN).strategy(state, state.hole[:, 1:])
  assert not policy.asked  # a finished hand of its game is not asked about
  assert np.all(actions.kind[0] == nlhe.CALL) and np.all(actions.valid[0]) and probs[0, 0].sum() == 1.0


def test_a_batch_with_parted_and_live_hands_answers_each_its_own_way():
  deep = NoLimitRules(small_blind=50, big_blind=100, stack=25_000)
  state = nlhe.deal(1, 2, deep)
  state = nlhe.apply(state, np.array([nlhe.RAISE] * 2, np.int8), np.array([21_000, 300]))
  state = nlhe.apply(state, np.array([nlhe.CALL] * 2, np.int8), np.array([0, 0]))  # both see a flop
  policy = Built(baselines.AlwaysPot())
  actions, probs = depth.AtRules(policy, OWN).strategy(state, state.hole[:, 1:])
  assert policy.asked == [1] and actions.kind.shape == (2, 3)
  assert np.all(actions.kind[0] == nlhe.CALL) and probs[0, 0].sum() == pytest.approx(1)
  assert probs[1, 0, 2] == 1 and actions.kind[1, 2] == nlhe.RAISE  # always-pot bets the pot


def test_the_depth_aware_bot_pushes_or_folds_below_its_threshold_and_plays_deep_above():
  built = Built(baselines.AlwaysPot())
  bot = depth.DepthAware(built, push_fold_below=12.0)
  every = np.broadcast_to(np.array([[48, 49]]), (1, 1, 2))  # aces, clubs and diamonds
  shallow = nlhe.deal(0, 1, NoLimitRules(50, 100, 1000))
  actions, probs = bot.strategy(shallow._replace(hole=np.array([[[48, 49], [0, 5]]], np.int8)), every)
  assert actions.amount[0, 2] == 1000 and probs[0, 0, 2] == pushfold.solve(10.0).push[-1] == 1.0
  assert not built.asked
  deep = nlhe.deal(0, 1, NoLimitRules(50, 100, 1500))
  bot.strategy(deep, every)
  assert built.asked == [1]
  with pytest.raises(AssertionError):  # the stand-in really refuses hands of another game
    built.strategy(deep, every)


def test_a_seat_plays_a_policy_of_any_depth_at_the_tables_effective_stack():
  from jaxcfr.poker.tables.hand import TableHand, TableRules  # noqa: PLC0415
  from jaxcfr.poker.tables.seat import Seat  # noqa: PLC0415

  # 8.1 bb at a 25/50 table with an ante of 5 (0.1 bb): the push-or-fold ranges of 8.1 bb, that ante.
  solution = pushfold.solve(8.1, 0.1, 0.5)
  hand = TableHand(TableRules(25, 50, 5), (405, 3_000), 0, (20, 1))  # 7c 2d
  seat = Seat(depth.DepthAware(Built(baselines.AlwaysPot())), seed=0)
  rules = seat.model_rules(hand)
  assert (rules.small_blind, rules.big_blind, rules.stack, rules.ante) == (25, 50, 405, 5)
  assert seat.act(hand) == (nlhe.FOLD, 0) and solution.push[ranges_class(hand.hole)] == 0.0
  king_seven = TableHand(TableRules(25, 50, 5), (405, 3_000), 0, (44, 21))  # Kc 7d
  assert seat.act(king_seven) == (nlhe.RAISE, 400) and solution.push[ranges_class(king_seven.hole)] == 1.0
  deep = TableHand(TableRules(25, 50, 5), (10_000, 10_000), 0, (48, 49))
  assert seat.model_rules(deep).stack == 10_000 and seat.act(deep)[0] == nlhe.RAISE  # the stand-in bets
  built = Seat(Built(baselines.AlwaysPot()))
  assert built.model_rules(hand) == OWN  # a blueprint plays its own game at every table


def ranges_class(hole) -> int:
  from jaxcfr.poker.rules import ranges  # noqa: PLC0415

  return int(ranges.class_of_hands(np.asarray(hole)))


@pytest.mark.parametrize(
  'args, message',
  [
    (['--stack', '1'], '--stack must be more than one big blind'),
    (['--blinds', '100/50'], 'small at most the big'),
    (['--blinds', '0/100'], 'need positive blinds'),
    (['--blinds', 'x'], 'is not SMALL/BIG'),
    (['--stack', '10.005'], 'not a whole number of chips'),
  ],
)
def test_match_game_options_refuse_a_game_that_cannot_start(args, message):
  from cli_runner import run_cli  # noqa: PLC0415

  code, out, err = run_cli('match', 'pushfold', 'always-call', '--hands', '4', *args)
  assert code == 2 and message in err, err


def test_match_at_a_short_stack_with_the_depth_aware_bot(tmp_path):
  from cli_runner import run_cli  # noqa: PLC0415

  path = tmp_path / 'm.json'
  code, out, err = run_cli(
    'match', 'depth:always-pot', 'always-pot', '--stack', '10', '--blinds', '25/50', '--hands', '40',
    '--json', str(path), '--quiet',
  )  # fmt: skip
  assert code == 0, err
  assert 'depth:always-pot vs always-pot at 25/50, 10 bb deep' in out
  import json  # noqa: PLC0415

  report = json.loads(path.read_text())
  assert (report['small_blind'], report['big_blind'], report['stack']) == (25, 50, 500)


def test_carried_stacks_end_at_a_bust_hand_for_hand():
  # always-fold loses the small blind, then the big blind to always-pot's raise: from 3 bb it cannot
  # post the big blind after three hands, in either seat order.
  result = match.play_carry_matches(
    baselines.AlwaysFold(), baselines.AlwaysPot(), 2, seed=0, rules=NoLimitRules(50, 100, 300), max_hands=50
  )
  assert result.final_stacks.tolist() == [[100, 500], [50, 550]]
  assert result.hands_played.tolist() == [3, 3] and result.busted == 2
  assert result.won == 0 and result.win_share == 0.0
  assert result.mbb_per_hand == pytest.approx(-1000 * (200 + 250) / 100 / 6)


def test_mirrored_carried_matches_of_a_policy_against_itself_split_evenly():
  rules = NoLimitRules(50, 100, 1500)
  result = match.play_carry_matches(baselines.EquityThreshold(), baselines.EquityThreshold(), 8, 3, rules, 40)
  assert result.win_share == 0.5 and result.won == 4 and result.mbb_per_hand == 0.0
  assert np.all(result.final_stacks.sum(axis=1) == 3000)  # chips are only moved
  again = match.play_carry_matches(baselines.PushOrFold(), baselines.EquityThreshold(), 8, 3, rules, 40)
  twice = match.play_carry_matches(baselines.PushOrFold(), baselines.EquityThreshold(), 8, 3, rules, 40)
  np.testing.assert_array_equal(again.final_stacks, twice.final_stacks)  # deterministic given the seed
  assert np.all((again.final_stacks.min(axis=1) <= 100) | (again.hands_played == 40))


def test_match_carry_stacks_command(tmp_path):
  import json  # noqa: PLC0415

  from cli_runner import run_cli  # noqa: PLC0415

  path = tmp_path / 'c.json'
  code, out, err = run_cli(
    'match', 'always-fold', 'always-pot', '--carry-stacks', '--stack', '3', '--matches', '2', '--json',
    str(path), '--quiet',
  )  # fmt: skip
  assert code == 0, err
  assert 'always-fold won 0 of 2: 0.0%' in out and '2 ended by a bust' in out
  assert json.loads(path.read_text())['final_stacks'] == [[100, 500], [50, 550]]
  code, out, err = run_cli('match', 'always-fold', 'always-pot', '--carry-stacks', '--no-duplicate')
  assert code == 2 and 'does not apply to --carry-stacks' in err


def test_the_depth_aware_bot_plays_the_blueprint_built_nearest_the_effective_stack():
  built = {bb: Built(baselines.AlwaysPot(), NoLimitRules(50, 100, 100 * bb)) for bb in (25, 100, 200)}
  bot = depth.DepthAware(list(built.values()))
  chosen = lambda bb: bot.nearest(NoLimitRules(50, 100, 100 * bb))
  assert chosen(20) is built[25] and chosen(49) is built[25] and chosen(51) is built[100]
  assert chosen(141) is built[100] and chosen(142) is built[200] and chosen(400) is built[200]
  state = nlhe.deal(0, 1, NoLimitRules(50, 100, 3000))  # 30 bb: the 25-bb blueprint, read into its game
  bot.strategy(state, state.hole[:, :1])
  assert built[25].asked == [1] and not built[100].asked and not built[200].asked
  assert bot.name == 'depth:built:always-pot,built:always-pot,built:always-pot'
  alone = depth.DepthAware(built[200])
  assert alone.deep is built[200] and alone.policies == (built[200],)


def test_a_depth_spec_takes_several_policies():
  from jaxcfr.poker import bots  # noqa: PLC0415

  bot = bots.resolve_policy('depth:always-pot,equity')
  assert isinstance(bot, depth.DepthAware) and [p.name for p in bot.policies] == ['always-pot', 'equity']
  with pytest.raises(ValueError, match='neither a baseline'):
    bots.resolve_policy('depth:always-pot,,equity')


def test_a_table_refuses_the_depth_aware_bot_over_a_search_in_one_line():
  from cli_runner import run_cli  # noqa: PLC0415

  code, out, err = run_cli('acpc', '127.0.0.1', '9', '--bot', 'depth:search:equity')
  assert code == 2 and 'keeps the clock only as search:BLUEPRINT' in err and len(err.splitlines()) == 1, err


def test_the_exported_push_or_fold_table_answers_at_the_nearest_ante_and_depth(tmp_path):
  """`PushFoldTable` (what an exported bot reads): solved per ante and depth, each cell the solver's
  equilibrium there; a lookup takes the nearest ante (over one big blind: one) and the nearest
  depth; saved and loaded whole; a table saved before antes were a dimension loads as ante 0."""
  table = depth.solved_table(stacks=(1.0, 1.5, 2.0), antes=(0.0, 0.25, 1.0))
  assert table.push.shape == table.call.shape == (3, 3, 169)
  for ante, stack in ((0.0, 1.5), (0.2, 2.0), (3.0, 1.0)):
    push, call = table.lookup(stack + 0.1, 0.5, ante)
    exact = pushfold.solve(stack, {0.0: 0.0, 0.2: 0.25, 3.0: 1.0}[ante])
    np.testing.assert_allclose(push, exact.push, atol=1e-6)
    np.testing.assert_allclose(call, exact.call, atol=1e-6)
  assert not np.array_equal(table.push[0, 1], table.push[1, 1])  # an ante widens the pushes
  table.save(tmp_path / 'table.npz')
  loaded = depth.PushFoldTable.load(tmp_path / 'table.npz')
  np.testing.assert_array_equal(loaded.push, table.push)
  np.testing.assert_array_equal(loaded.antes, table.antes)
  np.savez(tmp_path / 'old.npz', stacks=table.stacks, push=table.push[0], call=table.call[0], small_blind=0.5)
  old = depth.PushFoldTable.load(tmp_path / 'old.npz')
  np.testing.assert_array_equal(old.lookup(1.5, 0.5, 0.25)[0], table.push[0, 1])
  with pytest.raises(ValueError, match='antes, depths, 169'):
    depth.PushFoldTable(table.stacks, table.push[:, :2], table.call, antes=table.antes)
