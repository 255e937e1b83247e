"""Real-time search (`jaxcfr.poker.search`): range tracking against a pair-by-pair Bayes loop, the subgame
built from real states (pot, stacks, who acts, the facing bet, legal root actions), known answers on a
polarised river spot, the policy's strategy against `solving.solve` on the same spot, and a short match
through the match engine's checks, deterministic given the seed."""

import types

import nlhe_oracle
import numpy as np
import pytest

from abstractions import HOLES, pseudo_harmonic
from jaxcfr import cli
from jaxcfr.cli import common
from jaxcfr.poker import bots, defaults
from jaxcfr.poker.eval import baselines, lbr, match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import parse_cards
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.search import depth_limited
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import solving, tree

FOLD, CALL, RAISE = nlhe.FOLD, nlhe.CALL, nlhe.RAISE
PAIR = {(int(a), int(b)): h for h, (a, b) in enumerate(HOLES)}


def pair_index(a: int, b: int) -> int:
  return PAIR[min(a, b), max(a, b)]


class Scripted:
  """A test blueprint with mixed, pair-dependent probabilities over four slots: fold (facing a bet),
  check or call, a raise of 3/4 of the pot after calling and the pot raise. The weight of slot j for
  pair (a, b) after n actions is 1 + (7a + 13b + 5n + 3j + shift) mod 11."""

  name = 'scripted'

  def __init__(self, shift: int = 0):
    self.shift = shift

  @staticmethod
  def weight(a: int, b: int, n: int, j: int, shift: int = 0) -> int:
    return 1 + (7 * a + 13 * b + 5 * n + 3 * j + shift) % 11

  @staticmethod
  def raise_tos(state):
    """[B, 2]: the 3/4-pot raise and the pot raise, clamped to the legal range."""
    options = nlhe.legal(state)
    rows = np.arange(len(state.street))
    mine, theirs = state.round_bet[rows, state.to_act], state.round_bet[rows, 1 - state.to_act]
    top = np.maximum(mine, theirs)
    after_call = nlhe.pot(state) + top - mine
    wanted = top[:, None] + np.round(np.array([0.75, 1.0]) * after_call[:, None]).astype(np.int64)
    return np.clip(wanted, options.min_raise_to[:, None], options.max_raise_to[:, None])

  def strategy(self, state, holes):
    holes = np.asarray(holes, np.int64)
    options = nlhe.legal(state)
    batch = len(state.street)
    raise_to = self.raise_tos(state)
    kind = np.tile(np.array([FOLD, CALL, RAISE, RAISE], np.int8), (batch, 1))
    amount = np.concatenate([np.zeros((batch, 1), np.int64), options.call_to[:, None], raise_to], axis=1)
    valid = np.stack([options.can_fold, np.ones(batch, bool), options.can_raise, options.can_raise], axis=1)
    valid[:, 3] &= raise_to[:, 1] != raise_to[:, 0]
    n = state.num_actions.astype(np.int64)[:, None, None]
    raw = 1 + (7 * holes[..., :1] + 13 * holes[..., 1:] + 5 * n + 3 * np.arange(4) + self.shift) % 11
    raw = raw * valid[:, None, :]
    return nlhe.ActionSet(kind, amount, valid), raw / raw.sum(axis=2, keepdims=True)


def random_states(seed: int, batch: int, steps: int):
  """States along random legal play (folds rare, raises of random legal sizes): every unfinished state
  after each step, as one batch."""
  rng = np.random.default_rng(seed)
  state = nlhe.deal(seed, batch)
  seen = []
  for _ in range(steps):
    live = ~state.finished
    if not live.any():
      break
    options = nlhe.legal(state)
    u = rng.random(batch)
    kind = np.where(
      options.can_raise & (u < 0.35), RAISE, np.where(options.can_fold & (u > 0.97), FOLD, CALL)
    )
    span = options.max_raise_to - options.min_raise_to
    amount = options.min_raise_to + np.floor(rng.random(batch) ** 3 * (span + 1)).astype(np.int64)
    amount = np.minimum(amount, options.max_raise_to)
    state = nlhe.apply(state, kind, amount, live)
    if (~state.finished).any():
      seen.append(nlhe.take(state, ~state.finished))
  return nlhe.concatenate(seen)


def brute_force_ranges(state_b, shift_of=lambda seat, street: 0):
  """Both seats' ranges [2, 1326] after one hand's history, pair by pair: each action's likelihood
  from `Scripted.weight` (with the shift `shift_of(seat, street)` of the acting seat), summed over
  the slots that hold the action, where a raise of another amount counts as the slot pseudo-harmonic
  translation picks between the two offered sizes with the hand's noise; then the visible board's
  card removal."""
  hole, board = state_b.hole[0], state_b.board[0]
  history = state_b.history[0, : state_b.num_actions[0]]
  weights = np.ones((2, len(HOLES)))
  for step, (_, kind, amount) in enumerate(history):
    actions = [(int(k), int(a)) for _, k, a in history[:step]]
    state = nlhe.from_actions([actions], hole[None], board[None], noise=state_b.noise)
    seat = int(state.to_act[0])
    options = nlhe.legal(state)
    raise_to = Scripted.raise_tos(state)[0]
    valid = [bool(options.can_fold[0]), True, bool(options.can_raise[0])]
    valid.append(valid[2] and raise_to[1] != raise_to[0])
    if kind == FOLD:
      taken = [0]
    elif kind == CALL:
      taken = [1]
    elif not valid[2]:
      taken = None  # no raise offered: the action says nothing
    elif amount in [raise_to[j] for j in (0, 1) if valid[2 + j]]:
      taken = [2 + j for j in (0, 1) if valid[2 + j] and raise_to[j] == amount]
    elif not valid[3]:
      taken = [2]
    else:
      mine, theirs = state.round_bet[0, seat], state.round_bet[0, 1 - seat]
      top, after_call = max(mine, theirs), int(nlhe.pot(state)[0]) + max(mine, theirs) - mine
      a, b = ((raise_to - top) / after_call).tolist()
      x = (amount - top) / after_call
      if x <= a:
        taken = [2]
      elif x >= b:
        taken = [3]
      else:
        taken = [2] if state_b.noise[0, step] < pseudo_harmonic(x, a, b) else [3]
    if taken is None:
      continue
    shift = shift_of(seat, int(state.street[0]))
    for h, (a, b) in enumerate(HOLES):
      raw = [Scripted.weight(int(a), int(b), step, j, shift) if valid[j] else 0 for j in range(4)]
      weights[seat, h] *= sum(raw[j] for j in taken) / sum(raw)
  shown = {int(c) for c in board[: nlhe.BOARD_SIZES[state_b.street[0]]]}
  for h, (a, b) in enumerate(HOLES):
    if int(a) in shown or int(b) in shown:
      weights[:, h] = 0
  return weights / weights.sum(1, keepdims=True)


def test_ranges_follow_bayes_rule_pair_by_pair():
  states = random_states(3, 24, 12)
  postflop = np.flatnonzero(states.street >= 1)
  picked = np.concatenate([np.flatnonzero(states.street == 0)[:2], postflop[:: max(1, len(postflop) // 10)]])
  sub = nlhe.take(states, picked)
  assert (sub.num_actions >= 5).sum() >= 4 and (sub.history[..., 1] == RAISE).sum() >= 8
  ranges = search.track_ranges(Scripted(), sub)
  for b in range(len(picked)):
    expected = brute_force_ranges(nlhe.take(sub, [b]))
    np.testing.assert_allclose(ranges[b], expected, rtol=1e-9, atol=1e-15)
  # The bot's own actions on the turn and river under its own strategy (its re-solves), the rest
  # under the blueprint.
  own = search.track_ranges(Scripted(), sub, own=Scripted(shift=4), own_streets=(2, 3))
  bots = 0
  for b in range(len(picked)):
    bot = int(sub.to_act[b])
    expected = brute_force_ranges(
      nlhe.take(sub, [b]), lambda seat, street, bot=bot: 4 * (seat == bot and street >= 2)
    )
    np.testing.assert_allclose(own[b], expected, rtol=1e-9, atol=1e-15)
    bots += not np.allclose(own[b], ranges[b])
  assert bots >= 3


def test_the_subgame_of_a_real_state_has_its_pot_stacks_actor_and_facing_bet():
  states = random_states(5, 64, 14)
  states = nlhe.take(states, states.street >= 2)
  config = search.SearchConfig(think_seconds=None, iterations=1, turn_depth_limited=False)
  assert len(states.street) >= 40
  facing = refereed = 0
  for b in range(len(states.street)):
    one = nlhe.take(states, [b])
    tree_config = search.subgame_config(states, b, config)
    seat = int(states.to_act[b])
    start = tree_config.start or tree.RoundStart()
    round_bet = {0: start.round_bet[1], 1: start.round_bet[0]}  # by seat: seat 1 is OOP (tree player 0)
    assert tree_config.street == states.street[b]
    assert tree_config.pot + sum(start.round_bet) == nlhe.pot(one)[0]
    for s in (0, 1):
      assert round_bet[s] == states.round_bet[b, s]
      assert tree_config.stack - round_bet[s] == nlhe.stacks(one)[0, s]
    assert start.to_act == 1 - seat and start.raises == states.raises[b]
    assert tree_config.min_increment == states.rules.big_blind
    actions = search.root_action_set(states, b, tree_config)
    options = nlhe.legal(one)
    kinds, amounts = actions.kind[0].tolist(), actions.amount[0].tolist()
    assert (FOLD in kinds) == bool(options.can_fold[0]) and kinds.count(CALL) == 1
    assert amounts[kinds.index(CALL)] == options.call_to[0]
    if options.can_raise[0]:
      assert max(amounts) == options.max_raise_to[0]
    assert nlhe.is_legal(nlhe.take(states, [b] * len(kinds)), actions.kind[0], actions.amount[0]).all()
    nodes = tree.build(tree_config)
    assert nodes[0].player == 1 - seat and len(nodes[0].children) == len(kinds)
    facing += options.can_fold[0]
    if b % 4 == 0:  # pokerkit, the referee, at the same state (the view before one more action)
      history = [(int(k), int(a)) for _, k, a in states.history[b, : states.num_actions[b]]]
      view = nlhe_oracle.replay(states.hole[b], states.board[b], [*history, (CALL, 0)]).views[len(history)]
      facing_bet = round_bet[1 - seat] - round_bet[seat]
      assert (view.actor, view.pot, view.call, view.can_fold) == (
        seat,
        nlhe.pot(one)[0],
        facing_bet,
        facing_bet > 0,
      )
      bets = [amount for kind, amount in zip(kinds, amounts, strict=True) if kind == RAISE]
      assert all(view.min_raise_to <= amount <= view.max_raise_to for amount in bets)
      refereed += 1
  assert facing >= 10 and refereed >= 10


def test_a_river_start_facing_an_off_tree_bet_offers_the_real_raises():
  # 2.5 x 437 = 1092.5: amounts round half up, as postflop-solver's do.
  config = tree.TreeConfig(
    3, 400, 9800, (tree.street_sizes('50%', '2.5x,a'),) * 3,
    start=tree.RoundStart((437, 0), 1, 1, 437, (True, False)), min_increment=100,
  )  # fmt: skip
  assert tree.root_actions(config) == [
    ('fold', 'fold', 0), ('call', 'call', 437), ('bet', 'raise 1093', 1093), ('bet', 'all-in 9800', 9800)
  ]  # fmt: skip
  nodes = tree.build(config)
  called = nodes[nodes[0].children[1]]
  assert called.kind == tree.SHOWDOWN and called.added == (437, 437)
  with pytest.raises(ValueError, match='round is over'):
    tree.RoundStart((0, 0), 1, 0, 0, (True, True))


# A polarised river: the bot (seat 0, in position) holds straights or air, the big blind bluff-catchers.
BOARD = parse_cards('AsKsQd7c2h')
VALUE = [(a, b) for a in parse_cards('JcJdJhJs') for b in parse_cards('TcTdThTs')]  # the nut straight
AIR = [(a, b) for a in parse_cards('6c6d6h6s') for b in parse_cards('5c5d5h5s')]  # 16 combos, 6-high
CATCHERS = [(a, b) for a in parse_cards('AcAdAh') for b in parse_cards('9c9d9h9s')]  # top pair


class Polarised:
  """A blueprint that makes the ranges: preflop the small blind raises to 300 with VALUE and AIR and
  folds the rest, the big blind calls with CATCHERS and folds the rest; afterwards it checks."""

  name = 'polarised'
  raisers = VALUE + AIR

  def strategy(self, state, holes):
    holes = np.asarray(holes, np.int64)
    batch, count = holes.shape[:2]
    options = nlhe.legal(state)
    kind = np.tile(np.array([FOLD, CALL, RAISE], np.int8), (batch, 1))
    amount = np.stack([np.zeros(batch, np.int64), options.call_to, np.where(options.can_raise, 300, 0)], 1)
    valid = np.stack([options.can_fold, np.ones(batch, bool), options.can_raise], axis=1)
    pairs = {pair_index(a, b) for a, b in self.raisers}, {pair_index(a, b) for a, b in CATCHERS}
    index = np.array([[PAIR[tuple(sorted(map(int, h)))] for h in row] for row in holes])
    probs = np.zeros((batch, count, 3))
    probs[..., 1] = 1.0
    for b in range(batch):
      if state.street[b] == 0:
        mine = np.isin(index[b], list(pairs[int(state.to_act[b])]))
        probs[b, :, :] = 0
        probs[b, :, 2 if state.to_act[b] == 0 else 1] = mine
        probs[b, :, 0] = ~mine
    return nlhe.ActionSet(kind, amount, valid), probs


def river_state(extra=()):
  """The polarised spot: raise to 300 and call preflop, checks to the river, the big blind checks (then
  `extra` actions)."""
  hole = np.array([[VALUE[0], CATCHERS[0]]])
  actions = [(RAISE, 300), (CALL, 0)] + [(CALL, 0)] * 5 + list(extra)
  return nlhe.from_actions([actions], hole, np.array([BOARD]))


RIVER_SIZES = ('100%', '')


def known_answer_bot(iterations, track_own=True):
  return search.search_policy(
    Polarised(), think_seconds=None, iterations=iterations, target_pct=None, river_sizes=RIVER_SIZES,
    streets=(3,), track_own=track_own, gadget=None,
  )  # fmt: skip


def test_on_a_polarised_river_the_nuts_bet_air_bluffs_at_the_pot_odds_and_a_catcher_calls():
  state = river_state()
  assert state.street[0] == 3 and state.to_act[0] == 0 and nlhe.pot(state)[0] == 600
  bot = known_answer_bot(400)
  actions, probs = bot.strategy(state, np.broadcast_to(HOLES, (1, len(HOLES), 2)))
  assert actions.kind[0, actions.valid[0]].tolist() == [CALL, RAISE]
  assert actions.amount[0, 1] == 600  # the pot
  bet = probs[0, :, 1]
  value = bet[[pair_index(*h) for h in VALUE]]
  air = bet[[pair_index(*h) for h in AIR]]
  assert value.min() > 0.97
  # Bluffs make a pot bet's caller indifferent with 1 bluff for 2 value bets: air bets half the time.
  assert abs(air.mean() - 0.5) < 0.1
  assert len(bot.solves) == 1
  # Facing a bet of 437 (off any tree): a bluff-catcher against half bluffs calls (the bettor's range
  # there is the blueprint's, which never bets: value and air as they were; the catcher's own check
  # weighs its range by its re-solve there).
  facing = river_state([(RAISE, 437)])
  actions, probs = bot.strategy(facing, np.array([[CATCHERS[0]]]))
  assert actions.kind[0, actions.valid[0]].tolist() == [FOLD, CALL]
  assert actions.amount[0, 1] == 437
  assert probs[0, 0, 1] > 0.97


class ValueOnly(Polarised):
  """As `Polarised`, but the small blind raises preflop with VALUE only (and folds AIR)."""

  raisers = VALUE


@pytest.mark.parametrize(
  'gadget',
  [None, 'maxmargin', *(pytest.param(g, marks=pytest.mark.slow) for g in ('resolve', 'maxmargin-prior'))],
)  # each compiles its solver
def test_a_gadget_answers_the_hands_that_the_prior_leaves_out(gadget):
  """The small blind's preflop raise shows the nut straight only, under the blueprint, which then checks
  and calls every bet; on the river the small blind bets 437 (off the tree) into 600. Unsafe, the
  bluff-catcher answers that prior and folds. With a gadget it calls: the blueprint calls there, so any
  fold would let air (6-high, which the prior leaves out) win more than its alternative, its value
  against the blueprint (Maxmargin-prior, whose opponent holds that prior half the time, calls too)."""
  facing = river_state([(RAISE, 437)])
  bot = search.search_policy(
    ValueOnly(), think_seconds=None, iterations=200, target_pct=None, river_sizes=RIVER_SIZES,
    streets=(3,), gadget=gadget,
  )  # fmt: skip
  actions, probs = bot.strategy(facing, np.array([[CATCHERS[0]]]))
  assert actions.kind[0, actions.valid[0]].tolist() == [FOLD, CALL]
  call = probs[0, 0, 1]
  if gadget is None:
    assert call < 0.05, call
  else:
    assert call > 0.95, (gadget, call)


def test_the_strategy_of_every_hand_is_solving_solve_on_the_same_spot():
  state = river_state()
  bot = known_answer_bot(60, track_own=False)
  actions, probs = bot.strategy(state, np.broadcast_to(HOLES, (1, len(HOLES), 2)))
  # The same spot built by hand: ranges from the sets, mixed with the range floor, and the tree.
  ranges = np.zeros((2, len(HOLES)))
  for seat, members in ((0, VALUE + AIR), (1, CATCHERS)):
    ranges[seat, [pair_index(a, b) for a, b in members]] = 1
  free = np.array([not ({int(a), int(b)} & set(BOARD)) for a, b in HOLES])
  ranges = ranges / ranges.sum(1, keepdims=True) * (1 - 1e-3) + 1e-3 * free / free.sum()
  config = tree.TreeConfig(
    3, 600, 19700, (tree.street_sizes(*RIVER_SIZES),) * 3,
    start=tree.RoundStart((0, 0), 1, 0, 0, (True, False)), min_increment=100,
  )  # fmt: skip
  game = subgame.build_subgame(config, list(BOARD), (ranges[1], ranges[0]))
  result = solving.solve(game, 'dcfr', target_pct=None, iterations=60)
  root = np.asarray(result.policy[0, :2]).T  # [H_board, A]
  hands = np.asarray(game.spot.hands)
  index = [pair_index(a, b) for a, b in hands]
  np.testing.assert_allclose(probs[0, index, :2], root, atol=2e-5)
  assert (probs[0, ~free] == [1, 0]).all()  # pairs the board blocks: a nominal check
  # A single hand's query is a cache hit with the same row.
  again = bot.strategy(state, np.array([[VALUE[3]]]))[1]
  np.testing.assert_array_equal(again[0, 0], probs[0, pair_index(*VALUE[3])])
  assert len(bot.solves) == 1


SMALL = dict(turn_sizes=(('a', ''), ('a', '')), river_sizes=('100%,a', 'a'))
UNSAFE = dict(gadget=None, turn_depth_limited=False)  # the plain search these tests check (not the default)


def short_matches(streets, hands):
  """Two fresh search bots (4 iterations a decision, unsafe, the turn solved to the end) against
  always-call, same seed: the chips, and the first bot."""
  results = []
  for _ in range(2):
    bot = search.search_policy(
      Scripted(), think_seconds=None, iterations=4, target_pct=None, streets=streets, **SMALL, **UNSAFE
    )
    result = match.play_match(bot, baselines.AlwaysCall(), hands=hands, seed=4, batch=hands)
    results.append((result.chips, bot))
  return results


def test_a_short_match_is_legal_and_deterministic_given_the_seed():
  (chips, bot), (again, _) = short_matches((3,), 4)
  np.testing.assert_array_equal(chips, again)
  assert len(bot.timings[3]) >= 2 and all(it == 4 for _, it, _, _ in bot.solves)
  assert set(bot.median_think_seconds()) >= {0, 3}
  summary = bot.decisions()  # what the match and LBR scripts report
  assert summary['river']['count'] == len(bot.timings[3]) and summary['river']['median_iterations'] == 4
  assert summary['river']['median_seconds'] == np.median(bot.timings[3])
  assert summary['preflop']['median_iterations'] is None  # the blueprint's: no re-solve


@pytest.mark.slow
def test_a_short_match_searching_turn_and_river_is_deterministic_given_the_seed():
  (chips, bot), (again, _) = short_matches((2, 3), 8)
  np.testing.assert_array_equal(chips, again)
  assert len(bot.timings[2]) >= 2 and len(bot.timings[3]) >= 2


def test_bad_configurations_are_refused():
  with pytest.raises(ValueError, match='budget'):
    search.SearchConfig(think_seconds=None, iterations=None)
  with pytest.raises(ValueError, match='flop, turn and river'):
    search.SearchConfig(streets=(0, 2))
  with pytest.raises(ValueError, match='runouts'):
    search.SearchConfig(runouts=0)
  for bad in (0, 49, True, 2.5):
    with pytest.raises(ValueError, match='river_cards must be a whole number in 1..48'):
      search.SearchConfig(river_cards=bad)
  with pytest.raises(ValueError, match='depth-limited search solves with dcfr'):
    search.SearchConfig(streets=(1, 2), algorithm='cfr+')
  with pytest.raises(ValueError, match='depth-limited search solves with dcfr'):
    search.SearchConfig(streets=(2, 3), turn_depth_limited=True, algorithm='cfr+')
  search.SearchConfig(streets=(2, 3), turn_depth_limited=False, algorithm='cfr+')  # a full turn: any
  with pytest.raises(ValueError, match='turn_depth_limited'):
    search.SearchConfig(turn_depth_limited=1)
  assert search.SearchConfig(streets=(1, 2, 3)).sizes(1)[0] == tree.street_sizes(*depth_limited.FLOP_SIZES)
  turn_round = search.SearchConfig(turn_depth_limited=True).sizes(2)
  assert turn_round[0] == tree.street_sizes(*depth_limited.TURN_ROUND_SIZES)
  with pytest.raises(ValueError, match='think_seconds'):
    search.SearchConfig(think_seconds=0)
  for bad in (-1, 2.5, None, (1,), (1, -1), True):
    with pytest.raises(ValueError, match='warm_start'):
      search.SearchConfig(warm_start=bad)
  with pytest.raises(ValueError, match='gadget must be one of resolve, maxmargin'):
    search.SearchConfig(gadget='max-margin')
  with pytest.raises(ValueError, match='starts cold'):
    search.SearchConfig(gadget='resolve', warm_start=(0, 3))


def test_search_policies_by_name():
  bot = bots.resolve_policy('search:always-call', think_seconds=0.5)
  assert isinstance(bot, search.SearchPolicy) and bot.name == 'search:always-call'
  assert bot.config.think_seconds == 0.5 and bot.blueprint.name == 'always-call'
  assert bots.resolve_policy('search:random').config.think_seconds == defaults.THINK_SECONDS
  assert bots.resolve_policy('search:random', streets=(3,)).config.streets == (3,)
  fixed = bots.resolve_policy('search:random', iterations=7).config
  assert (fixed.iterations, fixed.think_seconds, fixed.target_pct) == (7, None, None)
  parsed = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-iterations', '7'])
  assert parsed.search_iterations == 7
  parsed = cli.build_parser().parse_args(
    ['match', 'search:random', 'random', '--search-streets', 'river,turn']
  )
  assert parsed.search_streets == (2, 3)
  parsed = cli.build_parser().parse_args(
    ['match', 'search:random', 'random', '--search-streets', 'flop,turn,river']
  )
  assert parsed.search_streets == (1, 2, 3)
  assert bots.resolve_policy('search:random', warm_start=5, gadget='none').config.warm_start == (5, 5)
  assert bots.resolve_policy('search:random', warm_start=(2, 0)).config.warm_start == (2, 0)
  assert bots.resolve_policy('search:random').config.warm_start == defaults.WARM_START
  assert bots.resolve_policy('search:random', gadget='maxmargin').config.gadget == 'maxmargin'
  assert bots.resolve_policy('search:random', gadget='none').config.gadget is None  # unsafe
  parsed = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-gadget', 'resolve'])
  assert parsed.search_gadget == 'resolve'
  args = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-gadget', 'none'])
  assert common.resolve_policy('search:random', args).config.gadget is None
  # The default bot: the one measured stronger and less exploitable than its blueprint.
  args = cli.build_parser().parse_args(['match', 'search:random', 'random'])
  config = common.resolve_policy('search:random', args).config
  assert (config.streets, config.turn_depth_limited, config.river_cards) == ((1, 2, 3), True, 6)
  assert (config.gadget, config.think_seconds) == ('maxmargin-prior', 0.1)
  assert (defaults.GADGET, defaults.THINK_SECONDS, defaults.RIVER_CARDS) == ('maxmargin-prior', 0.1, 6)
  args = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-turn', 'full'])
  assert common.resolve_policy('search:random', args).config.turn_depth_limited is False
  args = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-turn', 'depth-limited'])
  assert common.resolve_policy('search:random', args).config.turn_depth_limited is True
  args = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-river-cards', '12'])
  assert common.resolve_policy('search:random', args).config.river_cards == 12
  args = cli.build_parser().parse_args(['match', 'search:random', 'random', '--flop-seconds', '0.8'])
  config = common.resolve_policy('search:random', args).config
  assert config.flop_seconds == config.seconds(1) == 0.8 and config.seconds(3) == defaults.THINK_SECONDS
  for text, counts in (('5', (5, 5)), ('1,0', (1, 0)), (' 0, 3', (0, 3))):
    parsed = cli.build_parser().parse_args(['match', 'search:random', 'random', '--search-warm-start', text])
    assert parsed.search_warm_start == counts
  for spec, message in (('search:', 'takes a blueprint file'), ('search:nobody', "'nobody' is neither")):
    with pytest.raises(ValueError, match=message):
      bots.resolve_policy(spec)


@pytest.mark.parametrize(
  'args,message',
  [
    (('search:nobody', 'random'), "'nobody' is neither a baseline"),
    (('search:always-call', 'random', '--think-seconds', '0'), 'must be a positive number of seconds'),
    (('search:always-call', 'random', '--think-seconds', 'long'), "'long' is not a number"),
    (
      ('search:always-call', 'random', '--search-streets', 'preflop'),
      "re-solves on 'flop', 'turn' and 'river'",
    ),
    (('always-call', 'random', '--think-seconds', '2'), '--think-seconds applies to a search: policy only'),
    (('always-call', 'random', '--search-streets', 'river'), '--search-streets applies to a search: policy'),
    (
      ('always-call', 'random', '--search-iterations', '5'),
      '--search-iterations applies to a search: policy',
    ),
    (('search:always-call', 'random', '--search-iterations', '0'), 'must be'),
    (
      ('always-call', 'random', '--search-warm-start', '5'),
      '--search-warm-start applies to a search: policy',
    ),
    (('search:always-call', 'random', '--search-warm-start', '-1'), 'give K or FLOP,RIVER'),
    (('search:always-call', 'random', '--search-warm-start', '1,2,3'), 'give K or FLOP,RIVER'),
    (('search:random', 'random', '--think-seconds', '1', '--search-iterations', '5'), 'two budgets'),
    (('search:random', 'random', '--flop-seconds', '1', '--search-iterations', '5'), 'two budgets'),
    (('always-call', 'random', '--flop-seconds', '1'), '--flop-seconds applies to a search: policy only'),
    (('search:always-call', 'random', '--flop-seconds', '-1'), 'must be a positive number of seconds'),
    (('always-call', 'random', '--search-gadget', 'resolve'), '--search-gadget applies to a search: policy'),
    (('search:always-call', 'random', '--search-gadget', 'safe'), "invalid choice: 'safe'"),
    (('always-call', 'random', '--search-turn', 'full'), '--search-turn applies to a search: policy'),
    (('search:always-call', 'random', '--search-turn', 'half'), "invalid choice: 'half'"),
    (
      ('always-call', 'random', '--search-river-cards', '8'),
      '--search-river-cards applies to a search: policy',
    ),
    (
      ('search:always-call', 'random', '--search-turn', 'full', '--search-river-cards', '8'),
      'applies to a depth-limited turn, not --search-turn full',
    ),
    (('search:always-call', 'random', '--search-warm-start', '2'), 'or no gadget (--search-gadget none)'),
    (
      ('search:always-call', 'random', '--search-turn', 'depth-limited', '--search-river-cards', '49'),
      '48 river',
    ),
    (
      ('search:always-call', 'random', '--search-turn', 'depth-limited', '--search-river-cards', '0'),
      'must be',
    ),
    (
      ('search:always-call', 'random', '--search-gadget', 'resolve', '--search-warm-start', '2'),
      'a river re-solve with a gadget starts cold',
    ),
    (('blueprint', 'evaluate', 'random', '--lbr', '--think-seconds', '2'), 'applies to a search: policy'),
  ],
)
def test_match_command_bad_search_input_is_one_line_and_exit_status_2(args, message, capsys):
  command = list(args) if args[0] == 'blueprint' else ['match', *args]
  try:
    code = cli.main([*command, '--quiet'])
  except SystemExit as exit:  # argparse's own errors
    code = exit.code
  err = capsys.readouterr().err
  assert code == 2 and message in err and 'Traceback' not in err


@pytest.mark.slow
def test_local_best_response_takes_the_search_bot():
  bot = search.search_policy(
    Scripted(), think_seconds=None, iterations=4, target_pct=None, streets=(3,), **SMALL, **UNSAFE
  )
  result = lbr.local_best_response(bot, hands=4, seed=2, batch=4)
  fresh = search.search_policy(
    Scripted(), think_seconds=None, iterations=4, target_pct=None, streets=(3,), **SMALL, **UNSAFE
  )
  again = lbr.local_best_response(fresh, hands=4, seed=2, batch=4)
  assert result.hands == 4 and np.isfinite(result.lbr_mbb_per_hand)
  np.testing.assert_array_equal(result.chips, again.chips)
  assert len(bot.timings[3]) >= 1


def test_an_empty_batch_gets_an_empty_answer():
  bot = search.search_policy(Scripted(), think_seconds=None, iterations=1)
  actions, probs = bot.strategy(nlhe.take(nlhe.deal(0, 2), np.zeros(2, bool)), np.zeros((0, 1, 2), np.int8))
  assert actions.kind.shape == (0, 1) and probs.shape == (0, 1, 1)


@pytest.fixture(scope='module')
def blueprint(tmp_path_factory):
  """A small-preset blueprint with random probabilities on cheap buckets (as test_blueprint_policy's)."""
  import os  # noqa: PLC0415
  import sys  # noqa: PLC0415

  # tests/poker/blueprint is on sys.path only where pytest collected a test there: run alone, this file
  # puts it there itself.
  blueprint_tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'blueprint')
  if blueprint_tests not in sys.path:
    sys.path.append(blueprint_tests)
  from test_blueprint_policy import SumBuckets, random_probabilities, small_tree  # noqa: PLC0415

  from jaxcfr.poker.blueprint import files, load_policy  # noqa: PLC0415
  from jaxcfr.poker.rules.cards import FULL_DECK  # noqa: PLC0415

  abstract, buckets = small_tree(), SumBuckets()
  path = str(tmp_path_factory.mktemp('blueprint') / 'small.npz')
  metadata = files.metadata_for(
    abstract, bets_name='small', deck=FULL_DECK, board_cards=(0, 3, 1, 1), buckets=buckets.buckets,
    abstraction_fingerprint=buckets.fingerprint,
  )  # fmt: skip
  files.save_blueprint(path, abstract, random_probabilities(abstract, buckets.buckets), metadata)
  return load_policy(path, tables=buckets)


def test_search_over_a_blueprint_answers_off_tree_histories_legally_and_deterministically(blueprint):
  """River states after random play (off-tree sizes the blueprint translates): the match engine's and
  LBR's checks pass, every action is legal, and a fresh bot gives the same answer."""
  states = random_states(9, 32, 16)
  states = nlhe.take(states, np.flatnonzero(states.street == 3)[:6])
  assert len(states.street) == 6
  answers = []
  for _ in range(2):
    bot = search.search_policy(
      blueprint, think_seconds=None, iterations=3, target_pct=None, streets=(3,), **SMALL, **UNSAFE
    )
    actions, probs = bot.strategy(states, states.hole[np.arange(6), states.to_act][:, None])
    match.check_strategy(bot, actions, probs, 6)
    lbr.query(bot, states)  # all 1,326 pairs: cached re-solves
    assert len(bot.solves) >= 6 and bot.name.startswith('search:blueprint')
    for slot in range(actions.kind.shape[1]):
      on = actions.valid[:, slot]
      assert nlhe.is_legal(states, actions.kind[:, slot], actions.amount[:, slot])[on].all()
    answers.append(probs)
  np.testing.assert_array_equal(*answers)


def expected_on_children(state_b, children):
  """The Scripted blueprint's strategy [children, 1326] over a search node's children at one real state,
  pair by pair: fold and check/call as they are; each of its raises (to the amounts `raise_tos` gives)
  split between the children's raises next to it with `pseudo_harmonic` odds on pot fractions, all of
  it on the nearest end outside them; pairs the board blocks uniform."""
  options = nlhe.legal(state_b)
  mine, theirs = state_b.round_bet[0, state_b.to_act[0]], state_b.round_bet[0, 1 - state_b.to_act[0]]
  top = max(mine, theirs)
  after_call = nlhe.pot(state_b)[0] + top - mine
  raise_tos = Scripted.raise_tos(state_b)[0]
  ours = [
    (slot, (amount - top) / after_call) for slot, (kind, amount) in enumerate(children) if kind == RAISE
  ]
  board = set(nlhe.visible_board(state_b)[0].tolist()) - {-1}
  n = int(state_b.num_actions[0])
  out = np.zeros((len(children), len(HOLES)))
  for h, (a, b) in enumerate(HOLES.tolist()):
    if {a, b} & board:
      out[:, h] = 1 / len(children)
      continue
    valid = [bool(options.can_fold[0]), True, bool(options.can_raise[0]), bool(options.can_raise[0])]
    valid[3] &= raise_tos[1] != raise_tos[0]
    weights = [Scripted.weight(a, b, n, j) * valid[j] for j in range(4)]
    total = sum(weights)
    for j, w in enumerate(weights):
      p = w / total
      if not p:
        continue
      if j < 2:
        out[[c for c, (kind, _) in enumerate(children) if kind == (FOLD, CALL)[j]], h] += p
        continue
      x = (raise_tos[j - 2] - top) / after_call
      below = [(f, s) for s, f in ours if f <= x]
      above = [(f, s) for s, f in ours if f >= x]
      if below and above and max(below)[0] < min(above)[0]:
        (fa, sa), (fb, sb) = max(below), min(above)
        out[sa, h] += p * pseudo_harmonic(x, fa, fb)
        out[sb, h] += p * (1 - pseudo_harmonic(x, fa, fb))
      elif below or above:
        out[(max(below) if below else min(above))[1], h] += p
    out[:, h] /= out[:, h].sum()
  return out


def test_the_blueprints_strategy_on_a_search_tree_follows_its_actions_pair_by_pair():
  """`blueprint_strategies` at every decision node of river and flop search trees from real states after
  random play: each node's real state replayed action by action through the engine, the Scripted
  blueprint's probabilities worked out pair by pair, its raises split between the tree's sizes by
  pseudo-harmonic odds (`expected_on_children`)."""
  states = random_states(4, 32, 16)
  checked = 0
  for street, count in ((3, 3), (1, 2)):
    rows = np.flatnonzero(states.street == street)[:count]
    assert len(rows) == count
    config = search.SearchConfig(streets=(street,))
    for b in rows:
      nodes = tree.build(search.subgame_config(states, b, config), first_round_only=street == 1)
      targets = [i for i, node in enumerate(nodes) if node.kind == tree.DECISION][:12]
      got = search.blueprint_strategies(Scripted(), states, int(b), nodes, targets)
      for node in targets:
        line, i = [], node
        while nodes[i].parent >= 0:
          line.append(depth_limited.line_action(nodes[i].label))
          i = nodes[i].parent
        hand = nlhe.take(states, [b])
        for kind, amount in reversed(line):
          hand = nlhe.apply(hand, np.array([kind]), np.array([amount]))
        children = [depth_limited.line_action(nodes[c].label) for c in nodes[node].children]
        np.testing.assert_allclose(got[node], expected_on_children(hand, children), rtol=1e-9, atol=1e-12)
        checked += 1
  assert checked >= 20


def warm_start_gaps(blueprint, state, street, warms, **options):
  """Per warm start of `warms`: the largest difference between the root strategy of a one-iteration
  re-solve of `state` (one hand, the bot to act) and the blueprint's root strategy on the search tree
  (pairs the board leaves), and the bot's probabilities [1, 1326, A]."""
  holes = np.broadcast_to(HOLES, (1, len(HOLES), 2))
  config = search.SearchConfig(streets=(street,), **options)
  nodes = tree.build(search.subgame_config(state, 0, config), first_round_only=street == 1)
  root = search.blueprint_strategies(blueprint, state, 0, nodes, [0])[0].T  # [1326, A]
  blocked = lbr.blocked(nlhe.visible_board(state))[0]
  out = []
  for warm in warms:
    bot = search.search_policy(
      blueprint, think_seconds=None, iterations=1, target_pct=None, streets=(street,), warm_start=warm,
      gadget=None, **options,
    )  # fmt: skip
    actions, probs = bot.strategy(state, holes)
    match.check_strategy(bot, actions, probs[:, :1], 1)
    out.append((float(np.abs(probs[0, ~blocked, : root.shape[1]] - root[~blocked]).max()), probs))
  return out


def test_a_warm_start_carries_the_blueprint_into_river_re_solves():
  """After K = 200 warm-start iterations one solver iteration moves the re-solved root strategy from the
  blueprint's on the search tree by at most that iteration's weight in DCFR's average, 201^3 / (1^3 +
  ... + 201^3) = 0.02 (the root's reach is the range in every iteration); without a warm start it is
  further from it; a fresh warm-started bot gives the same answer."""
  states = random_states(5, 32, 16)
  state = nlhe.take(states, np.flatnonzero(states.street == 3)[:1])
  (cold, _), (warm, first), (_, again) = warm_start_gaps(
    Scripted(), state, 3, (0, 200, 200), river_sizes=('50%,a', '2.5x')
  )
  assert cold > 0.2 and warm <= 201**3 / sum(t**3 for t in range(1, 202)) + 1e-6, (cold, warm)
  np.testing.assert_array_equal(first, again)


# The flop's leaf values take about two minutes for the three bots here: behind -m slow.
@pytest.mark.parametrize('street', [3, pytest.param(1, marks=pytest.mark.slow)])
def test_blending_moves_the_root_from_the_blueprints_strategy_to_the_re_solves(street):
  """`blend` = B: after N iterations the bot plays (1 - alpha) the blueprint's root strategy on the
  search tree + alpha the re-solve's, alpha = min(1, N / B), pair by pair (river and flop re-solves;
  B = N is the re-solve alone)."""
  states = random_states(5, 32, 16)
  state = nlhe.take(states, np.flatnonzero(states.street == street)[:1])
  holes = np.broadcast_to(HOLES, (1, len(HOLES), 2))
  options = dict(river_sizes=('50%,a', '2.5x'), streets=(street,), warm_start=0, gadget=None)
  nodes = tree.build(
    search.subgame_config(state, 0, search.SearchConfig(**options)), first_round_only=street == 1
  )
  blueprint = search.blueprint_strategies(Scripted(), state, 0, nodes, [0])[0].T  # [1326, A]
  width, open_ = blueprint.shape[1], ~lbr.blocked(nlhe.visible_board(state))[0]

  def played(blend):
    bot = search.search_policy(
      Scripted(), think_seconds=None, iterations=6, target_pct=None, blend=blend, **options
    )
    actions, probs = bot.strategy(state, holes)
    match.check_strategy(bot, actions, probs[:, :1], 1)
    return probs[0, open_, :width]

  alone, quarter, whole = played(None), played(24), played(6)
  assert np.abs(alone - blueprint[open_]).max() > 0.05  # the two differ: the check can fail
  np.testing.assert_allclose(whole, alone, atol=1e-6)
  np.testing.assert_allclose(quarter, 0.75 * blueprint[open_] + 0.25 * alone, atol=1e-5)
  with pytest.raises(ValueError, match='blend must be a whole number'):
    search.SearchConfig(blend=0)


@pytest.mark.parametrize('gadget', [None, pytest.param('maxmargin', marks=pytest.mark.slow)])
def test_batched_re_solves_equal_re_solves_one_by_one(monkeypatch, gadget):
  """River states after random play, asked in one query: the bot that solves them in one batch
  (`resolve_batch`, one vmapped program for the envelope key) gives the one-by-one bot's strategies
  (float32: to 1e-4) and iteration counts. (Turn batches run the same code; their compiling is left to
  -m slow's match tests.)"""
  states = random_states(11, 48, 16)
  states = nlhe.take(states, np.flatnonzero(states.street == 3)[:6])
  assert len(states.street) == 6
  batches = []
  original = search.resolve_batch

  def spy(state, rows, *args, **kwargs):
    batches.append(len(rows))
    return original(state, rows, *args, **kwargs)

  monkeypatch.setattr(search, 'resolve_batch', spy)
  answers = []
  for batch in (False, True):
    bot = search.search_policy(
      Scripted(), think_seconds=None, iterations=4, target_pct=None, batch_resolves=batch, streets=(3,),
      track_own=False, gadget=gadget, **SMALL,
    )  # fmt: skip
    actions, probs = bot.strategy(states, np.broadcast_to(HOLES, (6, len(HOLES), 2)))
    match.check_strategy(bot, actions, probs[:, :1], 6)
    answers.append((actions, probs, [(street, it) for street, it, *_ in bot.solves]))
  assert batches == [6]
  (a0, p0, s0), (a1, p1, s1) = answers
  for x, y in zip(a0, a1, strict=True):
    np.testing.assert_array_equal(x, y)
  np.testing.assert_allclose(p0, p1, atol=1e-4)
  assert s0 == s1 == [(3, 4)] * 6


class OwnGameOnly:
  """`policy` (a blueprint) that refuses to be asked about hands of any other game than its own."""

  def __init__(self, policy):
    self.policy, self.tree, self.asked = policy, policy.tree, 0

  @property
  def name(self):
    return self.policy.name

  def strategy(self, state, holes):
    assert state.rules == self.tree.rules, state.rules
    self.asked += 1
    return self.policy.strategy(state, holes)


def test_the_search_bot_re_solves_at_the_real_stacks_and_asks_its_blueprint_in_its_own_game(
  blueprint, monkeypatch
):
  """A search over a 200-bb blueprint playing 25-bb hands with antes plays them itself (no game of its
  own, as the baselines), builds its subgames with the real pot (antes in) and stacks behind (2,500
  less what is in: not 20,000 read back), asks its blueprint only in the blueprint's game (preflop, the
  ranges), and answers legally; the depth-aware bot over searches of two blueprints picks the one
  built nearest the stack."""
  from jaxcfr.poker.eval import depth  # noqa: PLC0415

  short = nlhe.NoLimitRules(50, 100, 2_500, ante=10)
  own = OwnGameOnly(blueprint)
  bot = search.search_policy(
    own, think_seconds=None, iterations=3, target_pct=None, streets=(3,), **SMALL, **UNSAFE
  )
  assert depth.rules_of(bot) is None and depth.at_rules(bot, short) is bot
  assert depth.built_for(bot) == blueprint.tree.rules
  configs = []
  config_of = search.subgame_config
  monkeypatch.setattr(search, 'subgame_config', lambda *a: configs.append(config_of(*a)) or configs[-1])
  actions = [(RAISE, 300), (CALL, 0), (RAISE, 400), (CALL, 0), (CALL, 0), (CALL, 0)]
  state = nlhe.from_actions([actions], np.array([[VALUE[0], CATCHERS[0]]]), np.array([BOARD]), short)
  assert state.street[0] == 3 and state.to_act[0] == 1
  acts, probs = bot.strategy(state, state.hole[:, state.to_act[0]][:, None])
  match.check_strategy(bot, acts, probs, 1)
  on = acts.valid[0]
  assert all(nlhe.is_legal(state, acts.kind[:, a], acts.amount[:, a])[0] for a in np.flatnonzero(on))
  assert configs and {(c.pot, c.stack) for c in configs} == {(1_420, 1_790)}  # 2,500 less the 710 in
  assert acts.amount[0][on & (acts.kind[0] == RAISE)].max() == 1_790  # the real all-in, this round
  assert own.asked > 0
  deep = search.search_policy(blueprint, think_seconds=None, iterations=3, target_pct=None, streets=(3,))
  shallow = types.SimpleNamespace(name='shallow', tree=types.SimpleNamespace(rules=short), strategy=None)
  near = search.search_policy(shallow, think_seconds=None, iterations=3, target_pct=None, streets=(3,))
  aware = depth.DepthAware([deep, near])
  assert aware.nearest(nlhe.NoLimitRules(50, 100, 3_000)) is near
  assert aware.nearest(nlhe.NoLimitRules(50, 100, 10_000)) is deep
