"""`jaxcfr play` end to end through its standard input: transcripts against baseline bots and a
blueprint, the score against `nlhe.payoffs` and pokerkit for the same actions, bad input at the
prompt, determinism, and one line with exit status 2 for a bad command line. The lockstep of pokerkit
and `nlhe` (`play.Table`) is checked on random hands and shown to fail loudly when they differ."""

import io
import re
import sys
import types

import numpy as np
import pytest

pytest.importorskip('pokerkit')

import nlhe_oracle  # noqa: E402
from cli_runner import run_cli  # noqa: E402
from standin import write_tables  # noqa: E402

import abstractions  # noqa: E402
from abstractions import NoLimitRules  # noqa: E402
from abstractions.isomorphism import hand_indexer  # noqa: E402
from jaxcfr.cli import play as play_cli  # noqa: E402
from jaxcfr.poker import bots, play  # noqa: E402
from jaxcfr.poker.blueprint import files  # noqa: E402
from jaxcfr.poker.blueprint import tree as tree_lib  # noqa: E402
from jaxcfr.poker.eval import baselines  # noqa: E402
from jaxcfr.poker.rules import nlhe  # noqa: E402
from jaxcfr.poker.rules.cards import FULL_DECK, parse_cards  # noqa: E402

BB = 100


def play_text(argv, lines):
  """(exit code, transcript) of `jaxcfr play ARGV` in this process with `lines` as its input."""
  stdin = io.StringIO(''.join(line + '\n' for line in lines))
  stdout = io.StringIO()
  code = play_cli.main(argv, stdin=stdin, stdout=stdout)
  return code, stdout.getvalue()


def hands_of(transcript):
  """The transcript split at the hands: [(number, text)] from '=== hand N' to the next."""
  parts = re.split(r'^=== hand (\d+):', transcript, flags=re.M)
  return [(int(number), text) for number, text in zip(parts[1::2], parts[2::2], strict=True)]


_ACTION = re.compile(r'^(you|bot) (folds?|checks?|calls?|bets?|raises? to)( (\d+))?( \(all-in\))?$')


def actions_of(text):
  """The hand's actions (player, kind, raise-to amount) read from the transcript's action lines;
  the caller maps 'you' / 'bot' to seats. A call's line gives the chips added; its amount is unused."""
  actions = []
  for line in text.splitlines():
    match = _ACTION.match(line)
    if not match:
      continue
    who, verb, amount = match.group(1), match.group(2), int(match.group(4) or 0)
    kind = nlhe.FOLD if verb.startswith('fold') else nlhe.CALL if verb[0] == 'c' else nlhe.RAISE
    actions.append((who, kind, amount))
  return actions


def result_of(text):
  """(chips won by the person, stacks after the hand (you, bot)) from the hand's result line."""
  match = re.search(r'^hand \d+: (you win|you lose|split pot: you win) (\d+) chips; stacks after the hand: '
                    r'you (\d+), bot (\d+)$', text, flags=re.M)  # fmt: skip
  won = int(match.group(2)) * (-1 if match.group(1) == 'you lose' else 1)
  return won, (int(match.group(3)), int(match.group(4)))


def check_hands(transcript, seed, rules=nlhe.DEFAULT_RULES):
  """Replays every scored hand of the transcript with its actions and cards in `nlhe` and in pokerkit;
  asserts the person's result, stacks after the hand and running score; returns the results."""
  results = []
  for number, text in hands_of(transcript):
    if 'not scored' in text:
      continue
    me = 0 if number % 2 else 1  # the person is the button in odd hands
    hole, board, _ = play.deal_hand(seed, number, rules)
    assert f'your cards: {play.cards_text(hole[me])}' in text
    moves = [(kind, amount) for _, kind, amount in actions_of(text)]
    state = nlhe.from_actions([moves], hole=hole[None], board=board[None], rules=rules)
    assert state.finished[0]
    payoffs = nlhe.payoffs(state)[0]
    referee = nlhe_oracle.replay(hole, board, moves, rules)
    assert tuple(payoffs) == referee.payoffs
    if 'showdown: ' in text:  # the person's cards always; the bot's when pokerkit shows them
      assert re.search(rf'^  you: {play.cards_text(hole[me])} \(', text, flags=re.M)
      assert re.search(rf'^  bot: (mucked|{play.cards_text(hole[1 - me])} \()', text, flags=re.M)
    won, stacks = result_of(text)
    assert won == payoffs[me] and stacks == (rules.stack + payoffs[me], rules.stack - payoffs[me])
    results.append(won)
    total = sum(results)
    mbb = total / rules.big_blind * 1000 / len(results)
    plural = '' if len(results) == 1 else 's'
    assert f'score: you {total:+d} chips over {len(results)} hand{plural} ({mbb:+.1f} mbb/hand)' in text
  return results


def test_full_hands_against_always_call_with_an_off_tree_bet_an_all_in_and_a_fold():
  lines = [
    # hand 1, the person on the button: an off-tree raise preflop, a turn bet, the river checked down
    'b 333', 'c', 'b 500', 'c',
    # hand 2, the person in the big blind: the bot limps, the person shoves, the bot calls
    'a',
    # hand 3, on the button: fold
    'f',
    # hand 4: quit in the middle of the hand
    'q',
  ]  # fmt: skip
  code, transcript = play_text(['--bot', 'always-call', '--seed', '1'], lines)
  assert code == 0
  hands = dict(hands_of(transcript))
  assert sorted(hands) == [1, 2, 3, 4]
  one = hands[1]
  assert 'you are the button (small blind 50), the bot the big blind (100)' in one
  assert 'preflop | you ' in one and '| pot 150 | stacks: you 19950, bot 19900' in one
  assert '  f fold | c call 50 | b 200..20000 raise to | a all-in 20000' in one
  assert 'you raise to 333\nbot calls 233\n--- flop: ' in one and '(pot 666)' in one
  assert 'pot 666 | stacks: you 19667, bot 19667\n  c check | b 100..19667 bet | a all-in 19667' in one
  assert 'you bet 500\nbot calls 500\n--- river: ' in one and '(pot 1666)' in one
  assert 'showdown: board ' in one and '(pot 1666)' in one
  two = hands[2]
  assert 'you are the big blind (100), the bot the button (small blind 50)' in two
  assert 'bot calls 50\npreflop' in two and '  c check | b 200..20000 raise to | a all-in 20000' in two
  assert 'you raise to 20000 (all-in)\nbot calls 19900 (all-in)\nshowdown: board ' in two
  assert '(pot 40000)' in two
  three = hands[3]
  assert 'you fold\nuncalled bet (50) returned to the bot; the bot collects the pot of 100' in three
  assert 'hand 3: you lose 50 chips; stacks after the hand: you 19950, bot 20050' in three
  assert 'bot calls 50\n' in hands[4] and '(hand 4 abandoned, not scored)' in hands[4]
  results = check_hands(transcript, seed=1)
  assert len(results) == 3 and results[2] == -50 and abs(results[1]) in (0, 20000)
  assert abs(results[0]) in (0, 833)
  total = sum(results)
  assert transcript.rstrip().endswith(
    f'summary: 3 hands played, you {total:+d} chips, {total / BB * 1000 / 3:+.1f} mbb/hand'
  )
  assert transcript.count('\n> ') == len(lines)  # one prompt per line of input


def test_facing_bets_of_always_pot():
  lines = ['c', 'c', 'f', 'c', 'q']
  code, transcript = play_text(['--bot', 'always-pot', '--seed', '4', '--hands', '5'], lines)
  assert code == 0
  hands = dict(hands_of(transcript))
  # Hand 1, on the button: the person calls, the bot raises the pot (to 100 + 200 = 300), the person
  # calls 200; on the flop the bot (first to act) bets the pot of 600, and the person folds.
  one = hands[1]
  assert 'you call 50\nbot raises to 300\n' in one
  assert 'pot 400 | stacks: you 19900, bot 19700\n  f fold | c call 200 | b 500..20000 raise to' in one
  assert 'you call 200\n--- flop: ' in one and 'bot bets 600\n' in one
  assert 'pot 1200 | stacks: you 19700, bot 19100\n  f fold | c call 600 | b 1200..19700 raise to' in one
  assert 'uncalled bet (600) returned to the bot; the bot collects the pot of 600' in one
  assert 'hand 1: you lose 300 chips; stacks after the hand: you 19700, bot 20300' in one
  # Hand 2, in the big blind: the bot raises to 300, the person calls (200 more).
  assert 'bot raises to 300\n' in hands[2] and 'you call 200\n' in hands[2]
  assert check_hands(transcript, seed=4)[0] == -300


def test_random_bot_transcripts_are_deterministic():
  lines = ['c'] * 12 + ['a'] + ['c'] * 12
  argv = ['--bot', 'random', '--seed', '7', '--hands', '4']
  code, first = play_text(argv, lines)
  assert code == 0
  assert play_text(argv, lines) == (0, first)
  assert play_text(['--bot', 'random', '--seed', '8', '--hands', '4'], lines)[1] != first
  check_hands(first, seed=7)
  assert len(re.findall(r'^score: ', first, flags=re.M)) == 4 or 'not scored' in first


def test_bad_input_at_the_prompt_gets_one_line_and_the_prompt_again():
  # Hand 2 (the big blind) against always-call: the bot limps, checking is free.
  bad = ['x', 'b 150', 'b 30000', 'b abc', 'f', 'b', 'c 5', '']
  lines = ['f', *bad, 'c', 'q']
  code, transcript = play_text(['--bot', 'always-call', '--seed', '2'], lines)
  assert code == 0 and 'Traceback' not in transcript
  two = dict(hands_of(transcript))[2]
  rows = two.splitlines()
  first = rows.index('> x')
  replies = rows[first : first + 2 * len(bad) + 2 : 2]
  assert replies == [f'> {line}' for line in bad] + ['> c']
  explanations = rows[first + 1 : first + 2 * len(bad) : 2]
  assert explanations[0].startswith("unknown command 'x'; commands: f fold")
  assert explanations[1] == '150 is too small: the minimum is 200 this round (200..20000)'
  assert (
    explanations[2] == '30000 is more than you have: 19900 behind, so at most 20000 this round (a for all-in)'
  )
  assert explanations[3] == "'abc' is not a whole number of chips: b AMOUNT, AMOUNT in 200..20000"
  assert explanations[4] == 'nothing to call: check with c (you may fold only when facing a bet)'
  assert explanations[5].startswith('b needs an amount')
  assert explanations[6].startswith("unknown command 'c 5'")
  assert explanations[7] == '  c check | b 200..20000 raise to | a all-in 20000'  # an empty line
  # The hand then goes on: the person checks and the flop comes.
  assert rows[first + 2 * len(bad) + 1 : first + 2 * len(bad) + 3][0] == 'you check'
  assert '--- flop: ' in two


def test_end_of_input_quits_with_the_summary():
  code, transcript = play_text(['--bot', 'always-call', '--seed', '3'], ['c', 'c'])
  assert code == 0
  assert '(end of input: hand 1 abandoned, not scored)' in transcript
  assert transcript.rstrip().endswith('summary: 0 hands played, you +0 chips, +0.0 mbb/hand')


def test_a_bot_that_times_its_decisions_gets_its_think_times_in_the_summary():
  """A bot with per-street `timings` (the search bot's) gets one more summary line: the median think
  time per decision on each street it decided on, and how many decisions."""

  class Timed:
    name = 'timed'

    def __init__(self):
      self.inner, self.timings = baselines.AlwaysCall(), {street: [] for street in range(4)}

    def strategy(self, state, holes):
      for street in np.asarray(state.street):
        self.timings[int(street)].append((0.002, 0.25, 0.04, 0.06)[int(street)])
      return self.inner.strategy(state, holes)

  bot, stdout = Timed(), io.StringIO()
  play.play(bot, seed=3, hands=2, stdin=io.StringIO('c\n' * 20), stdout=stdout)
  lines = stdout.getvalue().rstrip().splitlines()
  assert lines[-2].startswith('summary: 2 hands played')
  counts = {street: len(times) for street, times in bot.timings.items()}
  assert counts[0] and counts[1]  # it decided before and after the flop
  names = ('preflop', 'flop', 'turn', 'river')
  want = [f'{names[s]} {(2, 250, 40, 60)[s]} ms ({counts[s]})' for s in range(4) if counts[s]]
  assert lines[-1] == f'bot think time, median per decision (decisions): {", ".join(want)}'


def test_ctrl_c_prints_the_summary_and_exits_130(capsys):
  class Interrupting(io.StringIO):
    def readline(self, *args):
      if self.tell() >= len(self.getvalue()):
        raise KeyboardInterrupt
      return super().readline(*args)

  stdout = io.StringIO()
  code = play_cli.main(['--bot', 'always-fold', '--seed', '5'], stdin=Interrupting('b 300\n'), stdout=stdout)
  assert code == 130 and capsys.readouterr().err == '\njaxcfr: interrupted\n'
  transcript = stdout.getvalue()
  assert 'bot folds' in transcript and '(interrupted: hand 3 abandoned, not scored)' in transcript
  assert transcript.rstrip().endswith('summary: 2 hands played, you +150 chips, +750.0 mbb/hand')


@pytest.fixture(scope='module')
def blueprint(tmp_path_factory):
  """(blueprint file, its tables' directory): the small preset with random probabilities on stand-in
  tables of buckets (3, 2, 2, 2), as in test_blueprint_cli / test_blueprint_policy."""
  sizes = (3, 2, 2, 2)
  directory = write_tables(tmp_path_factory.mktemp('tables') / 'small', sizes)
  tree = tree_lib.build_tree('small')
  rng = np.random.default_rng(0)
  values = rng.random((tree.num_decisions, max(sizes), tree.num_actions)) * tree.legal[:, None, :]
  metadata = files.metadata_for(
    tree, bets_name='small', deck=FULL_DECK, board_cards=(0, 3, 1, 1), buckets=sizes,
    abstraction_fingerprint=abstractions.load(directory).fingerprint, abstraction_path=directory,
  )  # fmt: skip
  path = str(tmp_path_factory.mktemp('blueprint') / 'small.npz')
  files.save_blueprint(path, tree, values / values.sum(-1, keepdims=True), metadata)
  return path, directory


def test_two_hands_against_a_blueprint(blueprint):
  path, directory = blueprint
  lines = ['c', 'b 333'] + ['c'] * 10
  code, transcript = play_text(['--blueprint', path, '--abstraction', directory, '--hands', '2'], lines)
  assert code == 0, transcript
  assert f'against blueprint:{path}' in transcript
  assert len(check_hands(transcript, seed=0)) == len(re.findall(r'^score: ', transcript, flags=re.M))
  assert re.search(r'^bot (folds|checks|calls|bets|raises)', transcript, flags=re.M)
  # Its recorded tables are found without --abstraction; the same seed plays the same hands.
  assert play_text(['--blueprint', path, '--hands', '2'], lines) == (0, transcript)


def test_bad_command_lines_exit_2_with_one_line(blueprint, tmp_path, capsys, monkeypatch):
  path, directory = blueprint

  def error_of(*argv):
    code, transcript = play_text(list(argv), [])
    err = capsys.readouterr().err
    assert code == 2 and transcript == '' and err.count('\n') == 1 and err.startswith('jaxcfr: error: ')
    return err

  assert 'no such file' in error_of('--blueprint', str(tmp_path / 'missing.npz'))
  assert "unknown bot 'shark'; the baselines are always-call" in error_of('--bot', 'shark')
  assert '--abstraction goes with --blueprint' in error_of('--bot', 'random', '--abstraction', directory)
  assert '--think-seconds needs --search' in error_of('--bot', 'random', '--think-seconds', '2')
  assert '--search-streets needs --search' in error_of('--bot', 'random', '--search-streets', 'flop')
  assert '--search-warm-start needs --search' in error_of('--bot', 'random', '--search-warm-start', '1')
  assert '--search-gadget needs --search' in error_of('--bot', 'random', '--search-gadget', 'maxmargin')
  assert '--search-turn needs --search' in error_of('--bot', 'random', '--search-turn', 'depth-limited')
  assert '--search-river-cards needs --search' in error_of('--bot', 'random', '--search-river-cards', '8')
  assert 'not --search-turn full' in error_of(
    '--bot', 'random', '--search', '--search-turn', 'full', '--search-river-cards', '8'
  )
  other = tmp_path / 'other'
  arrays = {'preflop': np.zeros(169, np.uint8)}
  for street in ('flop', 'turn', 'river'):
    arrays[street] = np.zeros(hand_indexer(street).size, np.uint8)
  abstractions.save(arrays, {'buckets': [3, 2, 2, 2]}, str(other))
  assert 'was trained on abstraction tables' in error_of('--blueprint', path, '--abstraction', str(other))
  not_a_blueprint = tmp_path / 'notes.npz'
  not_a_blueprint.write_text('hello')
  assert 'notes.npz' in error_of('--blueprint', str(not_a_blueprint))
  monkeypatch.setitem(sys.modules, 'pokerkit', None)
  assert 'needs pokerkit' in error_of('--bot', 'random')
  monkeypatch.setattr(sys, 'version_info', (3, 10, 14))
  assert 'needs Python 3.11' in error_of('--bot', 'random')
  with pytest.raises(SystemExit) as exit_info:  # argparse: neither or both of --blueprint / --bot
    play_cli.main(['--seed', '1'])
  assert exit_info.value.code == 2


def test_the_jaxcfr_command_line_reports_a_missing_blueprint(tmp_path):
  code, out, err = run_cli('play', '--blueprint', str(tmp_path / 'missing.npz'))
  assert code == 2 and out == ''
  assert err == f"jaxcfr: error: --blueprint '{tmp_path / 'missing.npz'}': no such file\n"


def test_search_wraps_the_bot(monkeypatch):
  """`--search` is the policy spec search:BOT, made by `bots.resolve_policy` as `jaxcfr match` makes it."""
  calls = []

  def search_policy(policy, *, think_seconds=1.0, seed=0, name=None, **options):
    calls.append((policy.name, think_seconds, seed, *options.values()))
    return baselines.AlwaysFold(name='search(always-call)')

  module = types.ModuleType('jaxcfr.poker.search.bot')
  module.search_policy = search_policy
  monkeypatch.setattr(bots, 'search', module)
  argv = ['--bot', 'always-call', '--search', '--think-seconds', '0.5', '--seed', '3', '--hands', '1']
  code, transcript = play_text(argv, ['b 300'])
  assert code == 0 and calls == [('always-call', 0.5, 3)]
  assert 'against search(always-call)' in transcript
  assert (
    'you raise to 300\nbot folds\nuncalled bet (200) returned to you; you collect the pot of 200'
    in transcript
  )
  code, _ = play_text(['--bot', 'random', '--search', '--hands', '1'], ['f', 'c', 'f'])
  assert code == 0 and calls[-1] == ('random', 1.0, 0)
  code, _ = play_text(
    ['--bot', 'random', '--search', '--search-streets', 'flop,river', '--hands', '1'], ['f']
  )
  assert code == 0 and calls[-1] == ('random', 1.0, 0, (1, 3))
  code, _ = play_text(['--bot', 'random', '--search', '--search-warm-start', '2,0', '--hands', '1'], ['f'])
  assert code == 0 and calls[-1] == ('random', 1.0, 0, (2, 0))
  code, _ = play_text(['--bot', 'random', '--search', '--search-gadget', 'resolve', '--hands', '1'], ['f'])
  assert code == 0 and calls[-1] == ('random', 1.0, 0, 'resolve')
  code, _ = play_text(['--bot', 'random', '--search', '--search-gadget', 'none', '--hands', '1'], ['f'])
  assert code == 0 and calls[-1] == ('random', 1.0, 0, None)  # unsafe re-solving
  argv = ['--bot', 'random', '--search', '--search-turn', 'depth-limited', '--hands', '1']
  code, _ = play_text(argv, ['f'])
  assert code == 0 and calls[-1] == ('random', 1.0, 0, True)
  code, _ = play_text([*argv, '--search-river-cards', '8'], ['f'])
  assert code == 0 and calls[-1] == ('random', 1.0, 0, True, 8)


# The parser of the prompt, on its own.


def options(**changes):
  """The options of the button's first decision (call 50, raise to 200..20000), changed."""
  base = play.Options(actor=0, can_fold=True, to_call=50, call_to=100, can_raise=True, min_raise_to=200,
                      max_raise_to=20000, behind=19950, is_bet=False)  # fmt: skip
  return base._replace(**changes)


def test_parse_command():
  assert play.parse_command('b 450', options()) == (nlhe.RAISE, 450)
  assert play.parse_command('B450', options()) == (nlhe.RAISE, 450)
  assert play.parse_command('b 1,000', options()) == (nlhe.RAISE, 1000)
  assert play.parse_command(' a ', options()) == (nlhe.RAISE, 20000)
  assert play.parse_command('c', options()) == (nlhe.CALL, 0)
  assert play.parse_command('f', options()) == (nlhe.FOLD, 0)
  assert play.parse_command('q', options()) == play.QUIT
  assert play.parse_command('?', options()) == play.HELP_COMMAND == play.parse_command('h', options())
  assert play.parse_command('', options()) == play.SHOW
  # A short stack: the only raise is all-in, below the usual minimum.
  short = options(min_raise_to=150, max_raise_to=150, behind=100)
  with pytest.raises(play.BadCommand, match='the only raise is all-in 150'):
    play.parse_command('b 140', short)
  assert play.parse_command('b 150', short) == (nlhe.RAISE, 150)
  # Facing an all-in that covers the person: no raise; a is the all-in call, b explains.
  covered = options(to_call=19950, call_to=20000, can_raise=False, min_raise_to=0, max_raise_to=0)
  assert play.parse_command('a', covered) == (nlhe.CALL, 0)
  with pytest.raises(play.BadCommand, match='no bet or raise is possible'):
    play.parse_command('b 500', covered)
  assert play.legal_line(covered) == 'f fold | c call 19950 (all-in)'
  with pytest.raises(play.BadCommand, match=r'the bot is all-in\): c to call or f to fold'):
    play.parse_command('a', options(to_call=500, can_raise=False, min_raise_to=0, max_raise_to=0))
  with pytest.raises(play.BadCommand, match='-5 is too small'):
    play.parse_command('b -5', options())
  with pytest.raises(play.BadCommand, match="'4.5' is not a whole number"):
    play.parse_command('b 4.5', options())


# The lockstep of pokerkit and nlhe.


def test_table_follows_random_hands_in_both_engines():
  """Random play (the random baseline for both players) through `play.Table`, which compares the two
  engines after every action; small stacks make all-ins, all-ins for less and calls of all-ins common."""
  policy = baselines.UniformRandom()
  rng = np.random.default_rng(5)
  seen = set()
  for rules in (nlhe.DEFAULT_RULES, NoLimitRules(small_blind=25, big_blind=60, stack=1_000)):
    for number in range(60):
      hole, board, noise = play.deal_hand(11, number, rules)
      table = play.Table(hole, board, noise, rules)
      moves = []
      while not table.finished:
        options = table.options()
        kind, amount = play.bot_action(policy, table.state, rng)
        seen.add(play.describe('p', kind, amount, options).split(' ', 1)[1].split(' ')[0])
        table.act(kind, amount)
        moves.append((kind, amount))
      assert table.payoffs() == nlhe_oracle.replay(hole, board, moves, rules).payoffs
      if table.state.folded[0] < 0:
        assert set(table.shown()) <= {0, 1} and table.shown()
  assert {'folds', 'checks', 'calls', 'bets', 'raises'} <= seen


def test_a_disagreement_of_the_engines_fails_loudly():
  hole, board, noise = play.deal_hand(0, 1)
  table = play.Table(hole, board, noise)
  table.state = table.state._replace(committed=table.state.committed + np.array([[0, 10]]))
  with pytest.raises(play.EngineMismatch, match='differ'):
    table.act(nlhe.CALL)
  table = play.Table(hole, board, noise)
  table.act(nlhe.RAISE, 300)
  table.kit.check_or_call()  # pokerkit alone: it is on the flop, nlhe still preflop
  with pytest.raises(play.EngineMismatch):
    table.options()
  assert parse_cards(play.cards_text(hole[0]).replace(' ', '')) == tuple(int(c) for c in hole[0])
