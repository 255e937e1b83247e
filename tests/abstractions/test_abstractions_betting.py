"""No-limit bet abstraction: legality under the rules, abstract actions, and
pseudo-harmonic translation (Ganzfried & Sandholm 2013)."""

import random

import numpy as np
import pytest

from abstractions import (
  Action,
  BetAbstraction,
  NoLimitRules,
  apply_action,
  initial_state,
  is_legal,
  legal_actions,
  min_raise_to,
  pseudo_harmonic,
  translate,
)

RULES = NoLimitRules(small_blind=50, big_blind=100, stack=10_000)


def test_pseudo_harmonic_matches_the_published_formula():
  a, b = 0.5, 1.0
  for x in np.linspace(a, b, 11):
    assert pseudo_harmonic(x, a, b) == pytest.approx(((b - x) * (1 + a)) / ((b - a) * (1 + x)))
  assert pseudo_harmonic(0.75, 0.5, 1.0) == pytest.approx(0.375 / 0.875)
  # Exact at the abstraction sizes, strictly decreasing between them.
  assert pseudo_harmonic(a, a, b) == 1.0 and pseudo_harmonic(b, a, b) == 0.0
  values = [pseudo_harmonic(x, 0.33, 1.5) for x in np.linspace(0.33, 1.5, 50)]
  assert np.all(np.diff(values) < 0)
  with pytest.raises(ValueError):
    pseudo_harmonic(0.5, 1.0, 0.5)


def test_translate_is_exact_at_sizes_and_monotone():
  sizes = (0.33, 0.75, 1.5)
  for s in sizes:
    assert translate(s, sizes) == s
    assert translate(s, sizes, random.Random(0)) == s
  assert translate(0.1, sizes) == 0.33 and translate(5.0, sizes) == 1.5
  xs = np.linspace(0.0, 3.0, 301)
  mapped = [translate(x, sizes) for x in xs]
  assert np.all(np.diff(mapped) >= 0)
  # The deterministic variant switches where the probability crosses 1/2.
  a, b = 0.75, 1.5
  crossing = next(x for x in np.linspace(a, b, 10_001) if pseudo_harmonic(x, a, b) < 0.5)
  assert translate(crossing - 1e-3, sizes) == a and translate(crossing + 1e-3, sizes) == b


def test_randomised_translation_frequency():
  rng = random.Random(1)
  x, a, b = 1.0, 0.75, 1.5
  hits = sum(translate(x, (a, b), rng) == a for _ in range(20_000)) / 20_000
  assert hits == pytest.approx(pseudo_harmonic(x, a, b), abs=0.015)


def test_blinds_and_first_actions():
  state = initial_state(RULES)
  assert state.committed == (50, 100) and state.pot == 150 and state.to_act == 0 and state.to_call == 50
  assert min_raise_to(state) == 200  # the raise must add at least a big blind
  actions = legal_actions(state, BetAbstraction())
  assert actions[:2] == [Action('fold'), Action('call', 100)]
  # Pot after calling is 200: 0.33 adds 66, below the minimum raise (to 200); 0.75 -> 250; 1.5 -> 400.
  assert [a.amount for a in actions[2:]] == [200, 250, 400, 10_000]
  assert all(is_legal(state, a) for a in actions)
  assert not is_legal(state, Action('check'))
  assert not is_legal(state, Action('bet', 199)) and not is_legal(state, Action('bet', 10_001))
  assert is_legal(state, Action('bet', 10_000))


def test_big_blind_option_and_street_order():
  state = apply_action(initial_state(RULES), Action('call', 100))
  assert state.street == 0 and state.to_act == 1 and state.to_call == 0  # the big blind may still raise
  assert Action('check') in legal_actions(state)
  state = apply_action(state, Action('check'))
  assert state.street == 1 and state.to_act == 1 and state.round_bet == (0, 0) and state.pot == 200
  state = apply_action(state, Action('check'))
  state = apply_action(state, Action('check'))
  assert state.street == 2


def test_minimum_raise_follows_the_last_increment():
  state = apply_action(initial_state(RULES), Action('bet', 400))  # a raise of 300
  assert min_raise_to(state) == 700
  assert not is_legal(state, Action('bet', 650)) and is_legal(state, Action('bet', 700))
  state = apply_action(state, Action('bet', 1500))  # a raise of 1100
  assert min_raise_to(state) == 2600


def test_raise_cap_and_all_in():
  abstraction = BetAbstraction(raise_cap=2)
  state = initial_state(RULES)
  state = apply_action(state, Action('bet', 300))
  state = apply_action(state, Action('bet', 900))
  assert state.raises == 2
  assert [a.kind for a in legal_actions(state, abstraction)] == ['fold', 'call']
  state = apply_action(state, Action('bet', 10_000))  # the full game still allows the all-in
  assert legal_actions(state, abstraction) == [Action('fold'), Action('call', 10_000)]
  final = apply_action(state, Action('call', 10_000))
  assert final.finished and final.pot == 20_000


def test_short_all_in_call_returns_the_excess():
  rules = NoLimitRules(small_blind=50, big_blind=100, stack=1_000)
  state = initial_state(rules)
  state = apply_action(state, Action('bet', 1_000))
  assert legal_actions(state, BetAbstraction()) == [Action('fold'), Action('call', 1_000)]
  short = NoLimitRules(small_blind=50, big_blind=100, stack=300)
  state = apply_action(initial_state(short), Action('call', 100))
  state = apply_action(state, Action('bet', 300))  # all-in
  final = apply_action(state, Action('call', 300))
  assert final.finished and final.committed == (300, 300)


def test_abstract_sizes_per_street_and_depth():
  abstraction = BetAbstraction(
    fractions=(((0.5,),), ((0.33, 1.0), (2.0,)), ((1.0,),), ((1.0,),)), all_in=False
  )
  state = apply_action(initial_state(RULES), Action('call', 100))
  state = apply_action(state, Action('check'))  # flop, pot 200, big blind first
  bets = [a.amount for a in legal_actions(state, abstraction) if a.kind == 'bet']
  assert bets == [100, 200]  # 0.33 * 200 = 66 is below the big blind: raised to 100
  state = apply_action(state, Action('bet', 200))
  raises = [a.amount for a in legal_actions(state, abstraction) if a.kind == 'bet']
  assert raises == [200 + 2 * 600]  # depth 1 uses 2 pot: call 200 makes the pot 600
  with pytest.raises(ValueError):
    BetAbstraction(fractions=((),) * 4)
  with pytest.raises(ValueError):
    apply_action(state, Action('check'))


def test_every_unabstracted_action_is_legal_and_bets_are_contiguous():
  state = apply_action(initial_state(NoLimitRules(1, 2, 50)), Action('bet', 6))
  actions = legal_actions(state)
  bets = [a.amount for a in actions if a.kind == 'bet']
  assert bets == list(range(10, 51))
  assert all(is_legal(state, a) for a in actions)
