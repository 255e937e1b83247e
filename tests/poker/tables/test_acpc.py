"""The ACPC table client: game definitions, match states, a scripted dealer on localhost (hands with a
fold, raises converted to the dealer's hand totals, a showdown, an all-in, a split pot; each fault of the
dealer's side), the command line's bad input, and, where `JAXCFR_ACPC_DEALER` names a built `dealer`, a
match on the real dealer whose log must agree with ours hand by hand."""

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest
from cli_runner import run_cli

from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.tables import acpc

LIMIT_GAME = acpc.DEFAULT_GAME.replace('nolimit', 'limit').replace(
  'stack = 20000 20000', 'raiseSize = 100 100 200 200'
)
REPLY = re.compile(r'MATCHSTATE:\d+:\d+:[^:]*:[^:]*:(?:f|c|r\d+)')


# Game definitions and match states.


def test_the_default_game_maps_positions_to_seats_from_its_definition():
  game = acpc.load_game()
  assert game.first_player == (1, 0, 0, 0) and game.blind == (100, 50)
  assert (game.seat(0), game.seat(1)) == (1, 0)  # position 0 posts the big blind: nlhe's seat 1
  assert game.rules.small_blind == 50 and game.rules.big_blind == 100 and game.stacks == (20_000, 20_000)
  fixed = acpc.load_game(
    acpc.DEFAULT_GAME.replace('blind = 100 50', 'blind = 50 100').replace('2 1 1 1', '1 2 2 2')
  )
  assert (fixed.seat(0), fixed.seat(1)) == (0, 1)
  odd = acpc.load_game(acpc.DEFAULT_GAME.replace('stack = 20000 20000', 'stack=5000 300'))
  assert odd.stacks == (300, 5000)  # position 1, the small blind, has 300


@pytest.mark.parametrize(
  'change, message',
  [
    (('nolimit', 'limit'), 'limit game'),
    (('numPlayers = 2', 'numPlayers = 3'), 'needs 3 values of blind'),
    (('END', 'numPlayers = 3\nstack = 900 900 900\nblind = 100 50 0\nEND'), 'heads-up'),
    (('numRounds = 4', 'numRounds = 3'), '3 rounds'),
    (('numRanks = 13', 'numRanks = 6'), '6 ranks x 4 suits'),
    (('numHoleCards = 2', 'numHoleCards = 1'), '1 hole cards'),
    (('0 3 1 1', '0 3 1 2'), '0 3 1 2'),
    (('END', 'maxRaises = 3 4 4 4\nEND'), 'maxRaises'),
    (('2 1 1 1', '2 2 2 2'), 'act last after it'),
    (('blind = 100 50', 'blind = 50 100'), 'posts 100 and the other 50'),
    (('stack = 20000 20000', 'stack = 20000 100'), 'larger than the big blind'),
    (('stack = 20000 20000\n', ''), 'needs a stack'),
    (('numSuits = 4', 'numSuit = 4'), "'numSuit = 4' is not a key"),
    (('numRounds = 4', 'numRounds = four'), 'numrounds needs whole numbers'),
  ],
)
def test_games_jaxcfr_cannot_play_are_one_line_errors(change, message):
  with pytest.raises(acpc.GameError, match=re.escape(message)) as error:
    acpc.load_game(acpc.DEFAULT_GAME.replace(*change))
  assert '\n' not in str(error.value)


def test_match_states_parse_and_malformed_ones_are_protocol_errors():
  game = acpc.load_game()
  state = acpc.parse_state('MATCHSTATE:1:7:cr300c/r250:|2c7d/2h3h4h', game)
  assert (state.position, state.hand, state.rounds) == (1, 7, (('c', 'r300', 'c'), ('r250',)))
  assert state.holes == ((), (0, 21)) and state.board == (2, 6, 10)
  for line in (
    'HELLO',
    'MATCHSTATE:2:0::AsKs|',  # no position 2
    'MATCHSTATE:0:0:x:AsKs|',
    'MATCHSTATE:0:0:c/:AsKs|',  # a round without its board
    'MATCHSTATE:0:0:cc/:AsKs|/2h3h',
    'MATCHSTATE:0:0::AsKs|Ks2c',  # a card twice
    'MATCHSTATE:0:0::AsK|',
    'MATCHSTATE:0:0:c:AsKs|:extra',
  ):
    with pytest.raises(acpc.ProtocolError):
      acpc.parse_state(line, game)


# A scripted dealer on localhost.


class ScriptedDealer:
  """A dealer that plays a script in a thread: ('send', line), ('expect', line) (reads our answer and
  records a failure unless it is exactly `line`), ('sleep', seconds), ('raw', bytes); then closes."""

  def __init__(self, steps):
    self.steps = steps
    self.server = socket.create_server(('127.0.0.1', 0))
    self.server.settimeout(60)
    self.port = self.server.getsockname()[1]
    self.version = None
    self.answers, self.failures = [], []
    self.thread = threading.Thread(target=self._run, daemon=True)
    self.thread.start()

  def _run(self):
    try:
      connection, _ = self.server.accept()
      with connection, connection.makefile('rb') as reader:
        self.version = reader.readline().decode()
        for kind, value in self.steps:
          if kind == 'send':
            connection.sendall(value.encode() + b'\r\n')
          elif kind == 'raw':
            connection.sendall(value)
          elif kind == 'sleep':
            time.sleep(value)
          else:
            line = reader.readline().decode()
            self.answers.append(line)
            if line != value + '\r\n' or not REPLY.fullmatch(line.rstrip()):
              self.failures.append(f'expected {value!r}, got {line!r}')
    except Exception as error:  # noqa: BLE001 (reported by `finish`)
      self.failures.append(repr(error))

  def finish(self):
    self.thread.join(30)
    self.server.close()
    assert not self.thread.is_alive() and not self.failures, self.failures
    assert self.version == 'VERSION:2.0.0\r\n'


class ScriptedSeat:
  """Answers the given (kind, amount) in order and records what it was asked."""

  def __init__(self, answers=()):
    self.answers = list(answers)
    self.asked = []

  def act(self, hand, deadline, hand_key=None):
    self.asked.append((hand_key, hand.street, list(hand.round_bet), deadline - time.monotonic()))
    return self.answers.pop(0) if self.answers else (nlhe.CALL, 0)


def expect(state, action):
  return [('send', state), ('expect', f'{state}:{action}')]


# Four hands in the reverse-blinds game (position 0 is the big blind). Hand 0: we are the big blind, raise
# the opening raise (to 900 in the round, the dealer's r900) and the small blind folds. Hand 1: the small
# blind, we call, raise the flop bet of 300 in the hand (200 in the round) to 600 in the round (r700 in
# the hand), check down and lose to a wheel. Hand 2: all-in preflop, our queens hold. Hand 3: a split pot.
MATCH = [
  ('send', '# a comment the client skips'),
  ('send', 'MATCHSTATE:0:0::AsKs|'),
  *expect('MATCHSTATE:0:0:r300:AsKs|', 'r900'),
  ('send', ';another comment'),
  ('send', 'MATCHSTATE:0:0:r300r900f:AsKs|'),
  *expect('MATCHSTATE:1:1::|2c7d', 'c'),
  ('send', 'MATCHSTATE:1:1:c:|2c7d'),
  ('send', 'MATCHSTATE:1:1:cc/:|2c7d/2h3h4h'),
  *expect('MATCHSTATE:1:1:cc/r300:|2c7d/2h3h4h', 'r700'),
  ('send', 'MATCHSTATE:1:1:cc/r300r700c/:|2c7d/2h3h4h/5d'),
  *expect('MATCHSTATE:1:1:cc/r300r700c/c:|2c7d/2h3h4h/5d', 'c'),
  ('send', 'MATCHSTATE:1:1:cc/r300r700c/cc/:|2c7d/2h3h4h/5d/Kc'),
  *expect('MATCHSTATE:1:1:cc/r300r700c/cc/c:|2c7d/2h3h4h/5d/Kc', 'c'),
  ('send', 'MATCHSTATE:1:1:cc/r300r700c/cc/cc:AhAd|2c7d/2h3h4h/5d/Kc'),
  ('send', 'MATCHSTATE:0:2::QsQd|'),
  *expect('MATCHSTATE:0:2:r20000:QsQd|', 'c'),
  ('send', 'MATCHSTATE:0:2:r20000c///:QsQd|JcJh/2d7c9s/Th/3c'),
  *expect('MATCHSTATE:1:3::|2c3d', 'c'),
  ('send', 'MATCHSTATE:1:3:c:|2c3d'),
  ('send', 'MATCHSTATE:1:3:cc/:|2c3d/AsKsQs'),
  *expect('MATCHSTATE:1:3:cc/c:|2c3d/AsKsQs', 'c'),
  ('send', 'MATCHSTATE:1:3:cc/cc/:|2c3d/AsKsQs/Js'),
  *expect('MATCHSTATE:1:3:cc/cc/c:|2c3d/AsKsQs/Js', 'c'),
  ('send', 'MATCHSTATE:1:3:cc/cc/cc/:|2c3d/AsKsQs/Js/Ts'),
  *expect('MATCHSTATE:1:3:cc/cc/cc/c:|2c3d/AsKsQs/Js/Ts', 'c'),
  ('send', 'MATCHSTATE:1:3:cc/cc/cc/cc:4h5h|2c3d/AsKsQs/Js/Ts'),
]
MATCH_ANSWERS = [(nlhe.RAISE, 900), (nlhe.CALL, 0), (nlhe.RAISE, 600)]  # then check or call
MATCH_CHIPS = [300, -700, 20_000, 0]


def play_script(steps, tmp_path, seat=None, **options):
  """Plays `steps` with a scripted dealer; (result or the ProtocolError, the dealer, the logged hands)."""
  dealer = ScriptedDealer(steps)
  log_path = str(tmp_path / 'hands.jsonl')
  with acpc.HandLog.create(log_path, {'bot': 'test'}) as log:
    try:
      outcome = acpc.play('127.0.0.1', dealer.port, seat or ScriptedSeat(), log=log, **options)
    except acpc.ProtocolError as error:
      outcome = error
  dealer.finish()
  return outcome, dealer, acpc.read_log(log_path)


def test_a_scripted_match(tmp_path):
  seat = ScriptedSeat(MATCH_ANSWERS)
  result, _, hands = play_script(MATCH, tmp_path, seat, t_response=2.0)
  assert isinstance(result, acpc.AcpcResult), result
  assert result.chips.tolist() == MATCH_CHIPS and result.seats.tolist() == [1, 0, 1, 0]
  assert result.hands == 4 and result.fallbacks == 0 and result.decisions == 10
  assert result.mbb_per_hand == pytest.approx(sum(MATCH_CHIPS) / 4 * 10)
  assert [h['chips'] for h in hands] == MATCH_CHIPS and [h['hand'] for h in hands] == [0, 1, 2, 3]
  assert [h['showdown'] for h in hands] == [False, True, True, True]
  assert hands[1]['opponent_hole'] == 'AhAd' and hands[1]['board'] == '2h3h4h5dKc' and hands[0]['board'] == ''
  assert hands[1]['betting'] == 'cc/r300r700c/cc/cc' and hands[1]['position'] == 1 and hands[1]['seat'] == 0
  # What the seat saw: our hand in round totals (the flop bet of r300 is 200 in the round), the hand
  # number as its key, and a deadline inside the response budget.
  assert seat.asked[0][:3] == (0, 0, [300, 100])  # round bets by seat: the button raised to 300
  assert seat.asked[2][:3] == (1, 1, [0, 200])
  assert all(0 < left <= 2.0 for *_, left in seat.asked)
  header = json.loads(open(tmp_path / 'hands.jsonl').readline())
  assert header['producer'] == 'jaxcfr' and header['format'] == acpc.LOG_FORMAT


def test_an_illegal_answer_of_the_seat_becomes_a_check_or_call(tmp_path):
  lines = []
  steps = [
    ('send', 'MATCHSTATE:0:0::AsKs|'),
    *expect('MATCHSTATE:0:0:c:AsKs|', 'c'),  # a raise to 50, under the minimum
    *expect('MATCHSTATE:0:0:cc/:AsKs|/2h3h4h', 'c'),  # a fold with nothing to call
    *expect('MATCHSTATE:0:0:cc/cr300:AsKs|/2h3h4h', 'f'),
    ('send', 'MATCHSTATE:0:0:cc/cr300f:AsKs|/2h3h4h'),
  ]
  seat = ScriptedSeat([(nlhe.RAISE, 50), (nlhe.FOLD, 0), (nlhe.FOLD, 0)])
  result, _, hands = play_script(steps, tmp_path, seat, warn=lines.append)
  assert result.fallbacks == 2 and len(lines) == 2 and 'illegal action' in lines[0]
  assert [h['chips'] for h in hands] == [-100]


FIRST_HAND = MATCH[:6]  # hand 0 to its end (the small blind folds)


def send(*lines):
  return [('send', line) for line in lines]


QUEENS = 'MATCHSTATE:0:1::QsQd|'  # hand 1 begins: we are the big blind


@pytest.mark.parametrize(
  'steps, message',
  [
    (send('MATCHSTATE:0:1:xx:AsKs|'), 'malformed betting'),
    (send('HELLO THERE'), 'no match state'),
    (expect('MATCHSTATE:1:1::|2c7d', 'c'), 'in the middle of hand 1'),  # we call, then a close
    (
      send(QUEENS, 'MATCHSTATE:0:1:r300:QsQd|', 'MATCHSTATE:0:1:c:QsQd|'),
      "betting 'c' does not follow 'r300'",
    ),
    (send(QUEENS, 'MATCHSTATE:0:1:r150:QsQd|'), "action 'r150' is not legal"),
    (send(QUEENS, 'MATCHSTATE:0:1::QsQh|'), 'our position or cards changed'),
    (send('MATCHSTATE:0:3::QsQd|'), 'hand 3 came after hand 0'),
    (send('MATCHSTATE:0:0:r300:AsKs|'), 'went on after it had ended'),
    (send(QUEENS, 'MATCHSTATE:0:1:r300c/:QsQd|/2h3h4h'), 'that we did not send'),
    (send(QUEENS, 'MATCHSTATE:0:2::QsQd|'), 'hand 2 began before hand 1'),
    (
      [
        *expect('MATCHSTATE:1:1::|2c7d', 'c'),
        *send('MATCHSTATE:1:1:c:|2c7d', 'MATCHSTATE:1:1:cc/:|2c7d/2h3h4h'),
      ]
      + send('MATCHSTATE:1:1:cc/c:|2c7d/2h3h5h'),  # the flop changed
      'does not follow ours',
    ),
    (
      [*send(QUEENS), *expect('MATCHSTATE:0:1:r20000:QsQd|', 'c')]
      + send('MATCHSTATE:0:1:r20000c///:QsQd|/2h3h4h/5h/6h'),
      'showdown without both hands',
    ),
    ([*send(QUEENS), ('sleep', 1.0)], 'no message from the dealer for 0.5 s in hand 1'),
    ([('raw', b'MATCHSTATE:0:1::Qs')], 'in the middle of a line'),
  ],
)
def test_faults_of_the_dealer_are_one_line_and_keep_the_finished_hands(tmp_path, steps, message):
  seat = ScriptedSeat([(nlhe.RAISE, 900)])
  error, _, hands = play_script(FIRST_HAND + steps, tmp_path, seat, timeout=0.5)
  assert isinstance(error, acpc.ProtocolError), error
  assert message in str(error) and '\n' not in str(error)
  assert [h['hand'] for h in hands] == [0] and hands[0]['chips'] == 300


def test_our_action_recorded_otherwise_is_a_fault(tmp_path):
  steps = [('send', 'MATCHSTATE:0:0::AsKs|'), *expect('MATCHSTATE:0:0:r300:AsKs|', 'r900')]
  steps.append(('send', 'MATCHSTATE:0:0:r300c/:AsKs|/2h3h4h'))
  error, _, _ = play_script(steps, tmp_path, ScriptedSeat([(nlhe.RAISE, 900)]))
  assert "recorded our action as 'c'; we sent 'r900'" in str(error)


def test_no_dealer_and_an_empty_match_are_faults(tmp_path):
  with socket.create_server(('127.0.0.1', 0)) as probe:
    port = probe.getsockname()[1]
  with pytest.raises(acpc.ProtocolError, match='cannot connect to the dealer'):
    acpc.play('127.0.0.1', port, ScriptedSeat())
  error, _, _ = play_script([], tmp_path)
  assert 'before the first hand' in str(error)


# The command line.


def test_bad_input_is_one_line_and_exit_status_2(tmp_path):
  limit = tmp_path / 'limit.game'
  limit.write_text(LIMIT_GAME)
  mine = tmp_path / 'mine.jsonl'
  mine.write_text('{"my": "notes"}\n')
  cases = [
    (['--game', str(limit)], 'limit game'),
    (['--game', str(tmp_path / 'missing.game')], 'cannot read'),
    (['--log', str(mine)], 'was not written by jaxcfr'),
    (['--log', str(tmp_path / 'hands.txt')], 'must name a JSONL file'),
    (['--think-seconds', '1'], 'applies to a search: bot only'),
  ]
  for extra, message in cases:
    code, out, err = run_cli('acpc', '127.0.0.1', '9', '--bot', 'always-call', *extra)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (extra, err)
  for bad_port in ('http', '0', '70000'):
    code, _, err = run_cli('acpc', '127.0.0.1', bad_port, '--bot', 'always-call')
    assert code == 2 and 'argument PORT' in err, err
  assert mine.read_text() == '{"my": "notes"}\n'


def test_the_command_plays_a_scripted_match_and_stops_at_a_fault(tmp_path):
  """`jaxcfr acpc` with its real seat (always-call): the small blind folds to us, then we call down an
  all-in on the flop and lose to a wheel; then a match whose dealer sends garbage after a hand."""
  fold = [('send', 'MATCHSTATE:0:0::AsKs|'), ('send', 'MATCHSTATE:0:0:f:AsKs|')]
  steps = fold + [
    *expect('MATCHSTATE:1:1::|2c7d', 'c'), ('send', 'MATCHSTATE:1:1:c:|2c7d'),
    *expect('MATCHSTATE:1:1:cr300:|2c7d', 'c'), ('send', 'MATCHSTATE:1:1:cr300c/:|2c7d/2h3h4h'),
    *expect('MATCHSTATE:1:1:cr300c/r20000:|2c7d/2h3h4h', 'c'),
    ('send', 'MATCHSTATE:1:1:cr300c/r20000c//:AhAd|2c7d/2h3h4h/5d/Kc'),
  ]  # fmt: skip
  dealer = ScriptedDealer(steps)
  log_path, json_path = tmp_path / 'hands.jsonl', tmp_path / 'result.json'
  code, out, err = run_cli(
    'acpc', '127.0.0.1', dealer.port, '--bot', 'always-call', '--log', log_path, '--json', json_path
  )
  dealer.finish()
  assert code == 0, err
  report = json.loads(json_path.read_text())
  assert report['producer'] == 'jaxcfr' and report['hands'] == 2 and report['chips'] == 50 - 20_000
  assert '-19,950 chips' in out and [h['chips'] for h in acpc.read_log(str(log_path))] == [50, -20_000]
  dealer = ScriptedDealer(fold + [('send', 'GARBAGE')])
  code, out, err = run_cli(
    'acpc', '127.0.0.1', dealer.port, '--bot', 'always-call', '--log', tmp_path / 'b.jsonl'
  )
  dealer.finish()
  assert (
    code == 1 and err.strip() == "jaxcfr: error: the dealer sent a line that is no match state: 'GARBAGE'"
  )
  assert [h['hand'] for h in acpc.read_log(str(tmp_path / 'b.jsonl'))] == [0]


# The real dealer (project_acpc_server), where JAXCFR_ACPC_DEALER names its built `dealer`.

DEALER = os.environ.get('JAXCFR_ACPC_DEALER')
EXAMPLE_PLAYER = os.environ.get('JAXCFR_ACPC_EXAMPLE_PLAYER')


def run_real_match(tmp_path, hands: int, bots, example_player: str | None = None, seed: int = 1):
  """Starts the dealer (its ports on its first line), then a `jaxcfr acpc` client per bot, or one and the
  example player for 'example'; returns (each client's exit status and stderr, the dealer's stderr
  lines, the dealer's log path)."""
  game = tmp_path / 'game'
  game.write_text(acpc.DEFAULT_GAME)
  outputs = {name: open(tmp_path / name, 'w+') for name in ('dealer.err', 'A.err', 'B.err')}  # noqa: SIM115
  dealer = subprocess.Popen(
    [DEALER, 'match', str(game), str(hands), str(seed), 'A', 'B', '-q', '--start_timeout', '60000'],
    cwd=tmp_path, stdout=subprocess.PIPE, stderr=outputs['dealer.err'], text=True,
  )  # fmt: skip
  ports = dealer.stdout.readline().split()
  env = {**os.environ, 'JAX_PLATFORMS': 'cpu'}
  clients = []
  for name, port, bot in zip('AB', ports, bots, strict=True):
    if bot == 'example':
      command = [example_player, str(game), '127.0.0.1', port]
    else:
      command = [sys.executable, '-m', 'jaxcfr.cli', 'acpc', '127.0.0.1', port, '--bot', bot, '--seed', '3']
      command += ['--log', str(tmp_path / f'{name}.jsonl'), '--quiet']
    stderr = outputs[f'{name}.err']
    clients.append(subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr, env=env))
  try:
    codes = [client.wait(timeout=600) for client in clients]
    dealer.wait(timeout=60)
  finally:
    for process in (dealer, *clients):
      if process.poll() is None:
        process.kill()
  texts = {}
  for name, file in outputs.items():
    file.seek(0)
    texts[name] = file.read()
    file.close()
  dealer.stdout.close()
  finished = [(code, texts[f'{name}.err']) for name, code in zip('AB', codes, strict=True)]
  return finished, texts['dealer.err'].splitlines(), str(tmp_path / 'match.log')


@pytest.mark.skipif(not DEALER, reason='JAXCFR_ACPC_DEALER does not name a built ACPC dealer')
def test_a_match_on_the_real_dealer_agrees_with_its_log(tmp_path):
  """200 hands: both clients end well, the dealer fixed none of our actions (it warns of each), and
  each jaxcfr log agrees with the dealer's hand by hand and with its final score."""
  other = 'example' if EXAMPLE_PLAYER else 'always-call'
  finished, dealer_err, dealer_log = run_real_match(tmp_path, 200, ('equity', other), EXAMPLE_PLAYER)
  assert [code for code, _ in finished] == [0, 0], finished
  assert not [line for line in dealer_err if line.startswith(('WARNING', 'ERROR'))], dealer_err
  for name, bot in zip('AB', ('equity', other), strict=True):
    if bot == 'example':
      continue
    compared = acpc.compare_logs(dealer_log, str(tmp_path / f'{name}.jsonl'), name)
    assert compared['hands'] == compared['agree'] == 200 and not compared['missing'], compared
    assert compared['score'] == compared['total'], compared
