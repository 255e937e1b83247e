"""The batched hold'em engine `jaxcfr.poker.rules.nlhe` against pokerkit (action by action: legal actions,
pots, payoffs), the scalar rules of `abstractions.betting`, and its own invariants."""

import numpy as np
import pytest

from abstractions import betting
from abstractions.betting import NoLimitRules
from jaxcfr.poker.rules import nlhe

pytest.importorskip('pokerkit')
import nlhe_oracle  # noqa: E402

RULES = NoLimitRules()


def random_actions(state: nlhe.HandState, rng: np.random.Generator):
  """Random legal actions (kind [B], amount [B]) that reach the corners of the rules: folds (rarely),
  checks and calls, and raises to the minimum, all-in, anywhere in between, the pot, and all-in less a
  little (so that the answer can be an all-in for less than a full raise)."""
  options = nlhe.legal(state)
  batch = options.can_fold.shape[0]
  u = rng.random(batch)
  kind = np.where(options.can_fold & (u < 0.1), nlhe.FOLD, np.where(u < 0.6, nlhe.CALL, nlhe.RAISE))
  kind = np.where((kind == nlhe.RAISE) & ~options.can_raise, nlhe.CALL, kind)
  low, high = options.min_raise_to, options.max_raise_to
  choice = rng.integers(0, 5, batch)
  uniform = low + np.floor(rng.random(batch) * (high - low + 1)).astype(np.int64)
  short = high - rng.integers(1, 2 * state.rules.big_blind, batch)
  amount = np.select(
    [choice == 0, choice == 1, choice == 2, choice == 3],
    [low, high, uniform, short],
    nlhe.pot_raise_to(state),
  )
  return kind, np.clip(amount, low, high)


def play_random(batch: int, seed: int, rules: NoLimitRules = RULES):
  """Plays `batch` random hands to the end. Returns the final state and, per step, what our engine
  said before the action (legal actions, pot, actor, the actor's chips in the round, the top bet and
  the raise increment), the action (kind -1 where the hand was over) and whether each hand was
  finished after it."""
  rng = np.random.default_rng(seed)
  state = nlhe.deal(seed, batch, rules)
  rows = np.arange(batch)
  steps = []
  while not state.finished.all():
    live = ~state.finished
    kind, amount = random_actions(state, rng)
    kind = np.where(live, kind, -1)
    step = dict(
      legal=nlhe.legal(state),
      pot=nlhe.pot(state),
      actor=nlhe.actor(state),
      mine=state.round_bet[rows, state.to_act],
      top=state.round_bet.max(axis=1),
      increment=np.maximum(state.last_increment, rules.big_blind),
      theirs_behind=nlhe.stacks(state)[rows, 1 - state.to_act],
      kind=kind,
      amount=amount,
    )
    state = nlhe.apply(state, kind, amount, live)
    step['finished'] = state.finished.copy()
    steps.append(step)
  return state, steps


def corners(state: nlhe.HandState, steps) -> dict:
  """How often random play reached each corner of the rules (counted over hands and actions)."""
  kind = np.stack([s['kind'] for s in steps])  # [T, B]
  get = lambda name: np.stack([s[name] for s in steps])
  raise_ = kind == nlhe.RAISE
  amount, low, high = get('amount'), get('min'), get('max')
  to_call = get('top') - get('mine')
  showdown = state.folded < 0
  chips = nlhe.payoffs(state)
  return dict(
    min_raises=int((raise_ & (amount == low) & (low < high)).sum()),
    all_ins=int((raise_ & (amount == high)).sum()),
    short_all_ins=int((raise_ & (amount == high) & (amount < get('top') + get('increment'))).sum()),
    all_in_calls=int(((kind == nlhe.CALL) & (to_call > 0) & (get('theirs_behind') == 0)).sum()),
    folds=int((~showdown).sum()),
    showdowns=int(showdown.sum()),
    split_pots=int((showdown & (chips[:, 0] == 0)).sum()),
    rivers=int((state.street == 3).sum()),
  )


def check_against_pokerkit(batch: int, seed: int, rules: NoLimitRules = RULES) -> dict:
  """Replays random hands through pokerkit; asserts identical actors, legal actions and pots before
  every action, the same end of each hand, and identical payoffs. Returns `corners`."""
  state, steps = play_random(batch, seed, rules)
  for step in steps:
    step['min'], step['max'] = step['legal'].min_raise_to, step['legal'].max_raise_to
  ours = nlhe.payoffs(state)
  for b in range(batch):
    actions = [(int(s['kind'][b]), int(s['amount'][b])) for s in steps if s['kind'][b] >= 0]
    referee = nlhe_oracle.replay(state.hole[b], state.board[b], actions, rules)
    for t, view in enumerate(referee.views):
      step, options = steps[t], steps[t]['legal']
      got = nlhe_oracle.View(
        actor=int(step['actor'][b]),
        can_fold=bool(options.can_fold[b]),
        call=int(options.call_to[b] - step['mine'][b]),
        can_raise=bool(options.can_raise[b]),
        min_raise_to=int(options.min_raise_to[b]),
        max_raise_to=int(options.max_raise_to[b]),
        pot=int(step['pot'][b]),
      )
      assert got == view, f'hand {b}, action {t} of {actions}: ours {got}, pokerkit {view}'
      assert bool(step['finished'][b]) == referee.finished_after[t], f'hand {b} {actions} ends differently'
    assert tuple(ours[b]) == referee.payoffs, (
      f'hand {b} {actions}: ours {ours[b]}, pokerkit {referee.payoffs}'
    )
  return corners(state, steps)


def test_random_hands_match_pokerkit():
  seen = check_against_pokerkit(1500, seed=1)
  assert all(count > 0 for count in seen.values()), seen


@pytest.mark.slow
def test_many_random_hands_match_pokerkit():
  seen = check_against_pokerkit(20_000, seed=2)
  assert all(count > 10 for count in seen.values()), seen


def test_small_stacks_and_odd_blinds_match_pokerkit():
  """Stacks of a few big blinds reach all-ins and all-ins for less on every street."""
  seen = check_against_pokerkit(300, seed=3, rules=NoLimitRules(small_blind=25, big_blind=60, stack=1_000))
  assert all(count > 0 for count in seen.values()), seen


def test_antes_match_pokerkit():
  """Each player's ante posted before the blinds, dead money: the pot before every action, the legal
  raises (a stack short by the ante) and the chips won, at short stacks reaching all-ins and deep."""
  for seed, rules in ((5, NoLimitRules(25, 60, 1_000, ante=10)), (6, NoLimitRules(50, 100, 20_000, ante=25))):
    seen = check_against_pokerkit(300, seed=seed, rules=rules)
    assert seen['folds'] > 0 and seen['showdowns'] > 0, seen
  preflop = nlhe.deal(0, 1, NoLimitRules(50, 100, 5_000, ante=10))
  assert nlhe.pot(preflop)[0] == 170 and tuple(preflop.round_bet[0]) == (50, 100)
  assert nlhe.legal(preflop).max_raise_to[0] == 4_990
  with pytest.raises(ValueError, match='ante'):
    NoLimitRules(50, 100, 150, ante=50)


@pytest.mark.parametrize('rules', [RULES, NoLimitRules(25, 60, 1_000, ante=10)], ids=['no-ante', 'ante'])
def test_agrees_with_the_scalar_reference_rules(rules):
  """Every field of every state, and the legal actions, as `abstractions.betting` computes them one
  hand at a time (antes in the commitments of both)."""
  batch = 200
  state, steps = play_random(batch, seed=4, rules=rules)
  dealt = nlhe.deal(4, batch, rules)
  for b in range(batch):
    scalar = betting.initial_state(rules)
    replayed = nlhe.take(dealt, [b])
    for step in steps:
      kind, amount = int(step['kind'][b]), int(step['amount'][b])
      if kind < 0:
        break
      options = nlhe.legal(replayed)
      actions = betting.legal_actions(scalar, betting.BetAbstraction(raise_cap=99))  # fold/check/call first
      lowest = betting.min_raise_to(scalar)
      highest = scalar.round_bet[scalar.to_act] + scalar.stack_left(scalar.to_act)
      can_raise = betting.is_legal(scalar, betting.Action('bet', lowest))
      assert bool(options.can_fold[0]) == (actions[0].kind == 'fold')
      assert bool(options.can_raise[0]) == can_raise
      assert not betting.is_legal(scalar, betting.Action('bet', lowest - 1))
      assert not betting.is_legal(scalar, betting.Action('bet', highest + 1))
      if can_raise:
        assert (options.min_raise_to[0], options.max_raise_to[0]) == (lowest, highest)
      if kind == nlhe.FOLD:
        action = betting.Action('fold')
      elif kind == nlhe.CALL:
        action = next(a for a in actions if a.kind in ('check', 'call'))
        assert action.amount == options.call_to[0] or action.kind == 'check'
      else:
        action = betting.Action('bet', amount)
      scalar = betting.apply_action(scalar, action)
      replayed = nlhe.apply(replayed, [kind], [amount])
      assert tuple(replayed.committed[0]) == scalar.committed
      assert bool(replayed.finished[0]) == scalar.finished
      if not scalar.finished:
        assert int(replayed.street[0]) == scalar.street
        assert tuple(replayed.round_bet[0]) == scalar.round_bet
        assert int(replayed.to_act[0]) == scalar.to_act
        assert int(replayed.raises[0]) == scalar.raises
        assert tuple(replayed.acted[0]) == scalar.acted
    assert int(replayed.folded[0]) == (-1 if scalar.folded is None else scalar.folded)
    assert replayed.finished[0]


def test_invariants_of_random_play():
  state, steps = play_random(2000, seed=5)
  chips = nlhe.payoffs(state)
  assert chips.dtype == np.int64 and chips.shape == (2000, 2)
  np.testing.assert_array_equal(chips.sum(axis=1), 0)  # zero-sum
  # Chips are conserved: nobody wins more than the other put in, or loses more than their own.
  assert np.all(np.abs(chips[:, 0]) <= state.committed.min(axis=1))
  assert np.all((state.committed >= RULES.small_blind) & (state.committed <= RULES.stack))
  showdown = state.folded < 0
  np.testing.assert_array_equal(state.committed[showdown, 0], state.committed[showdown, 1])
  # The folder loses exactly what it put in.
  folder = state.folded[~showdown].astype(int)
  np.testing.assert_array_equal(
    chips[~showdown][np.arange(len(folder)), folder],
    -state.committed[~showdown][np.arange(len(folder)), folder],
  )
  # The history is the actions played, in order.
  for t, step in enumerate(steps):
    played = step['kind'] >= 0
    np.testing.assert_array_equal(state.history[played, t, 1], step['kind'][played])
    raised = step['kind'] == nlhe.RAISE
    np.testing.assert_array_equal(state.history[raised, t, 2], step['amount'][raised])
  assert np.all(state.history[np.arange(state.history.shape[1]) >= state.num_actions[:, None]] == -1)
  assert state.num_actions.max() <= nlhe.max_actions(RULES)
  for step in steps:
    assert np.all(step['pot'] <= 2 * RULES.stack)


def test_illegal_actions_are_rejected():
  state = nlhe.deal(0, 3)
  with pytest.raises(ValueError, match='illegal action in hand 1'):  # raise below the minimum
    nlhe.apply(state, [1, 2, 1], [0, 150, 0])
  with pytest.raises(ValueError, match='illegal action in hand 2'):  # more than the stack
    nlhe.apply(state, [1, 1, 2], [0, 0, 20_001])
  with pytest.raises(ValueError, match='illegal action'):  # no such kind
    nlhe.apply(state, [3, 1, 1], [0, 0, 0])
  limped = nlhe.apply(state, [1, 1, 1])
  with pytest.raises(ValueError, match='illegal action in hand 0'):  # folding facing no bet
    nlhe.apply(limped, [0, 1, 1])
  shoved = nlhe.apply(limped, [2, 1, 1], [20_000, 0, 0])
  with pytest.raises(ValueError, match='illegal action in hand 0'):  # no raise over an all-in
    nlhe.apply(shoved, [2, 1, 1], [20_000, 0, 0])
  over = nlhe.apply(shoved, [0, 1, 1])
  assert over.finished[0] and not over.finished[1]
  with pytest.raises(ValueError, match='the hand is over'):
    nlhe.apply(over, [1, 1, 1], mask=[True, True, True])
  with pytest.raises(ValueError, match='not finished'):
    nlhe.payoffs(over)
  # A masked-out hand is left alone whatever its action says.
  after = nlhe.apply(over, [0, 1, 2], [0, 0, 300], mask=[False, True, True])
  # Hand 1: limp, check; flop check, check -> the turn. Hand 2: limp, check; flop check, bet 300.
  assert after.folded.tolist() == [0, -1, -1] and after.street.tolist() == [0, 2, 1]
  assert after.committed.tolist() == [[100, 20_000], [100, 100], [400, 100]]
  assert after.num_actions.tolist() == [3, 4, 4] and after.to_act.tolist()[1:] == [1, 1]


def test_apply_is_pure():
  state = nlhe.deal(1, 4)
  copies = [np.copy(x) for x in state[:-1]]
  nlhe.apply(state, [2, 1, 0, 2], [300, 0, 0, 20_000])
  for before, after in zip(copies, state[:-1], strict=True):
    np.testing.assert_array_equal(before, after)


def test_deal_is_deterministic_with_distinct_cards():
  import jax  # noqa: PLC0415

  state = nlhe.deal(7, 5000)
  again = nlhe.deal(jax.random.key(7), 5000)
  for x, y in zip(state[:-1], again[:-1], strict=True):
    np.testing.assert_array_equal(x, y)
  cards = np.sort(np.concatenate([state.hole.reshape(-1, 4), state.board], axis=1), axis=1)
  assert np.all(cards[:, 1:] > cards[:, :-1]) and cards.min() >= 0 and cards.max() <= 51
  assert not np.array_equal(nlhe.deal(8, 5000).board, state.board)
  # Every card turns up in every position about equally often (5000 / 52 ~ 96 each).
  counts = np.stack([np.bincount(state.board[:, i], minlength=52) for i in range(5)])
  assert counts.min() > 50 and counts.max() < 150
  assert state.noise.shape == (5000, nlhe.max_actions()) and 0 <= state.noise.min() < state.noise.max() < 1


def test_blinds_streets_and_visible_board():
  state = nlhe.deal(0, 1)
  assert state.committed.tolist() == [[50, 100]] and state.to_act.tolist() == [0]
  assert nlhe.visible_board(state).tolist() == [[-1] * 5]
  state = nlhe.apply(state, [nlhe.CALL])  # the small blind limps
  assert state.street[0] == 0 and nlhe.actor(state)[0] == 1  # the big blind has the option
  state = nlhe.apply(state, [nlhe.CALL])
  assert state.street[0] == 1 and nlhe.actor(state)[0] == 1 and nlhe.pot(state)[0] == 200
  np.testing.assert_array_equal(nlhe.visible_board(state)[0, :3], state.board[0, :3])
  assert nlhe.visible_board(state)[0, 3:].tolist() == [-1, -1]
  options = nlhe.legal(state)
  assert not options.can_fold[0] and options.min_raise_to[0] == 100 and options.max_raise_to[0] == 19_900
  assert nlhe.pot_raise_to(state)[0] == 200


def test_from_actions_replays_a_history():
  state = nlhe.from_actions(
    [
      [(2, 300), (2, 900), (1, 0), (1, 0), (2, 1000), (2, 19_100), (1, 0)],  # 3-bet pot, flop shove called
      [(1, 0), (2, 300), (0, 0)],  # limp, raise, fold
      [],
    ]
  )
  assert state.finished.tolist() == [True, True, False]
  assert state.committed.tolist() == [[20_000, 20_000], [100, 300], [50, 100]]
  assert state.num_actions.tolist() == [7, 3, 0]
  assert state.history[0, :7, 0].tolist() == [0, 0, 0, 1, 1, 1, 1]
  assert state.history[0, :7, 2].tolist() == [300, 900, 900, 0, 1000, 19_100, 19_100]
  assert nlhe.payoffs(nlhe.take(state, [1])).tolist() == [[-100, 100]]
  with pytest.raises(ValueError, match='illegal'):
    nlhe.from_actions([[(1, 0), (0, 0)]])  # the big blind folds facing no bet


def test_split_pot_and_showdown_by_hand_rank():
  # Both players play the board (a royal flush): a split; then a pair of aces beats kings.
  state = nlhe.initial([[[0, 1], [4, 5]], [[48, 49], [44, 45]]], [[51, 47, 43, 39, 35], [2, 7, 12, 17, 22]])
  state = nlhe.replay(state, np.full((2, 1), nlhe.RAISE), np.full((2, 1), 20_000))
  state = nlhe.apply(state, [nlhe.CALL, nlhe.CALL])
  assert nlhe.payoffs(state).tolist() == [[0, 0], [20_000, -20_000]]
