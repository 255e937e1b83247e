"""A person plays heads-up no-limit hold'em against a bot in the terminal (`jaxcfr play`).

pokerkit runs each hand as the engine; a one-hand `nlhe.HandState` follows it in lockstep, because
that is what a `nlhe.Policy` reads. Every action (the person's and the bot's) is applied to both, and
after each one the two must agree on the player to act, the pot, both stacks, the board and, before a
decision, the legal actions; at the end on the chips won. A disagreement is a bug and raises
`EngineMismatch`.

    table = Table(hole, board)                      # hole int [2, 2] (our players), board int [5]
    options = table.options()                       # legal actions of the player to act, checked
    table.act(nlhe.RAISE, 450)                      # applied to both engines, then compared
    table.payoffs()                                 # chips won by players 0 and 1 once finished

    summary = play(policy, seed=1, stdin=sys.stdin, stdout=sys.stdout)   # the game loop

Seats follow `nlhe`: player 0 is the button and small blind (acts first preflop, last afterwards).
The person is player 0 (the button) in odd hands (1, 3, ...) and player 1 (the big blind) in even ones.
Hand n's cards (and its translation noise) come from `numpy.random.default_rng([seed, 0, n])`, the bot's
action draws from one `numpy.random.default_rng([seed, 1])` stream, so a seed and the same input give
the same transcript. Amounts typed and shown for bets and raises are "to" amounts: the player's total
for the current betting round, as `nlhe` and pokerkit count them.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import NamedTuple, TextIO

import numpy as np

from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import card_text

STREET_NAMES = ('preflop', 'flop', 'turn', 'river')
HELP = (
  'commands: f fold | c check or call | b AMOUNT bet or raise to AMOUNT (your total for this betting '
  'round, as the legal line shows) | a all-in | q quit | ? help'
)


class EngineMismatch(RuntimeError):
  """pokerkit and `nlhe` disagree about a hand: an internal error, never the user's."""


class Options(NamedTuple):
  """The legal actions of the player to act; amounts are that player's round totals unless said."""

  actor: int  # our player to act
  can_fold: bool
  to_call: int  # chips to add to check (0) or call
  call_to: int  # round total after checking or calling
  can_raise: bool
  min_raise_to: int  # 0 where no raise is allowed
  max_raise_to: int  # the all-in raise-to amount; 0 where no raise is allowed
  behind: int  # the actor's chips behind
  is_bet: bool  # nothing bet yet this round: a raise is a bet


def _kit_cards(cards) -> str:
  return ''.join(card_text(int(card)) for card in cards)


def cards_text(cards) -> str:
  """Cards as 'As Kd 7h'."""
  return ' '.join(card_text(int(card)) for card in cards)


class Table:
  """One hand played by pokerkit and `nlhe` in lockstep (see the module docstring).

  hole int [2, 2] (our players: 0 the button), board int [5] (all five, shown street by street),
  noise float [L] (the hand's `nlhe` noise; default zeros)."""

  def __init__(self, hole, board, noise=None, rules=nlhe.DEFAULT_RULES):
    import pokerkit  # noqa: PLC0415  (Python >= 3.11; `play_cli` checks before it gets here)

    self.state = nlhe.initial(
      np.asarray(hole)[None],
      np.asarray(board)[None],
      rules,
      None if noise is None else np.asarray(noise)[None],
    )
    self.rules = rules
    automations = (
      pokerkit.Automation.ANTE_POSTING,
      pokerkit.Automation.BET_COLLECTION,
      pokerkit.Automation.BLIND_OR_STRADDLE_POSTING,
      pokerkit.Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
      pokerkit.Automation.HAND_KILLING,
      pokerkit.Automation.CHIPS_PUSHING,
      pokerkit.Automation.CHIPS_PULLING,
      pokerkit.Automation.RUNOUT_COUNT_SELECTION,
    )
    # Heads-up, pokerkit's player 0 posts the big blind: its player i is our player 1 - i.
    self.kit = pokerkit.NoLimitTexasHoldem.create_state(
      automations, True, rules.ante, (rules.small_blind, rules.big_blind), rules.big_blind, rules.stack, 2
    )
    self.kit.deal_hole(_kit_cards(self.state.hole[0, 1]))
    self.kit.deal_hole(_kit_cards(self.state.hole[0, 0]))
    self._dealt = 0
    self._check()

  @property
  def finished(self) -> bool:
    return bool(self.state.finished[0])

  @property
  def street(self) -> int:
    return int(self.state.street[0])

  @property
  def pot(self) -> int:
    return int(nlhe.pot(self.state)[0])

  @property
  def stacks(self) -> tuple[int, int]:
    """Chips behind of our players 0 and 1."""
    behind = nlhe.stacks(self.state)[0]
    return int(behind[0]), int(behind[1])

  @property
  def board(self) -> np.ndarray:
    """The visible board, int [0, 3, 4 or 5]."""
    return self.state.board[0, : nlhe.board_size(self.state)[0]]

  def options(self) -> Options:
    """The legal actions of the player to act, from `nlhe`, checked against pokerkit's."""
    if self.finished:
      raise ValueError('the hand is over')
    legal = nlhe.legal(self.state)
    player = int(self.state.to_act[0])
    mine = int(self.state.round_bet[0, player])
    options = Options(
      actor=player,
      can_fold=bool(legal.can_fold[0]),
      to_call=int(legal.call_to[0]) - mine,
      call_to=int(legal.call_to[0]),
      can_raise=bool(legal.can_raise[0]),
      min_raise_to=int(legal.min_raise_to[0]),
      max_raise_to=int(legal.max_raise_to[0]),
      behind=self.stacks[player],
      is_bet=int(self.state.round_bet[0].max()) == 0,
    )
    kit = self.kit
    if kit.actor_index is None:
      raise EngineMismatch(f'nlhe has player {player} to act; pokerkit has nobody')
    can_raise = kit.can_complete_bet_or_raise_to()
    theirs = (
      1 - kit.actor_index,
      kit.can_fold(),
      int(kit.checking_or_calling_amount),
      can_raise,
      int(kit.min_completion_betting_or_raising_to_amount) if can_raise else 0,
      int(kit.max_completion_betting_or_raising_to_amount) if can_raise else 0,
    )
    ours = (
      player,
      options.can_fold,
      options.to_call,
      options.can_raise,
      options.min_raise_to,
      options.max_raise_to,
    )
    if ours != theirs:
      raise EngineMismatch(
        f'legal actions differ: nlhe (actor, fold, to call, raise, min, max) {ours}, pokerkit {theirs}'
      )
    return options

  def act(self, kind: int, amount: int = 0) -> None:
    """The player to act folds (0), checks or calls (1), or bets or raises to `amount` (2), in both
    engines; ValueError (nothing applied) if the action is illegal."""
    if not bool(nlhe.is_legal(self.state, kind, amount)[0]):
      raise ValueError(f'illegal action: kind {kind}, amount {amount}')
    self.state = nlhe.apply(self.state, np.array([kind]), np.array([amount], np.int64))
    if kind == nlhe.FOLD:
      self.kit.fold()
    elif kind == nlhe.CALL:
      self.kit.check_or_call()
    else:
      self.kit.complete_bet_or_raise_to(int(amount))
    self._check()

  def _deal_boards(self) -> None:
    """Deals the board cards pokerkit asks for, from this hand's board (burn cards unknown, so that
    pokerkit never draws from its own deck)."""
    while self.kit.can_burn_card() or self.kit.can_deal_board():
      if self.kit.can_burn_card():
        self.kit.burn_card('??')
        continue
      count = 3 if self._dealt == 0 else 1
      self.kit.deal_board(_kit_cards(self.state.board[0, self._dealt : self._dealt + count]))
      self._dealt += count

  def _check(self) -> None:
    """Deals what pokerkit needs, then compares the engines: EngineMismatch if they differ."""
    self._deal_boards()
    kit = self.kit
    kit_finished = kit.actor_index is None
    if kit_finished != self.finished:
      raise EngineMismatch(f'finished: nlhe {self.finished}, pokerkit {kit_finished}')
    if self.finished:
      self.payoffs()
      return
    ours = (int(self.state.to_act[0]), self.pot, self.stacks, _kit_cards(self.board))
    theirs = (
      1 - kit.actor_index,
      int(kit.total_pot_amount),
      (int(kit.stacks[1]), int(kit.stacks[0])),
      ''.join(card.rank.value + card.suit.value for board in kit.board_cards for card in board),
    )
    if ours != theirs:
      raise EngineMismatch(f'(actor, pot, stacks, board) differ: nlhe {ours}, pokerkit {theirs}')

  def payoffs(self) -> tuple[int, int]:
    """Chips won by our players 0 and 1 in the finished hand; both engines must agree."""
    ours = tuple(int(x) for x in nlhe.payoffs(self.state)[0])
    theirs = (int(self.kit.payoffs[1]), int(self.kit.payoffs[0]))
    if ours != theirs:
      raise EngineMismatch(f'payoffs differ: nlhe {ours}, pokerkit {theirs}')
    return ours

  def shown(self) -> list[int]:
    """Our players whose hole cards pokerkit showed at the showdown (none after a fold), in the order
    shown."""
    import pokerkit  # noqa: PLC0415

    return [
      1 - operation.player_index
      for operation in self.kit.operations
      if isinstance(operation, pokerkit.HoleCardsShowingOrMucking) and operation.hole_cards
    ]

  def hand_label(self, player: int) -> str:
    """pokerkit's name of `player`'s best five-card hand on the full board, e.g. 'two pair'."""
    import pokerkit  # noqa: PLC0415

    hand = pokerkit.StandardHighHand.from_game(
      _kit_cards(self.state.hole[0, player]), _kit_cards(self.state.board[0])
    )
    return str(hand.entry.label.value).lower()


# What the person types.


class BadCommand(ValueError):
  """Input at the prompt that is not a legal action now: one line saying why."""


QUIT, HELP_COMMAND, SHOW = 'quit', 'help', 'show'


def legal_line(options: Options) -> str:
  """The legal actions with amounts, e.g. 'f fold | c call 350 | b 700..20000 raise to | a all-in 20000'."""
  parts = ['f fold'] if options.can_fold else []
  if options.to_call == 0:
    parts.append('c check')
  else:
    parts.append(f'c call {options.to_call}' + (' (all-in)' if options.to_call == options.behind else ''))
  if options.can_raise:
    if options.min_raise_to < options.max_raise_to:
      parts.append(
        f'b {options.min_raise_to}..{options.max_raise_to} {"bet" if options.is_bet else "raise to"}'
      )
    parts.append(f'a all-in {options.max_raise_to}')
  return ' | '.join(parts)


def parse_command(text: str, options: Options) -> tuple[int, int] | str:
  """(kind, amount) of a legal action typed at the prompt, or QUIT, HELP_COMMAND or SHOW (empty
  input: show the legal line again); BadCommand with one line otherwise."""
  words = text.strip().lower().split()
  if not words:
    return SHOW
  command, rest = words[0], words[1:]
  if command[0] == 'b' and len(command) > 1 and command[1:2].isdigit():  # 'b450'
    command, rest = 'b', [command[1:], *rest]
  if command in ('q', 'quit', 'exit'):
    return QUIT
  if command in ('?', 'h', 'help'):
    return HELP_COMMAND
  if command not in ('f', 'c', 'b', 'a') or (rest and command != 'b') or len(rest) > 1:
    raise BadCommand(f'unknown command {text.strip()!r}; {HELP}')
  if command == 'f':
    if not options.can_fold:
      raise BadCommand('nothing to call: check with c (you may fold only when facing a bet)')
    return nlhe.FOLD, 0
  if command == 'c':
    return nlhe.CALL, 0
  if not options.can_raise:
    if command == 'a' and options.to_call == options.behind:  # calling puts the person all-in
      return nlhe.CALL, 0
    why = 'the bot is all-in' if options.to_call < options.behind else 'you cannot cover more than the call'
    raise BadCommand(
      f'no bet or raise is possible ({why}): c to {"call" if options.to_call else "check"}'
      + (' or f to fold' if options.can_fold else '')
    )
  if command == 'a':
    return nlhe.RAISE, options.max_raise_to
  span = f'{options.min_raise_to}..{options.max_raise_to}'
  if not rest:
    raise BadCommand(f'b needs an amount: b AMOUNT bets or raises to AMOUNT this round ({span})')
  try:
    amount = int(rest[0].replace(',', ''))
  except ValueError:
    raise BadCommand(f'{rest[0]!r} is not a whole number of chips: b AMOUNT, AMOUNT in {span}') from None
  if amount > options.max_raise_to:
    raise BadCommand(
      f'{amount} is more than you have: {options.behind} behind, so at most {options.max_raise_to} this '
      f'round (a for all-in)'
    )
  if amount < options.min_raise_to:
    least = 'the only raise is all-in' if options.min_raise_to == options.max_raise_to else 'the minimum is'
    raise BadCommand(f'{amount} is too small: {least} {options.min_raise_to} this round ({span})')
  return nlhe.RAISE, amount


def describe(who: str, kind: int, amount: int, options: Options) -> str:
  """An action in words, e.g. 'bot raises to 450', 'you call 350 (all-in)'. `options` are the ones
  the action was chosen from."""
  person = who == 'you'
  verb = lambda plain, third: plain if person else third  # noqa: E731
  if kind == nlhe.FOLD:
    return f'{who} {verb("fold", "folds")}'
  if kind == nlhe.CALL:
    if options.to_call == 0:
      return f'{who} {verb("check", "checks")}'
    all_in = ' (all-in)' if options.to_call == options.behind else ''
    return f'{who} {verb("call", "calls")} {options.to_call}{all_in}'
  all_in = ' (all-in)' if amount == options.max_raise_to else ''
  if options.is_bet:
    return f'{who} {verb("bet", "bets")} {amount}{all_in}'
  return f'{who} {verb("raise", "raises")} to {amount}{all_in}'


# The game loop.


@dataclasses.dataclass
class Summary:
  """The person's results: chips won per finished hand (an abandoned hand is not counted)."""

  results: list = dataclasses.field(default_factory=list)
  big_blind: int = nlhe.DEFAULT_RULES.big_blind

  @property
  def hands(self) -> int:
    return len(self.results)

  @property
  def chips(self) -> int:
    return int(sum(self.results))

  @property
  def mbb_per_hand(self) -> float:
    """Milli-big-blinds per hand: chips / big blind * 1000 / hands (0 with no hands)."""
    return self.chips / self.big_blind * 1000 / self.hands if self.hands else 0.0

  def line(self) -> str:
    hands = f'{self.hands} hand{"" if self.hands == 1 else "s"}'
    return f'{self.chips:+d} chips over {hands} ({self.mbb_per_hand:+.1f} mbb/hand)'


class _Quit(Exception):
  pass


def bot_action(policy, state: nlhe.HandState, rng: np.random.Generator) -> tuple[int, int]:
  """(kind, amount) of the player to act in the one-hand `state`, sampled from `policy` with one
  uniform draw of `rng`; RuntimeError if the policy answers wrongly or illegally."""
  holes = state.hole[:, state.to_act[0]][:, None, :]  # [1, 1, 2]
  actions, probs = policy.strategy(state, holes)
  try:
    probs = match.check_strategy(policy, actions, probs, 1)
  except ValueError as error:
    raise RuntimeError(str(error)) from None
  choice = int(match.sample_actions(probs, np.array([rng.random()]))[0])
  kind, amount = int(np.asarray(actions.kind)[0, choice]), int(np.asarray(actions.amount)[0, choice])
  if not nlhe.is_legal(state, kind, amount)[0]:
    raise RuntimeError(f'policy {policy.name}: chose an illegal action (kind {kind}, amount {amount})')
  return kind, amount


def deal_hand(seed: int, number: int, rules=nlhe.DEFAULT_RULES):
  """Hand `number`'s cards and noise: (hole int [2, 2], board int [5], noise float [L])."""
  rng = np.random.default_rng([seed, 0, number])
  cards = rng.permutation(52)[:9]
  return cards[:4].reshape(2, 2), cards[4:], rng.random(nlhe.max_actions(rules))


def play(
  policy,
  *,
  seed: int = 0,
  hands: int | None = None,
  stdin: TextIO,
  stdout: TextIO,
  rules=nlhe.DEFAULT_RULES,
) -> Summary:
  """Plays hands of the person at `stdin` / `stdout` against `policy` until `q`, the end of the input,
  or `hands` hands; prints the summary and returns it. Input typed at a terminal is echoed by the
  terminal; input from a pipe or file is echoed here, so the transcript reads the same."""
  echo = not (hasattr(stdin, 'isatty') and stdin.isatty())
  bot_rng = np.random.default_rng([seed, 1])
  summary = Summary(big_blind=rules.big_blind)
  say = lambda text='': print(text, file=stdout, flush=True)  # noqa: E731
  say(
    f"You play heads-up no-limit hold'em against {policy.name} (blinds {rules.small_blind}/"
    f'{rules.big_blind}, stacks {rules.stack} every hand).\n{HELP}'
  )
  number = 0
  try:
    while hands is None or number < hands:
      number += 1
      result = _play_hand(policy, number, seed, rules, bot_rng, stdin, stdout, echo, say)
      summary.results.append(result)
      say(f'score: you {summary.line()}')
  except _Quit:
    pass
  except KeyboardInterrupt:  # Ctrl-C: the summary, then the interruption goes on up
    say(f'\n(interrupted: hand {number} abandoned, not scored)')
    _say_summary(summary, say, policy)
    raise
  _say_summary(summary, say, policy)
  return summary


STREETS = ('preflop', 'flop', 'turn', 'river')


def _say_summary(summary: Summary, say, policy) -> None:
  """The score; for a bot that times its decisions per street (the search bot's `timings`: seconds
  per decision it worked out), the median think time on each street and how many decisions."""
  say(
    f'summary: {summary.hands} hand{"" if summary.hands == 1 else "s"} played, you {summary.chips:+d} '
    f'chips, {summary.mbb_per_hand:+.1f} mbb/hand'
  )
  timings = getattr(policy, 'timings', None) or {}
  streets = [
    f'{STREETS[street]} {1000 * statistics.median(times):.0f} ms ({len(times)})'
    for street, times in sorted(timings.items())
    if times
  ]
  if streets:
    say(f'bot think time, median per decision (decisions): {", ".join(streets)}')


def _play_hand(policy, number, seed, rules, bot_rng, stdin, stdout, echo, say) -> int:
  """Plays hand `number`; returns the person's chips won. _Quit on `q` or the end of the input."""
  me = 0 if number % 2 else 1
  bot = 1 - me
  hole, board, noise = deal_hand(seed, number, rules)
  table = Table(hole, board, noise, rules)
  seats = (f'the button (small blind {rules.small_blind})', f'the big blind ({rules.big_blind})')
  say()
  say(f'=== hand {number}: you are {seats[me]}, the bot {seats[bot]} ===')
  say(f'your cards: {cards_text(hole[me])}')
  street = 0
  while not table.finished:
    if table.street != street:
      street = table.street
      say(f'--- {STREET_NAMES[street]}: {cards_text(table.board)} (pot {table.pot})')
    options = table.options()
    if options.actor == bot:
      kind, amount = bot_action(policy, table.state, bot_rng)
      say(describe('bot', kind, amount, options))
      table.act(kind, amount)
      continue
    behind = table.stacks
    say(
      f'{STREET_NAMES[street]} | you {cards_text(hole[me])} | board {cards_text(table.board) or "--"} | '
      f'pot {table.pot} | stacks: you {behind[me]}, bot {behind[bot]}'
    )
    say(f'  {legal_line(options)}')
    while True:
      stdout.write('> ')
      stdout.flush()
      line = stdin.readline()
      if not line:  # the end of the input (Ctrl-D at a terminal)
        say()
        say(f'(end of input: hand {number} abandoned, not scored)')
        raise _Quit
      if echo:
        stdout.write(line if line.endswith('\n') else line + '\n')
      try:
        command = parse_command(line, options)
      except BadCommand as error:
        say(str(error))
        continue
      if command == QUIT:
        say(f'(hand {number} abandoned, not scored)')
        raise _Quit
      if command == HELP_COMMAND:
        say(HELP)
        continue
      if command == SHOW:
        say(f'  {legal_line(options)}')
        continue
      break
    kind, amount = command
    say(describe('you', kind, amount, options))
    table.act(kind, amount)
  payoffs = table.payoffs()
  won = payoffs[me]
  folded = int(table.state.folded[0])
  if folded >= 0:  # as hand histories put it: the uncalled part of the last bet goes back
    winner = 'you' if folded == bot else 'the bot'
    uncalled = int(table.state.committed[0, 1 - folded] - table.state.committed[0, folded])
    returned = (
      f'uncalled bet ({uncalled}) returned to {"you" if folded == bot else "the bot"}; ' if uncalled else ''
    )
    say(f'{returned}{winner} {"collect" if folded == bot else "collects"} the pot of {table.pot - uncalled}')
  else:
    say(f'showdown: board {cards_text(table.state.board[0])} (pot {table.pot})')
    shown = table.shown()
    for player in (me, bot):
      who = 'you' if player == me else 'bot'
      if player in shown:
        say(f'  {who}: {cards_text(table.state.hole[0, player])} ({table.hand_label(player)})')
      elif player == me:
        say(f'  you: {cards_text(table.state.hole[0, player])} ({table.hand_label(player)}; mucked)')
      else:
        say('  bot: mucked')
  after = [rules.stack + payoffs[0], rules.stack + payoffs[1]]
  outcome = f'you win {won}' if won > 0 else (f'you lose {-won}' if won < 0 else 'split pot: you win 0')
  say(f'hand {number}: {outcome} chips; stacks after the hand: you {after[me]}, bot {after[bot]}')
  return won
