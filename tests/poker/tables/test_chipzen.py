"""jaxcfr's bots at Chipzen's tables and Chipzen's bots in jaxcfr's matches: the SDK's own conformance
scenarios, the request read back into the hand it came from, a valid answer at any blinds, ante and
stacks, the deadline, and the SDK's example bots in a duplicate match."""

import time

import numpy as np
import pytest

from jaxcfr.poker import bots
from jaxcfr.poker.eval import baselines, match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import card_text
from jaxcfr.poker.search.bot import SearchConfig
from jaxcfr.poker.tables import chipzen as table_chipzen
from jaxcfr.poker.tables.hand import TableHand, TableRules
from jaxcfr.poker.tables.seat import Seat

chipzen = pytest.importorskip('chipzen')
conformance = pytest.importorskip('chipzen.conformance')


def _request(hand: TableHand, dealer_seat: int, history: list[dict], hand_number: int = 1):
  """The `chipzen.GameState` a Chipzen table sends the player to act in `hand`, seats numbered with
  the dealer at `dealer_seat`."""
  player = hand.to_act
  seat_of = lambda p: dealer_seat if p == 0 else 1 - dealer_seat  # noqa: E731
  options = hand.legal()
  behind = [hand.stacks[p] - hand.committed[p] for p in range(2)]
  to_call = options.call_to - hand.round_bet[player]
  valid = (['fold', 'call'] if to_call > 0 else ['check']) + (
    ['raise', 'all_in'] if options.can_raise else []
  )
  return chipzen.GameState(
    hand_number=hand_number,
    phase=table_chipzen.PHASES[hand.street],
    hole_cards=[chipzen.Card.from_str(card_text(c)) for c in hand.hole] if player == hand.seat else [],
    board=[chipzen.Card.from_str(card_text(c)) for c in hand.board],
    pot=sum(hand.committed),
    your_stack=behind[player],
    opponent_stacks=[behind[1 - player]],
    your_seat=seat_of(player),
    dealer_seat=dealer_seat,
    to_call=to_call,
    min_raise=options.min_raise_to,
    max_raise=options.max_raise_to,
    valid_actions=valid,
    action_history=list(history),
  )


def _random_table(rng):
  """Blinds, an ante of 0 to 0.25 big blinds and stacks of 1 to 400 big blinds."""
  big = int(rng.choice([2, 10, 20, 100, 200, 1000]))
  small = int(rng.integers(1, big + 1)) if rng.random() < 0.3 else big // 2
  ante = int(rng.integers(0, big // 4 + 1)) if rng.random() < 0.5 else 0
  stacks = tuple(int(rng.integers(big, 400 * big + 1)) for _ in range(2))
  return TableRules(small, big, ante), stacks


def _random_hands(seed: int, count: int):
  """Random hands at random tables with random legal actions: at each decision, (the hand so far, the
  dealer's Chipzen seat, the history a Chipzen table would show)."""
  rng = np.random.default_rng(seed)
  for _ in range(count):
    rules, stacks = _random_table(rng)
    cards = rng.permutation(52)[:9]
    seat = int(rng.integers(2))
    hand = TableHand(rules, stacks, seat, tuple(int(c) for c in cards[:2]))
    dealer = int(rng.integers(2))
    history = []
    while not hand.finished:
      while len(hand.board) < nlhe.BOARD_SIZES[hand.street]:
        hand.deal([int(c) for c in cards[4 + len(hand.board) : 4 + nlhe.BOARD_SIZES[hand.street]]])
      if hand.finished:
        break
      yield hand, dealer, history
      options = hand.legal()
      player = hand.to_act
      pick = rng.random()
      before, street = hand.committed[player], hand.street
      if options.can_fold and pick < 0.15:
        hand.apply(nlhe.FOLD)
        entry = ('fold', 0)
      elif options.can_raise and pick > 0.6:
        to = int(rng.integers(options.min_raise_to, options.max_raise_to + 1))
        hand.apply(nlhe.RAISE, to)
        entry = ('all_in' if to == options.max_raise_to else 'raise', to)
      else:
        hand.apply(nlhe.CALL)
        added = hand.committed[player] - before
        entry = ('call', added) if added else ('check', 0)
      seat_of = dealer if player == 0 else 1 - dealer
      history.append(
        {'seat': seat_of, 'action': entry[0], 'amount': entry[1], 'phase': table_chipzen.PHASES[street]}
      )


def test_a_request_reads_back_into_its_hand():
  checked = 0
  for hand, dealer, history in _random_hands(1, 60):
    if hand.to_act != hand.seat:
      continue
    read = table_chipzen.table_hand(_request(hand, dealer, history), hand.rules)
    assert (read.street, read.to_act, read.committed, read.round_bet) == (
      hand.street, hand.to_act, hand.committed, hand.round_bet,
    )  # fmt: skip
    assert read.legal() == hand.legal()
    assert list(read.board) == list(hand.board)
    checked += 1
  assert checked > 100


@pytest.mark.parametrize('spec', ['equity', 'random'])
def test_the_answer_is_valid_at_any_blinds_ante_and_stacks(spec):
  seat = table_chipzen.ChipzenSeat(Seat(bots.resolve_policy(spec), seed=3))
  answers = set()
  for number, (hand, dealer, history) in enumerate(_random_hands(2, 40)):
    if hand.to_act != hand.seat:
      continue
    seat.match_start(
      {
        'game_config': {
          'small_blind': hand.rules.small_blind,
          'big_blind': hand.rules.big_blind,
          'ante': hand.rules.ante,
        }
      }
    )
    state = _request(hand, dealer, history, hand_number=number)
    name, amount = seat.decide(state)
    assert name in state.valid_actions
    if name == 'raise':
      assert state.min_raise <= amount <= state.max_raise
    answers.add(name)
  assert seat.faults == 0
  assert {'check', 'call'} & answers and ('raise' in answers or 'all_in' in answers)


def test_the_sdk_conformance_scenarios_pass():
  bot = table_chipzen.bot_class()(table_chipzen.ChipzenSeat(Seat(baselines.REGISTRY['equity']())))
  results = conformance.run_conformance_checks(bot, timeout_s=20)
  assert results and all(check.severity == 'pass' for check in results), results


class _SlowSearch:
  """A search bot's face (`config`, `blueprint`, `solves`) whose answers take `seconds`."""

  def __init__(self, seconds):
    self.config = SearchConfig(think_seconds=0.05)
    self.blueprint = baselines.REGISTRY['always-call']()
    self.solves = []
    self.name = 'slow'
    self.seconds = seconds

  def strategy(self, state, holes):
    time.sleep(self.seconds)
    return baselines.REGISTRY['always-pot']().strategy(state, holes)


def test_a_search_past_the_deadline_is_answered_by_its_blueprint():
  seat = Seat(_SlowSearch(1.0), margin=0.05)
  hand = TableHand(TableRules(50, 100), (20_000, 20_000), 0, (48, 49))
  hand.apply(nlhe.CALL)
  hand.apply(nlhe.CALL)
  hand.deal([0, 5, 10])
  hand.apply(nlhe.CALL)
  started = time.monotonic()
  assert seat.act(hand, started + 0.3) == (nlhe.CALL, 0)  # the blueprint checks
  assert time.monotonic() - started < 0.4 and seat.last.by == 'blueprint'
  seat.act(hand, time.monotonic() + 0.3)  # the search still runs: the blueprint again, at once
  assert seat.last.by == 'blueprint' and seat.last.seconds < 0.1
  time.sleep(1.0)
  kind, _ = seat.act(hand, None)  # no clock: the search answers (a pot-size bet)
  assert seat.last.by == 'policy' and kind == nlhe.RAISE


def test_sdk_example_bots_play_a_duplicate_match():
  for name in table_chipzen.EXAMPLES:
    policy = bots.resolve_policy(f'chipzen:{name}')
    first = match.play_match(baselines.REGISTRY['equity'](), policy, 40, seed=5)
    again = match.play_match(
      baselines.REGISTRY['equity'](), bots.resolve_policy(f'chipzen:{name}'), 40, seed=5
    )
    assert first.mbb_per_hand == again.mbb_per_hand  # the bot's own random draws are seeded
    # The random bot folds when it draws all_in, a check being free or not: mapped to the check.
    assert (policy.invalid == 0) == (name != 'random'), (name, policy.invalid)


def test_a_chipzen_spec_that_names_no_bot_is_one_line(tmp_path):
  with pytest.raises(ValueError, match='no file'):
    bots.resolve_policy('chipzen:missing.py')
  empty = tmp_path / 'empty.py'
  empty.write_text('x = 1\n')
  with pytest.raises(ValueError, match='0 Bot subclasses'):
    bots.resolve_policy(f'chipzen:{empty}')
  with pytest.raises(ValueError, match='cannot import'):
    bots.resolve_policy('chipzen:no_such_module_here:Bot')


def test_jaxcfr_chipzen_run_plays_a_match_through_the_sdk_client():
  from chipzen_server import ChipzenServer  # noqa: PLC0415 (tests/support)
  from cli_runner import run_cli  # noqa: PLC0415

  server = ChipzenServer(hands=30, blinds=(5, 10), ante=1, stack=400, seed=4)
  with server.running() as url:
    code, out, err = run_cli('chipzen', 'run', '--bot', 'equity', '--url', url, '--token', 't')
  assert code == 0, err
  assert server.errors == [] and server.decisions > 20
  assert 'compiled in' in out and 'faults 0' in out


def test_jaxcfr_chipzen_run_says_what_is_missing_in_one_line():
  code, _, err = run_cli_lines('chipzen', 'run', '--bot', 'no-such-bot', '--url', 'ws://127.0.0.1:9/x')
  assert code == 2 and 'no-such-bot' in err


def run_cli_lines(*args):
  from cli_runner import run_cli  # noqa: PLC0415

  code, out, err = run_cli(*args)
  assert len(err.strip().splitlines()) <= 2, err  # the message, and where help is at most
  return code, out, err


def test_a_street_whose_least_search_does_not_fit_is_the_blueprints_in_the_tracked_ranges_too():
  search = _SlowSearch(0.0)
  seat = Seat(search, margin=0.0)
  for seconds, iterations in ((0.9, 10), (0.8, 10), (5.0, 10)):  # the flop's re-solves (one compiled)
    seat._timings[1].append((seconds, iterations, 0.1))
  for seconds, iterations in ((0.11, 10), (0.1, 30)):
    seat._timings[2].append((seconds, iterations, 0.1))
  assert seat._estimates(1, search.config)[1] == pytest.approx(0.9)  # medians: the compile is once
  assert seat._choose(1, 0.4) == (seat._fallback, 'blueprint')
  policy, by = seat._choose(2, 0.4)
  assert by == 'policy' and search.config.streets == (2, 3) and search.config.think_seconds == 0.05
