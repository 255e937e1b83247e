"""Local best response (Lisy & Bowling 2017, arXiv 1612.07547): a lower bound on what a heads-up no-limit
policy (the bot) loses to a best response, the standard exploitability estimate for no-limit bots.

LBR plays the real game against the bot. It tracks the bot's range, weights [B, H] over the hole-card
pairs in the canonical order `abstractions.HOLES`, by Bayes' rule: uniform at the deal over the pairs
that LBR's hole cards and the visible board leave, multiplied at each of the bot's actions by the bot's
probability of that action with each pair (one `Policy.strategy` query with all 1,326 pairs), cleared of
the pairs a new board card blocks, and renormalised. Its actions are set per street (`parse_actions`):
in the paper's main setting ("C/C/FCPA/FCPA", the default) LBR checks or calls preflop and on the flop;
on the turn and river it plays the best of fold, check/call, the pot raise (`nlhe.pot_raise_to`) and
all-in; 'all-streets' ("FCPA/FCPA/FCPA/FCPA") does that on every street. Each action is valued as if the
bot then folds or calls and the hand is checked down, every value relative to folding now (pot: both
players' chips in, b: the chips a raise adds beyond the call):

    wp = equity against pi;  U(fold) = 0;  U(call) = wp * pot - (1 - wp) * to_call
    fp = P(bot folds to b | pi);  pi' = pi over the hands that do not fold;  wp' = equity against pi'
    U(b) = fp * pot + (1 - fp) * (wp' * (pot + b) - (1 - wp') * (to_call + b))

It folds only when nothing is positive and checking is not free; ties go to the more passive action.
Equity counts a tie as half a win, with card removal throughout: exact on the river against each pair,
on the turn averaged over every river card, on the flop over every turn and river (1,081 runouts);
preflop a Monte Carlo mean over PREFLOP_SAMPLES boards drawn with a key of their own (independent of
the deal, so LBR stays a strategy that sees only its own cards). fp comes from querying the bot at the
state after LBR's hypothetical raise.

    result = local_best_response(resolve_policy('equity'), hands=2000, seed=0)
    result.lbr_mbb_per_hand, result.ci95_low, result.ci95_high     # LBR's winnings, mbb/hand

As in the match engine, each deal is played twice with the seats swapped and the same uniform draws for
the bot's sampled actions, and a deal pair's mean is the unit of the normal 95% interval. Deterministic
given (seed, batch): batch c's cards and draws come from `jax.random.fold_in(jax.random.key(seed), c)`,
the same deals and draws as `match.play_match` with that seed and batch.

Glossary: B hands, H = 1,326 hole-card pairs, A actions of the bot's `ActionSet`, R runouts (river
cards, turn and river pairs, or sample boards).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from abstractions import HOLES
from jaxcfr.poker import defaults
from jaxcfr.poker.eval import aivat as aivat_module
from jaxcfr.poker.eval import depth
from jaxcfr.poker.eval.match import Z95, aivat_figures, sample_actions, summarise
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.hands import (  # noqa: F401 (also lbr's names, as before the move)
  NUM_PAIRS,
  PAIR_INDEX,
  action_likelihood,
  blocked,
  initial_range,
  observe,
  query,
  remove_blocked,
)

DEFAULT_BATCH = defaults.LBR_BATCH
# LBR's action set per street (preflop, flop, turn, river): letters of f fold, c check/call, p the pot
# raise, a all-in. The paper's main setting checks or calls preflop and on the flop ('C/C/FCPA/FCPA').
SETTINGS = {
  'turn-river': 'c,c,fcpa,fcpa',
  'all-streets': 'fcpa,fcpa,fcpa,fcpa',
  'flop-on': 'c,fcpa,fcpa,fcpa',
}
DEFAULT_ACTIONS = defaults.LBR_ACTIONS  # = SETTINGS['turn-river']
_CHUNKS = {5: 64, 4: 8, 3: 1, 0: 1}  # rows per jitted equity call by cards shown (padded: one shape each)
PREFLOP_SAMPLES = 1024  # boards per hand of LBR's preflop equity (Monte Carlo)


def parse_actions(text: str) -> tuple[str, str, str, str]:
  """LBR's action set per street from 'c,c,fcpa,fcpa' (four groups of the letters f, c, p, a, each
  with c) or a name in SETTINGS; ValueError with one line otherwise. Letters come back in fcpa order."""
  groups = SETTINGS.get(text, text).split(',')
  if len(groups) != 4 or any(not group or set(group) - set('fcpa') or 'c' not in group for group in groups):
    names = ', '.join(SETTINGS)
    raise ValueError(
      f'LBR actions must be four comma-separated groups of f, c, p, a (fold, check/call, pot, all-in), '
      f'each with c, e.g. c,c,fcpa,fcpa, or one of {names}; got {text!r}'
    )
  return tuple(''.join(letter for letter in 'fcpa' if letter in group) for group in groups)


def setting_name(actions) -> str:
  """The paper's name of an action set: ('c', 'c', 'fcpa', 'fcpa') -> 'C/C/FCPA/FCPA'."""
  return '/'.join(group.upper() for group in actions)


class Decision(NamedTuple):
  """LBR's choice in each of n hands and the values it compared (nan: not offered or not considered,
  e.g. every value before the turn, where LBR checks or calls without looking)."""

  kind: np.ndarray  # int8 [n]  0 fold, 1 check/call, 2 raise
  amount: np.ndarray  # int64 [n]  the raise-to amount of a raise, else 0
  utility: np.ndarray  # float64 [n, 4]  U(fold), U(call), U(pot raise), U(all-in), chips
  raise_to: np.ndarray  # int64 [n, 2]  the pot raise and the all-in (0 where no raise is allowed)
  fold_probability: np.ndarray  # float64 [n, 2]  fp of the pot raise and of the all-in (nan: not asked)
  equity: np.ndarray  # float64 [n]  wp against the whole range


@dataclasses.dataclass(frozen=True)
class LBRResult:
  """LBR's winnings against `policy` in mbb/hand (a lower bound on the policy's exploitability).

  chips: LBR's chips won in each hand, int64 [hands]; lbr_seat: LBR's seat in each hand, int8 [hands]
  (each batch lists its deals with LBR in seat 0, then the same deals with LBR in seat 1); final: the
  finished hands when asked for (`keep_hands`)."""

  policy: str
  hands: int
  deals: int
  seed: int
  batch: int
  big_blind: int
  lbr_mbb_per_hand: float
  ci95_low: float
  ci95_high: float
  sd_mbb: float  # standard deviation of one deal pair's mean
  seat_mbb: tuple[float, float]  # LBR's mbb/hand in seat 0 (small blind, button) and in seat 1
  seat_ci95: tuple[tuple[float, float], tuple[float, float]]
  seconds: float
  policy_seconds: float  # of `seconds`, the time spent in the policy's strategy queries
  actions: tuple[str, str, str, str]  # LBR's action set per street (`parse_actions`)
  aivat: dict | None  # AIVAT's figures (`match.aivat_figures`), None when it was off
  chips: np.ndarray = dataclasses.field(repr=False)
  lbr_seat: np.ndarray = dataclasses.field(repr=False)
  final: nlhe.HandState | None = dataclasses.field(default=None, repr=False)
  aivat_chips: np.ndarray | None = dataclasses.field(default=None, repr=False)  # LBR's estimate per hand
  small_blind: int = nlhe.DEFAULT_RULES.small_blind
  stack: int = nlhe.DEFAULT_RULES.stack  # each player's chips at the start of every hand
  ante: int = 0  # each player's, posted before the blinds

  @property
  def hands_per_second(self) -> float:
    return self.hands / self.seconds if self.seconds > 0 else float('inf')

  def hands_for_precision(self, fraction: float = 0.1) -> int | None:
    """Hands (whole deal pairs) whose 95% interval would be +- `fraction` of the estimate, from this
    run's spread; None when the estimate is 0."""
    if self.lbr_mbb_per_hand == 0 or not math.isfinite(self.sd_mbb):
      return None
    pairs = math.ceil((Z95 * self.sd_mbb / (fraction * abs(self.lbr_mbb_per_hand))) ** 2)
    return 2 * max(pairs, 2)

  def deal_pair_mbb(self, aivat: bool = False) -> np.ndarray:
    """LBR's mbb/hand per deal pair, float64 [deals], in deal order (the unit of the interval; each
    batch lists its deals with LBR in seat 0, then again in seat 1), of the chips or, with `aivat`, of
    AIVAT's estimates. Runs on the same seed and batch share their deals, so two runs' arrays pair up."""
    per_batch, units, at = self.batch // 2, [], 0
    chips = self.aivat_chips if aivat else self.chips
    for first in range(0, self.deals, per_batch):
      count = min(per_batch, self.deals - first)
      won = chips[at : at + 2 * count].astype(np.float64)
      units.append((won[:count] + won[count:]) / 2)
      at += 2 * count
    return np.concatenate(units) * 1000.0 / self.big_blind

  def to_json(self) -> dict:
    """The figures as JSON-ready values (no per-hand arrays)."""
    return dict(
      policy=self.policy,
      lbr_mbb_per_hand=self.lbr_mbb_per_hand,
      ci95_low=self.ci95_low,
      ci95_high=self.ci95_high,
      hands=self.hands,
      deals=self.deals,
      seed=self.seed,
      batch=self.batch,
      big_blind=self.big_blind,
      small_blind=self.small_blind,
      stack=self.stack,
      ante=self.ante,
      setting=setting_name(self.actions),
      lbr_actions=','.join(self.actions),
      sd_mbb=self.sd_mbb,
      hands_for_ci_10pct=self.hands_for_precision(0.1),
      seats=[
        dict(seat=seat, lbr_mbb_per_hand=self.seat_mbb[seat], ci95_low=low, ci95_high=high)
        for seat, (low, high) in enumerate(self.seat_ci95)
      ],
      aivat=self.aivat,
      seconds=self.seconds,
      policy_seconds=self.policy_seconds,
      hands_per_second=self.hands_per_second,
    )


# The bot's range: `rules.hands` (Bayes' rule over the hole pairs, shared with the search bot).


def fold_probabilities(policy, state: nlhe.HandState) -> np.ndarray:
  """P(the bot folds | pair) at every hand of `state` (the bot to act), float64 [B, H]."""
  actions, probs = query(policy, state)
  folds = actions.valid & (actions.kind == nlhe.FOLD)  # [B, A]
  return (probs * folds[:, None, :]).sum(axis=2)


# Equity.


@functools.cache
def _scores_function(shown: int):
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  from abstractions import hand_rank  # noqa: PLC0415
  from jaxcfr.poker.eval.aivat import runout_pairs, sample_boards, unseen_cards  # noqa: PLC0415

  pairs = jnp.asarray(HOLES)

  def score(ours, theirs):
    return jnp.where(ours > theirs, 1.0, jnp.where(ours == theirs, 0.5, 0.0))

  def river(hole, board):
    """[n, H]: 1 where LBR's hole [n, 2] beats the pair on board [n, 5], 1/2 on a tie, else 0."""
    n = hole.shape[0]
    theirs = hand_rank(
      jnp.concatenate(
        [jnp.broadcast_to(pairs, (n, NUM_PAIRS, 2)), jnp.broadcast_to(board[:, None], (n, NUM_PAIRS, 5))], -1
      )
    )
    ours = hand_rank(jnp.concatenate([hole, board], axis=-1))
    return score(ours[:, None], theirs)

  def turn(hole, board):
    """[n, H]: the river score averaged over the R = 46 river cards that neither LBR's hole [n, 2] nor
    the turn board [n, :4] holds, those in the pair left out (44 for a pair the cards do not block)."""
    n = hole.shape[0]
    rivers = unseen_cards(jnp.concatenate([hole, board[:, :4]], axis=1), 46)  # [n, R]
    boards = jnp.concatenate([jnp.broadcast_to(board[:, None, :4], (n, 46, 4)), rivers[..., None]], -1)
    return averaged(hole, boards)

  def averaged(hole, boards):
    """[n, H]: the score on each of the boards [n, R, 5] averaged over those the pair does not touch."""
    n, runs = boards.shape[:2]
    theirs = hand_rank(
      jnp.concatenate(
        [
          jnp.broadcast_to(pairs, (n, runs, NUM_PAIRS, 2)),
          jnp.broadcast_to(boards[:, :, None], (n, runs, NUM_PAIRS, 5)),
        ],
        -1,
      )
    )  # [n, R, H]
    ours = hand_rank(jnp.concatenate([jnp.broadcast_to(hole[:, None], (n, runs, 2)), boards], -1))  # [n, R]
    free = ~(pairs[None, None, :, :, None] == boards[:, :, None, None, :]).any(axis=(-1, -2))  # [n, R, H]
    total = jnp.where(free, score(ours[..., None], theirs), 0.0).sum(axis=1)
    return total / jnp.maximum(free.sum(axis=1), 1)

  def flop(hole, board):
    """[n, H]: the score averaged over every turn and river (C(47, 2) = 1,081 runouts of the cards LBR
    does not see), those touching the pair left out (990 for a pair the cards do not block)."""
    n = hole.shape[0]
    runouts = unseen_cards(jnp.concatenate([hole, board[:, :3]], axis=1), 47)[
      :, runout_pairs(47)
    ]  # [n, R, 2]
    boards = jnp.concatenate([jnp.broadcast_to(board[:, None, :3], (n, runouts.shape[1], 3)), runouts], -1)
    return averaged(hole, boards)

  def preflop(hole, keys):
    """[n, H]: the score averaged over PREFLOP_SAMPLES boards drawn uniformly (5 of the 50 cards LBR
    does not see) with each hand's key, those touching the pair left out: a Monte Carlo estimate."""
    n = hole.shape[0]
    unseen = unseen_cards(hole, 50)  # [n, 50]
    positions = jax.vmap(lambda key: sample_boards(key, 50, PREFLOP_SAMPLES))(keys)  # [n, K, 5]
    boards = jnp.take_along_axis(unseen, positions.reshape(n, -1), axis=1).reshape(n, PREFLOP_SAMPLES, 5)
    return averaged(hole, boards)

  return jax.jit({5: river, 4: turn, 3: flop, 0: preflop}[shown])


def showdown_scores(hole, board, shown, keys=None) -> np.ndarray:
  """LBR's expected showdown score against each pair of the bot if the hand is checked down, float64
  [n, H]: 1 for a win, 1/2 for a tie, 0 for a loss, averaged over the cards still to come that LBR's
  cards, the board and the pair leave (exact on the flop, turn and river; preflop a Monte Carlo mean
  over PREFLOP_SAMPLES boards drawn with `keys` [n], one `jax.random.key` per hand, independent of the
  deal); 0 for the pairs that LBR's cards or the board block.

  hole int [n, 2] LBR's cards; board int [n, 5] (cards past `shown` are ignored); shown int [n]: 0, 3,
  4 or 5. Equity against a range pi is then `equity(pi, scores)`: under card removal every unblocked
  pair meets the same number of runouts, so the average over (pair, runout) is pi-weighted per pair.
  """
  hole, board = np.asarray(hole, np.int32), np.asarray(board, np.int32)
  shown = np.asarray(shown)
  if np.any(~np.isin(shown, (0, 3, 4, 5))):
    raise ValueError('showdown scores need 0, 3, 4 or 5 board cards shown')
  if np.any(shown == 0) and keys is None:
    raise ValueError('preflop showdown scores need keys for their sample boards')
  board = np.where(np.arange(5) < shown[:, None], board, 0)  # hidden cards do not matter
  result = np.zeros((len(hole), NUM_PAIRS))
  for count, chunk in _CHUNKS.items():
    index = np.flatnonzero(shown == count)
    if len(index):
      second = keys[index] if count == 0 else board[index]
      result[index] = aivat_module.chunked(_scores_function(count), chunk, hole[index], second)
  cards = np.concatenate([hole, np.where(np.arange(5) < shown[:, None], board, -1)], axis=1)
  return np.where(blocked(cards), 0.0, result)


def equity(weights: np.ndarray, scores: np.ndarray) -> np.ndarray:
  """LBR's equity float64 [n] against the range `weights` [n, H] (any scale) given its showdown
  `scores` [n, H]; 0 for an empty range."""
  total = weights.sum(axis=1)
  return np.where(total > 0, (weights * scores).sum(axis=1) / np.where(total > 0, total, 1.0), 0.0)


# LBR's decisions and the game loop.


class _Timed:
  """A policy that counts the seconds spent in its strategy queries."""

  def __init__(self, policy):
    self.policy, self.name, self.seconds = policy, getattr(policy, 'name', repr(policy)), 0.0

  def strategy(self, state, holes):
    start = time.perf_counter()
    try:
      return self.policy.strategy(state, holes)
    finally:
      self.seconds += time.perf_counter() - start


def decide(
  policy, state: nlhe.HandState, weights: np.ndarray, scores: np.ndarray, actions=DEFAULT_ACTIONS
) -> Decision:
  """LBR's action in every hand of `state` (unfinished, LBR to act) against the bot's range `weights`
  [n, H] with LBR's showdown `scores` [n, H] (read only where the street's action set `actions`
  (`parse_actions`) offers more than check/call): check or call where it does not, else the best
  value of the module's formulas among the street's actions."""
  actions = parse_actions(actions) if isinstance(actions, str) else actions
  n = len(state.street)
  rows = np.arange(n)
  player = state.to_act.astype(np.int64)
  mine, theirs = state.round_bet[rows, player], state.round_bet[rows, 1 - player]
  options = nlhe.legal(state)
  pot = nlhe.pot(state).astype(np.float64)
  to_call = (options.call_to - mine).astype(np.float64)
  top = np.maximum(mine, theirs)
  offered = np.array([[letter in group for letter in 'fpa'] for group in actions])[state.street]  # [n, 3]
  betting = offered.any(axis=1)
  may_fold = betting & offered[:, 0] & options.can_fold
  wp = np.where(betting, equity(weights, scores), np.nan)
  utility = np.full((n, 4), np.nan)
  utility[:, 0] = np.where(may_fold, 0.0, np.nan)
  utility[:, 1] = np.where(betting, wp * pot - (1 - wp) * to_call, np.nan)
  raise_to = np.stack([nlhe.pot_raise_to(state), options.max_raise_to], axis=1)  # [n, 2]
  fold_probability = np.full((n, 2), np.nan)
  for slot in (0, 1):
    consider = options.can_raise & offered[:, 1 + slot]
    if slot == 1:  # an all-in that is the pot raise has its values
      same = consider & offered[:, 1] & (raise_to[:, 1] == raise_to[:, 0])
      fold_probability[same, 1], utility[same, 3] = fold_probability[same, 0], utility[same, 2]
      consider &= ~same
    index = np.flatnonzero(consider)
    if not len(index):
      continue
    hypothetical = nlhe.apply(nlhe.take(state, index), nlhe.RAISE, raise_to[index, slot])
    fold = fold_probabilities(policy, hypothetical)  # [m, H]
    prior = weights[index]
    fp = equity(prior, fold)  # the range's fold probability
    wp_called = equity(prior * (1 - fold), scores[index])
    bet = (raise_to[index, slot] - top[index]).astype(np.float64)
    p, c = pot[index], to_call[index]
    fold_probability[index, slot] = fp
    utility[index, 2 + slot] = fp * p + (1 - fp) * (wp_called * (p + bet) - (1 - wp_called) * (c + bet))
  best = 1 + np.argmax(np.where(np.isnan(utility[:, 1:]), -np.inf, utility[:, 1:]), axis=1)  # first max
  value = utility[rows, best]
  best = np.where(may_fold & ~(value > 0), 0, np.where(betting, best, 1))
  kind = np.array([nlhe.FOLD, nlhe.CALL, nlhe.RAISE, nlhe.RAISE], np.int8)[best]
  amount = np.where(best >= 2, raise_to[rows, np.maximum(best - 2, 0)], 0)
  return Decision(kind, amount.astype(np.int64), utility, raise_to, fold_probability, wp)


def play(
  policy,
  state: nlhe.HandState,
  lbr_seat: np.ndarray,
  draws: np.ndarray,
  on_step=None,
  actions=DEFAULT_ACTIONS,
  key=None,
  tracker=None,
) -> nlhe.HandState:
  """Plays every hand of `state` to the end: LBR in seat `lbr_seat` int [B] with the action sets
  `actions` (`parse_actions`) against `policy`, whose actions are sampled with the uniforms draws
  float [B, L] (one per action slot of a hand). `key` (a `jax.random.key`, independent of the deal)
  draws the sample boards of LBR's preflop equity, hand i's from `fold_in(key, i)`; needed only where
  LBR acts preflop.

  `tracker` (`aivat.Tracker`), if given, sees the bot's decisions and every chance step (LBR's own
  decisions are deterministic: their corrections are 0).
  on_step(state, weights, kind, amount), if given, sees each step before it is applied: the bot's range
  [B, H] as LBR sees it then, and the actions about to be taken [B] (for tests)."""
  setting = parse_actions(actions) if isinstance(actions, str) else actions
  batch = len(state.street)
  lbr_seat = np.asarray(lbr_seat, np.int64)
  name = getattr(policy, 'name', repr(policy))
  looks = np.array([group != 'c' for group in setting])  # [4] the streets where LBR reads its equity
  keys = None
  if looks[0]:
    import jax  # noqa: PLC0415

    if key is None:
      raise ValueError('LBR that acts preflop needs a key for its preflop equity')
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(np.arange(batch, dtype=np.uint32))
  weights = initial_range(state, lbr_seat)
  scores = np.zeros((batch, NUM_PAIRS))
  scored = np.full(batch, -1)  # the street of each hand's scores
  while not state.finished.all():
    live = ~state.finished
    weights = remove_blocked(weights, state, lbr_seat)
    kind = np.zeros(batch, np.int64)
    amount = np.zeros(batch, np.int64)
    bot = np.flatnonzero(live & (state.to_act != lbr_seat))
    if len(bot):
      sub = nlhe.take(state, bot)
      actions, probs = query(policy, sub)
      n = np.arange(len(bot))
      own = PAIR_INDEX[sub.hole[n, sub.to_act, 0], sub.hole[n, sub.to_act, 1]]
      choice = sample_actions(probs[n, own], draws[bot, state.num_actions[bot]])
      kind[bot], amount[bot] = actions.kind[n, choice], actions.amount[n, choice]
      illegal = ~nlhe.is_legal(sub, kind[bot], amount[bot])
      if illegal.any():
        first = int(np.flatnonzero(illegal)[0])
        raise ValueError(
          f'policy {name}: chose an illegal action (kind {kind[bot][first]}, amount {amount[bot][first]})'
        )
      weights[bot] = observe(weights[bot], actions, probs, choice)
      if tracker is not None:
        tracker.decide(bot, sub, actions, probs[n, own], choice, policy)
    mine = np.flatnonzero(live & (state.to_act == lbr_seat))
    if len(mine):
      need = mine[looks[state.street[mine]] & (scored[mine] != state.street[mine])]
      if len(need):
        hole = state.hole[need, lbr_seat[need]]
        shown = nlhe.board_size(nlhe.take(state, need))
        scores[need] = showdown_scores(hole, state.board[need], shown, None if keys is None else keys[need])
        scored[need] = state.street[need]
      decision = decide(policy, nlhe.take(state, mine), weights[mine], scores[mine], setting)
      kind[mine], amount[mine] = decision.kind, decision.amount
    if on_step is not None:
      on_step(state, weights.copy(), kind.copy(), amount.copy())
    before, state = state, nlhe.apply(state, kind, amount, live)
    if tracker is not None:
      tracker.advance(before, state)
  return state


def local_best_response(
  policy,
  hands: int,
  seed: int = 0,
  batch: int = DEFAULT_BATCH,
  rules=nlhe.DEFAULT_RULES,
  progress: Callable[[int], None] | None = None,
  keep_hands: bool = False,
  actions: str | tuple = DEFAULT_ACTIONS,
  aivat: bool = True,
) -> LBRResult:
  """LBR against `policy` (`nlhe.Policy`) over `hands` hands (rounded up to whole deal pairs, at least
  4), `batch` hands at a time (batch // 2 deals, each in both seats): LBR's mbb/hand with its 95%
  interval over deal pairs, and per seat; see the module. progress(hands_done) is called after each
  batch; keep_hands keeps the finished hands (`final`). `actions`: LBR's action set per street
  (`parse_actions`: 'c,c,fcpa,fcpa', the paper's main setting, by default; 'all-streets' bets
  everywhere). The deals and the bot's draws do not depend on the setting: paired runs compare them.
  With `aivat` the result also carries AIVAT's estimate of LBR's winnings (`eval.aivat`, the check-down
  value; its own random numbers), unbiased like the plain one and usually with less variance."""
  import jax  # noqa: PLC0415

  if not isinstance(hands, int) or isinstance(hands, bool) or hands < 4:
    raise ValueError(f'hands must be a whole number >= 4, got {hands!r}')
  if not isinstance(batch, int) or isinstance(batch, bool) or batch < 2:
    raise ValueError(f'batch must be a whole number >= 2, got {batch!r}')
  if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
    raise ValueError(f'seed must be a non-negative whole number, got {seed!r}')
  actions = parse_actions(actions) if isinstance(actions, str) else parse_actions(','.join(actions))
  policy = depth.at_rules(policy, rules)  # a blueprint of another depth: the hands read into its game
  deals = -(-hands // 2)
  per_batch = batch // 2
  timed = _Timed(policy)
  key = jax.random.key(seed)
  start = time.perf_counter()
  chips, seats, units, finals, estimates, estimate_units = [], [], [], [], [], []
  done = 0
  for chunk, first in enumerate(range(0, deals, per_batch)):
    count = min(per_batch, deals - first)
    chunk_key = jax.random.fold_in(key, chunk)
    deal_key, draw_key = jax.random.split(chunk_key)
    state = nlhe.deal(deal_key, count, rules)
    draws = nlhe.generator(draw_key).random(state.noise.shape)  # [count, L]
    tracker = None
    if aivat:  # one preflop estimate per deal, shared by its two copies
      preflop = aivat_module.preflop_equity(state.hole, jax.random.fold_in(chunk_key, 1))
    state = nlhe.concatenate([state, state])
    draws = np.concatenate([draws, draws])
    lbr_seat = np.repeat(np.array([0, 1], np.int8), count)
    if aivat:
      tracker = aivat_module.Tracker(state, np.concatenate([preflop, preflop]))
    lbr_key = jax.random.fold_in(chunk_key, 2)
    state = play(timed, state, lbr_seat, draws, actions=actions, key=lbr_key, tracker=tracker)
    payoffs = nlhe.payoffs(state)
    won = payoffs[np.arange(2 * count), lbr_seat]
    chips.append(won)
    units.append((won[:count] + won[count:]) / 2)
    if aivat:
      estimate = tracker.estimate(state, payoffs)
      estimate = np.where(lbr_seat == 0, estimate, -estimate)  # LBR's chips
      estimates.append(estimate)
      estimate_units.append((estimate[:count] + estimate[count:]) / 2)
    seats.append(lbr_seat)
    if keep_hands:
      finals.append(state)
    done += 2 * count
    if progress is not None:
      progress(done)
  seconds = time.perf_counter() - start
  summary = summarise(units, chips, seats, rules.big_blind)
  figures = None
  if aivat:
    corrected = summarise(estimate_units, estimates, seats, rules.big_blind)
    figures = aivat_figures(corrected, summary['sd_mbb'], 'equity', aivat_module.DEFAULT_SAMPLES, 0)
  return LBRResult(
    policy=timed.name,
    hands=summary['hands'],
    deals=deals,
    seed=seed,
    batch=batch,
    big_blind=rules.big_blind,
    lbr_mbb_per_hand=summary['mean'],
    ci95_low=summary['ci95_low'],
    ci95_high=summary['ci95_high'],
    sd_mbb=summary['sd_mbb'],
    seat_mbb=summary['seat_mbb'],
    seat_ci95=summary['seat_ci95'],
    seconds=seconds,
    policy_seconds=timed.seconds,
    actions=actions,
    aivat=figures,
    aivat_chips=np.concatenate(estimates) if aivat else None,
    chips=summary['chips'],
    lbr_seat=summary['seats'],
    final=nlhe.concatenate(finals) if keep_hands else None,
    small_blind=rules.small_blind,
    stack=rules.stack,
    ante=rules.ante,
  )
