"""`TableHand`, one hand at a real table: against pokerkit at random blinds, antes and stacks (legal
actions, pot, stacks, who acts and the chips won at every step), against `nlhe` on the default game
(every field), and the corners of short stacks one by one."""

import numpy as np
import pytest

from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.tables.hand import Legal, TableHand, TableRules

pokerkit = pytest.importorskip('pokerkit')
from nlhe_oracle import AUTOMATIONS, card_text  # noqa: E402  (tests/oracles; pokerkit is there)


def random_table(rng: np.random.Generator, short: bool = False):
  """Random blinds (small < big: with equal blinds, who acts first is a convention), an ante of 0 to 0.25
  big blinds (half the time) and stacks of 1 to 400 big blinds (with `short`, of 1 chip to 3)."""
  big = int(rng.choice([2, 4, 10, 20, 50, 100, 200, 1000]))
  small = big // 2 if rng.random() < 0.7 else int(rng.integers(0, big))
  ante = int(rng.integers(0, big // 4 + 1)) if rng.random() < 0.5 else 0
  if short:
    stacks = tuple(int(rng.integers(1, 3 * big + 1)) for _ in range(2))
  else:
    stacks = tuple(int(rng.integers(big, 400 * big + 1)) for _ in range(2))
  return TableRules(small, big, ante), stacks


def random_action(hand: TableHand, rng: np.random.Generator) -> tuple[int, int]:
  """A random legal action reaching the corners: folds, checks and calls, raises to the minimum, all-in,
  anywhere between, and all-in less a little (so the answer can be an all-in for less)."""
  options = hand.legal()
  u = rng.random()
  if options.can_fold and u < 0.1:
    return nlhe.FOLD, 0
  if u < 0.55 or not options.can_raise:
    return nlhe.CALL, 0
  low, high = options.min_raise_to, options.max_raise_to
  short = high - int(rng.integers(1, 2 * hand.rules.big_blind))
  pot_size = 2 * hand.pot + max(hand.round_bet)
  amount = [low, high, int(rng.integers(low, high + 1)), short, pot_size][rng.integers(5)]
  return nlhe.RAISE, int(np.clip(amount, low, high))


def kit_state(rules: TableRules, stacks, cards):
  """pokerkit's hand (its player 0 is the big blind, our seat 1), hole cards dealt."""
  state = pokerkit.NoLimitTexasHoldem.create_state(
    AUTOMATIONS, True, rules.ante, (rules.small_blind, rules.big_blind), rules.big_blind,
    (stacks[1], stacks[0]), 2,
  )  # fmt: skip
  state.deal_hole(card_text(cards[2:4]))
  state.deal_hole(card_text(cards[0:2]))
  return state


def kit_deal(state, board) -> None:
  """Burns unknown cards and deals our board's next cards wherever pokerkit waits for them."""
  while state.can_burn_card() or state.can_deal_board():
    if state.can_burn_card():
      state.burn_card('??')
      continue
    dealt = len(state.board_cards)
    count = 3 if dealt == 0 else 1
    state.deal_board(card_text(board[dealt : dealt + count]))


def deal_due(hand: TableHand, board) -> None:
  while hand.cards_due:
    hand.deal(board[len(hand.board) : len(hand.board) + hand.cards_due])


def view(hand: TableHand) -> tuple:
  options = hand.legal()
  actor = hand.to_act
  return (
    actor,
    options.can_fold,
    options.call_to - hand.round_bet[actor],
    options.can_raise,
    options.min_raise_to,
    options.max_raise_to,
    hand.pot,
    hand.behind,
  )


def kit_view(state) -> tuple:
  can_raise = state.can_complete_bet_or_raise_to()
  return (
    1 - state.actor_index,
    state.can_fold(),
    int(state.checking_or_calling_amount),
    can_raise,
    int(state.min_completion_betting_or_raising_to_amount) if can_raise else 0,
    int(state.max_completion_betting_or_raising_to_amount) if can_raise else 0,
    int(state.total_pot_amount),
    (int(state.stacks[1]), int(state.stacks[0])),
  )


def ranks(hand_cards, board) -> tuple[int, int]:
  """Both seats' showdown values (`nlhe.showdown_ranks`: higher is stronger)."""
  state = nlhe.initial(np.array([hand_cards]).reshape(1, 2, 2), np.array([board]))
  return tuple(int(r) for r in nlhe.showdown_ranks(state)[0])


def check_against_pokerkit(count: int, seed: int, short: bool = False) -> dict:
  """Plays `count` random hands in both engines; asserts the same view before every action (actor,
  legal actions, pot, stacks), the same end, and the same chips won. Returns counts of the corners."""
  rng = np.random.default_rng(seed)
  seen = dict(folds=0, showdowns=0, all_in_calls=0, short_calls=0, blind_all_ins=0, antes=0, unequal=0)
  for _ in range(count):
    rules, stacks = random_table(rng, short)
    cards = [int(c) for c in rng.permutation(52)[:9]]
    hand = TableHand(rules, stacks, 0, cards[:2])
    kit = kit_state(rules, stacks, cards)
    seen['antes'] += rules.ante > 0
    seen['unequal'] += stacks[0] != stacks[1]
    seen['blind_all_ins'] += 0 in hand.behind
    history = []
    while True:
      kit_deal(kit, cards[4:])
      deal_due(hand, cards[4:])
      assert hand.finished == (kit.actor_index is None), (rules, stacks, history)
      if hand.finished:
        break
      assert view(hand) == kit_view(kit), (rules, stacks, history)
      kind, amount = random_action(hand, rng)
      options = hand.legal()
      if kind == nlhe.CALL and options.call_to > hand.round_bet[hand.to_act]:
        seen['all_in_calls'] += hand.behind[hand.to_act] <= options.call_to - hand.round_bet[hand.to_act]
        seen['short_calls'] += options.call_to < max(hand.round_bet)
      history.append((kind, amount))
      hand.apply(kind, amount)
      if kind == nlhe.FOLD:
        kit.fold()
      elif kind == nlhe.CALL:
        kit.check_or_call()
      else:
        kit.complete_bet_or_raise_to(amount)
    kit_deal(kit, cards[4:])
    assert kit.status is False
    showdown = hand.folded is None
    seen['showdowns' if showdown else 'folds'] += 1
    if showdown:
      assert len(hand.board) == 5
    won = hand.chips_won(ranks(cards[:4], cards[4:]) if showdown else None)
    assert won == (int(kit.payoffs[1]), int(kit.payoffs[0])), (rules, stacks, history)
  return seen


def test_random_hands_match_pokerkit():
  seen = check_against_pokerkit(600, seed=1)
  assert all(count > 0 for name, count in seen.items() if name != 'blind_all_ins'), seen


def test_short_stacks_match_pokerkit():
  """Stacks of 1 chip to 3 big blinds: blinds and antes that put a player all-in, calls for less."""
  seen = check_against_pokerkit(600, seed=2, short=True)
  assert all(count > 0 for count in seen.values()), seen


def test_equals_nlhe_on_the_default_game():
  """Every field after every action of random hands of `nlhe`'s default game (blinds 50/100, stacks
  20,000), the board dealt as the streets come."""
  batch = 300
  rng = np.random.default_rng(3)
  state = nlhe.deal(3, batch)
  rules = TableRules(50, 100)
  hands = [TableHand(rules, (20_000, 20_000), b % 2, state.hole[b, b % 2]) for b in range(batch)]
  while not state.finished.all():
    live = ~state.finished
    kinds, amounts = np.full(batch, nlhe.CALL), np.zeros(batch, np.int64)
    for b in np.flatnonzero(live):
      hand = hands[b]
      deal_due(hand, [int(c) for c in state.board[b]])
      options, reference = hand.legal(), nlhe.legal(nlhe.take(state, [b]))
      assert options == Legal(*(x[0].item() for x in reference))
      kinds[b], amounts[b] = random_action(hand, rng)
      hand.apply(int(kinds[b]), int(amounts[b]))
    state = nlhe.apply(state, kinds, amounts, live)
    for b, hand in enumerate(hands):
      assert hand.finished == bool(state.finished[b])
      assert hand.committed == state.committed[b].tolist()
      assert hand.actions == [tuple(row) for row in state.history[b, : state.num_actions[b]].tolist()]
      if hand.finished:
        assert hand.folded == (None if state.folded[b] < 0 else int(state.folded[b]))
        continue
      assert (hand.street, hand.to_act, hand.raises) == (state.street[b], state.to_act[b], state.raises[b])
      assert hand.round_bet == state.round_bet[b].tolist()
      assert hand.last_increment == state.last_increment[b]
      assert hand.acted == state.acted[b].tolist()
  for b, hand in enumerate(hands):
    deal_due(hand, [int(c) for c in state.board[b]])
  showdown = np.array([hand.folded is None for hand in hands])
  board_ranks = nlhe.showdown_ranks(state)
  won = [hand.chips_won(board_ranks[b]) for b, hand in enumerate(hands)]
  np.testing.assert_array_equal(np.array(won), nlhe.payoffs(state))
  assert 0 < showdown.sum() < batch


def test_blinds_that_put_a_player_all_in():
  # The small blind's stack is short of its blind: posted, nothing to decide, the big blind's excess back.
  hand = TableHand(TableRules(50, 100), (30, 1000), 0, (0, 1))
  assert hand.finished and hand.committed == [30, 30] and hand.actions == [] and hand.cards_due == 3
  # The big blind is all-in for more than the small blind: the small blind folds or calls, cannot raise.
  hand = TableHand(TableRules(50, 100), (1000, 60), 0, (0, 1))
  assert hand.legal() == Legal(can_fold=True, call_to=60, min_raise_to=0, max_raise_to=0, can_raise=False)
  hand.apply(nlhe.CALL)
  assert hand.finished and hand.committed == [60, 60]
  # ... and for less: nothing to decide, the small blind's excess goes back.
  hand = TableHand(TableRules(50, 100), (1000, 40), 0, (0, 1))
  assert hand.finished and hand.committed == [40, 40]
  # The ante comes first: a stack of 55 posts the ante of 10 and 45 of its blind of 100, less than the
  # small blind's 50, of which 5 go back.
  hand = TableHand(TableRules(50, 100, ante=10), (1000, 55), 0, (0, 1))
  assert hand.finished and hand.round_bet == [45, 45] and hand.committed == [55, 55]


def test_a_short_all_in_call_returns_the_excess_and_ends_the_betting():
  hand = TableHand(TableRules(50, 100), (20_000, 1_000), 0, (0, 1))
  hand.apply(nlhe.RAISE, 5_000)
  assert hand.legal() == Legal(True, 1_000, 0, 0, False)
  hand.apply(nlhe.CALL)
  assert hand.finished and hand.committed == [1_000, 1_000] and hand.street == 0
  for cards in ([4, 5, 6], [7], [8]):
    hand.deal(cards)
  assert hand.cards_due == 0 and hand.chips_won((5, 9)) == (-1_000, 1_000)


def test_illegal_actions_are_one_line_errors():
  hand = TableHand(TableRules(50, 100), (20_000, 20_000), 1, (0, 1))
  for kind, amount, message in (
    (nlhe.RAISE, 150, r'raise to 150.*200\.\.20000'),
    (nlhe.RAISE, 20_001, 'raise to 20001'),
    (7, 0, 'kind 7'),
  ):
    with pytest.raises(ValueError, match=message) as error:
      hand.apply(kind, amount)
    assert '\n' not in str(error.value)
  hand.apply(nlhe.CALL)
  with pytest.raises(ValueError, match=r'fold\)'):
    hand.apply(nlhe.FOLD)  # nothing to call
  hand.apply(nlhe.CALL)
  with pytest.raises(ValueError, match='flop has not been dealt'):
    hand.apply(nlhe.CALL)
  with pytest.raises(ValueError, match='takes 3 board cards'):
    hand.deal([4])
  with pytest.raises(ValueError, match='not already dealt'):
    hand.deal([0, 5, 6])
  hand.deal([4, 5, 6])
  with pytest.raises(ValueError, match='no board cards are due'):
    hand.deal([7])
  with pytest.raises(ValueError, match='small blind <= big blind'):
    TableRules(100, 50)
  with pytest.raises(ValueError, match='two stacks'):
    TableHand(TableRules(50, 100), (0, 100), 0, (0, 1))
