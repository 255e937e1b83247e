"""A policy at a real table: the table's hand as the policy's game, its answer as a legal table action,
inside the table's clock.

    seat = Seat(policy, seed=0)
    seat.warm_up()                                   # compile before the first hand
    kind, amount = seat.act(hand, deadline)          # hand: a `tables.hand.TableHand`; legal in it

The table's numbers (blinds, ante, stacks) need not be the policy's: a blueprint plays its own game
(`rules_of(policy)`, 50/100 and 20,000 behind for every jaxcfr blueprint today), and a policy of any
depth (a baseline, the depth-aware bot `jaxcfr.poker.eval.depth.DepthAware`, the search bot, which
re-solves at the real stacks) the table's blinds and antes with the hand's effective stack
(`Seat.model_rules`); the table's hand is read into that game in big blinds (`model_state`):

- every amount is scaled by the ratio of the big blinds, and a raise is clamped into the policy's
  legal raise range (a raise the policy's game cannot hold, past its stacks, is its all-in); a fold
  where the policy's game has nothing to call is its check; a blueprint's own game has no antes (the
  pot it sees is short by them, at most a quarter of a big blind each);
- where the two games part (the policy's game has ended, or waits for another player or street, as
  when a table's short stack is all-in where the policy's is not), the seat checks or calls.

The answer is scaled back and clamped into the table's legal range, so that it is legal whatever the
policy said: a raise where the table allows none is a call, a fold where nothing is to call a check.

The clock: `act` takes a deadline (`time.monotonic()`). A search bot (a policy with a `blueprint` and
a `config`, `jaxcfr.poker.search.SearchPolicy`) re-solves with at most the seconds left after its
measured overhead on that street (leaf values, range tracking), and answers with its blueprint where
even its least search would not fit; a search that still runs past the deadline (a first compile) is
left to finish in the background while the seat answers with the blueprint, and the search is not
asked again until it has finished.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import threading
import time
import zlib

import numpy as np

from jaxcfr.poker.eval import depth, match
from jaxcfr.poker.rules import nlhe

MARGIN_SECONDS = 0.15  # kept back from a table's deadline for the answer's own work (at most 10% of it)
OVERHEAD_SAMPLES = 32  # a street's last re-solves that the estimates read
HANDS_KEPT = 8  # hands whose translation noise a seat keeps (one hand at a time at a table)


def rules_of(policy) -> nlhe.NoLimitRules:
  """The game a policy plays: its blueprint tree's rules, else the default game (baselines play any)."""
  return depth.rules_of(policy) or nlhe.DEFAULT_RULES


def model_state(hand, rules: nlhe.NoLimitRules, noise: np.ndarray) -> tuple[nlhe.HandState, bool]:
  """(the one-hand `nlhe.HandState` [1] of `rules` that stands for the table's `hand`, whether it is
  the policy's decision): cards as at the table (the opponent's and the unseen board's are filler
  cards no policy reads), each table action scaled and clamped as the module says."""
  scale = rules.big_blind / hand.rules.big_blind
  known = [*hand.hole, *hand.board]
  filler = [card for card in range(52) if card not in known][: 9 - len(known)]
  hole = np.zeros((1, 2, 2), np.int8)
  hole[0, hand.seat] = hand.hole
  hole[0, 1 - hand.seat] = filler[:2]
  board = np.array([[*hand.board, *filler[2:]]], np.int8)
  state = nlhe.initial(hole, board, rules, noise[None])
  for street, kind, amount in hand.actions:
    if state.finished[0] or int(state.street[0]) != street:
      return state, False
    options = nlhe.legal(state)
    if kind == nlhe.FOLD and not options.can_fold[0]:
      kind = nlhe.CALL
    if kind == nlhe.RAISE:
      if not options.can_raise[0]:
        kind = nlhe.CALL
      amount = int(np.clip(round(amount * scale), options.min_raise_to[0], options.max_raise_to[0]))
    state = nlhe.apply(state, kind, amount if kind == nlhe.RAISE else 0)
  deciding = (
    not state.finished[0] and int(state.to_act[0]) == hand.seat and int(state.street[0]) == hand.street
  )
  return state, deciding


def table_action(hand, kind: int, amount: int, scale: float) -> tuple[int, int]:
  """The policy's action (kind, raise-to amount in its own chips) as a legal action of the table's
  `hand`: the amount divided by `scale` (the policy's big blind over the table's), clamped into the
  table's raise range; a raise the table does not allow is a call, a fold with nothing to call a
  check."""
  options = hand.legal()
  if kind == nlhe.RAISE and options.can_raise:
    to = int(round(amount / scale))
    return nlhe.RAISE, int(min(max(to, options.min_raise_to), options.max_raise_to))
  if kind == nlhe.FOLD and options.can_fold:
    return nlhe.FOLD, 0
  return nlhe.CALL, int(options.call_to)


def check_call(hand) -> tuple[int, int]:
  """Check or call: legal in every hand that waits for an action."""
  return nlhe.CALL, int(hand.legal().call_to)


@dataclasses.dataclass
class Decision:
  """How the last `act` was answered: `by` 'policy', 'blueprint' (the search's fallback) or 'check/call'
  (the games parted), and its wall seconds."""

  by: str
  seconds: float


class Seat:
  """`policy` at a table (see the module): draws its actions from `numpy.random.default_rng([seed, 1])`
  and each hand's translation noise from `default_rng([seed, 0, hand key])`, so a seed and the same
  table give the same actions."""

  def __init__(self, policy, *, seed: int = 0, margin: float = MARGIN_SECONDS):
    self.policy = policy
    self.rules = rules_of(policy)
    self._any_depth = depth.rules_of(policy) is None  # plays each hand at the table's own depth
    self.seed = seed
    self.margin = margin
    self.last = Decision('none', 0.0)
    self.counts = collections.Counter()  # answers by kind ('policy', 'blueprint', 'check/call')
    self._rng = np.random.default_rng([seed, 1])
    self._noise = collections.OrderedDict()
    searching = hasattr(policy, 'config') and hasattr(policy, 'blueprint')
    self._search = policy if searching else None
    # The search's fallback answers from its own copy of the blueprint: the search may still run in
    # the background, and a policy's caches are not shared between threads.
    self._fallback = _own_copy(policy.blueprint) if searching else None
    # street -> the last re-solves' (seconds, iterations, think seconds), for `_estimates`
    self._timings = collections.defaultdict(lambda: collections.deque(maxlen=OVERHEAD_SAMPLES))
    self._busy = None  # the thread of a search that overran its deadline, until it ends
    self._config = policy.config if searching else None  # the search's own budget, before any cut

  def warm_up(self, seed: int = 0) -> float:
    """Plays two hands of the policy against itself to the river, one checked and called down, one
    with a minimum bet on every street, so that what the policy compiles on each street is compiled
    before a table's first hand; then two more on other cards, whose re-solves (compiled now) are
    the first measure of a search's time on each street. Returns the wall seconds."""
    started = time.monotonic()
    for round_seed, measured in ((seed, False), (seed + 1, self._search is not None)):
      self._play_through(round_seed, measured)
    return time.monotonic() - started

  def _play_through(self, seed: int, measured: bool) -> None:
    """Two hands of the policy (and the fallback) against itself (see `warm_up`)."""
    cards = np.stack([np.random.default_rng([seed, 3, hand]).permutation(52)[:9] for hand in range(2)])
    state = nlhe.initial(cards[:, :4].reshape(2, 2, 2), cards[:, 4:], self.rules)
    while not state.finished.all():
      live = np.flatnonzero(~state.finished)
      sub = nlhe.take(state, live)
      holes = sub.hole[np.arange(len(live)), sub.to_act][:, None, :]
      solves = len(getattr(self._search, 'solves', ()))
      self.policy.strategy(sub, holes)
      if measured:
        self._learn(solves, self._config)
      if self._fallback is not None:
        self._fallback.strategy(sub, holes)
      options = nlhe.legal(state)
      betting = (np.arange(2) == 1) & options.can_raise & (state.round_bet.max(1) == 0)
      state = nlhe.apply(state, np.where(betting, nlhe.RAISE, nlhe.CALL), options.min_raise_to)

  def act(self, hand, deadline: float | None = None, hand_key=None) -> tuple[int, int]:
    """A legal action (kind, raise-to amount in the table's chips) of our seat in `hand` (a
    `TableHand` whose turn is ours), answered by `deadline` (`time.monotonic()`) less the margin
    where given; `hand_key` names the hand for its translation noise (default: its seat, cards and
    stacks)."""
    started = time.monotonic()
    key = (hand.seat, tuple(hand.hole), tuple(hand.stacks)) if hand_key is None else hand_key
    rules = self.model_rules(hand)
    state, deciding = model_state(hand, rules, self._hand_noise(key, rules))
    if not deciding:
      return self._answer(hand, check_call(hand), 'check/call', started)
    budget = None if deadline is None else (deadline - started) - min(self.margin, 0.1 * (deadline - started))
    policy, by = self._choose(int(state.street[0]), budget)
    holes = state.hole[:, hand.seat][:, None, :]
    answer = self._ask(policy, state, holes, started, budget)
    if answer is None:  # the search overran: the blueprint answers
      policy, by = self._fallback, 'blueprint'
      answer = _draw(policy, state, holes, self._rng.random())
    kind, amount = answer
    scale = rules.big_blind / hand.rules.big_blind
    return self._answer(hand, table_action(hand, kind, amount, scale), by, started)

  def _answer(self, hand, action, by, started):
    self.last = Decision(by, time.monotonic() - started)
    self.counts[by] += 1
    options = hand.legal()
    kind, amount = action
    legal = (
      kind == nlhe.CALL
      or kind == nlhe.FOLD
      and options.can_fold
      or kind == nlhe.RAISE
      and options.can_raise
      and options.min_raise_to <= amount <= options.max_raise_to
    )
    return action if legal else check_call(hand)  # unreachable by construction; a table sees no bug

  def _choose(self, street: int, budget: float | None):
    """(the policy to ask, its name in `Decision.by`): the search with its think time cut to the
    budget, or its blueprint where the budget would not cover the search's least work."""
    search = self._search
    if search is None:
      return self.policy, 'policy'
    if self._busy is not None and self._busy.is_alive():
      return self._fallback, 'blueprint'
    self._busy = None
    if budget is None or street not in search.config.streets:
      search.config = self._config
      return search, 'policy'
    config = self._config
    # The streets whose least search fits the budget: the others are the blueprint's, in the ranges
    # the search tracks too (else a turn decision would re-solve the bot's own flop to track it).
    fits = tuple(s for s in config.streets if self._estimates(s, config)[1] <= budget)
    if street not in fits:
      return self._fallback, 'blueprint'
    overhead = self._estimates(street, config)[0]
    think = config.seconds(street)
    think = budget - overhead if think is None else min(think, budget - overhead)
    search.config = dataclasses.replace(
      config, streets=fits, think_seconds=max(think, 1e-3), flop_seconds=None
    )
    return search, 'policy'

  def _ask(self, policy, state, holes, started, budget):
    """(kind, amount) drawn from `policy`; None where a search ran past the budget (it goes on in the
    background, `_busy`)."""
    u = self._rng.random()
    if policy is not self._search or budget is None:
      return _draw(policy, state, holes, u)
    done = {}
    solves, config = len(self._search.solves), self._search.config

    def work():
      done['answer'] = _draw(policy, state, holes, u)
      self._learn(solves, config)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(max(budget - (time.monotonic() - started), 0.0))
    if thread.is_alive():
      self._busy = thread
      return None
    return done['answer']

  def finish(self) -> None:
    """Waits for a search that overran its deadline to end (an interpreter that exits while a
    compiled program runs on a thread aborts)."""
    if self._busy is not None:
      self._busy.join()
      self._busy = None

  def _learn(self, solves: int, config) -> None:
    """Keeps the re-solves the search made since its `solves`-th, under `config`: (seconds, iterations,
    think seconds) per street."""
    for street, iterations, _, seconds in self._search.solves[solves:]:
      self._timings[street].append((seconds, max(iterations, 1), config.seconds(street) or 0.0))

  def _estimates(self, street: int, config) -> tuple[float, float]:
    """(overhead, least) seconds of a re-solve on `street` from the last ones kept: the overhead is
    the median time a re-solve took beyond its think time (leaf values, range tracking), the least the
    median time of one scaled to `least_iterations` iterations (its overhead counted in)."""
    records = list(self._timings[street])  # one C call: a search still running may append
    if not records:
      return 0.0, 0.02 * config.least_iterations  # nothing measured yet: a few ms an iteration
    # Medians: a re-solve that compiled a new tree shape takes seconds, once.
    overhead = statistics.median(max(seconds - think, 0.0) for seconds, _, think in records)
    least = statistics.median(seconds * min(config.least_iterations / n, 1.0) for seconds, n, _ in records)
    return overhead, max(least, overhead)

  def model_rules(self, hand) -> nlhe.NoLimitRules:
    """The game the policy plays `hand` in: its own (a blueprint's), or for a policy of any depth (a
    baseline, `depth.DepthAware`) the table's blinds and antes with the effective stack."""
    if not self._any_depth:
      return self.rules
    big, ante = hand.rules.big_blind, hand.antes[0]
    return nlhe.NoLimitRules(max(1, hand.rules.small_blind), big, max(min(hand.stacks), ante + big + 1), ante)

  def _hand_noise(self, key, rules: nlhe.NoLimitRules) -> np.ndarray:
    """The hand's translation noise float [L] (`nlhe.HandState.noise`, L of `rules`), drawn once per
    hand key."""
    length = nlhe.max_actions(rules)
    if key not in self._noise or len(self._noise[key]) != length:
      seed = key if isinstance(key, int) and key >= 0 else zlib.crc32(repr(key).encode())
      self._noise[key] = np.random.default_rng([self.seed, 0, seed]).random(length)
      while len(self._noise) > HANDS_KEPT:
        self._noise.popitem(last=False)
    return self._noise[key]


def _draw(policy, state: nlhe.HandState, holes: np.ndarray, u: float) -> tuple[int, int]:
  """(kind, amount) of the one-hand `state`'s player to act, drawn from `policy` with the uniform u."""
  actions, probabilities = policy.strategy(state, holes)
  probabilities = match.check_strategy(policy, actions, probabilities, 1)
  choice = int(match.sample_actions(probabilities, np.array([u]))[0])
  return int(np.asarray(actions.kind)[0, choice]), int(np.asarray(actions.amount)[0, choice])


def _own_copy(blueprint):
  """A policy answering as `blueprint` with caches of its own (a `BlueprintPolicy` shares the arrays;
  `depth.AtRules` over one, the search bot's, its own copy); any other policy is itself."""
  if isinstance(blueprint, depth.AtRules):
    return depth.AtRules(_own_copy(blueprint.policy), blueprint.own)
  arrays, buckets = getattr(blueprint, 'blueprint', None), getattr(blueprint, 'buckets', None)
  if arrays is None or buckets is None:
    return blueprint
  return type(blueprint)(arrays, buckets, blueprint.name)
