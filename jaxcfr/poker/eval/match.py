"""The match engine: two policies play N hands of the real game, batched, in duplicate by default.

    result = play_match(resolve_policy('always-pot'), resolve_policy('equity'), hands=20_000, seed=0)
    result.mbb_per_hand, result.ci95_low, result.ci95_high      # A's result, milli-big-blinds per hand

Hands are played in batches of `batch` (NumPy arrays over the batch, `nlhe`): at each step every
policy is asked once, for all the hands where it is to act (`Policy.strategy` with K = 1 hole pair),
and the action is sampled from its probabilities with the match's own uniform draws. In duplicate
mode each deal is played twice with the seats swapped, with the same draws for both copies (common
random numbers), so that a policy against itself scores exactly 0, and the unit of the confidence
interval is a deal pair's mean; otherwise A's seat alternates and the unit is a hand. The 95% interval
is normal: mean +- 1.96 sd / sqrt(units). Deterministic given (seed, batch): batch c's cards and draws
come from `jax.random.fold_in(key(seed), c)`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import numpy as np

from jaxcfr.poker import defaults
from jaxcfr.poker.eval import depth
from jaxcfr.poker.rules import nlhe

DEFAULT_BATCH = defaults.MATCH_BATCH  # hands per batch (deal pairs take two)
Z95 = 1.959963984540054  # the normal 97.5% quantile
# AIVAT's value functions (`eval.aivat`), None: off.
AIVAT_VALUES = ('equity', 'rollouts', 'ranges', 'public', None)


@dataclasses.dataclass(frozen=True)
class MatchResult:
  """A's result against B. chips: A's chips won in each hand, int64 [hands]; a_seat: A's seat in each
  hand, int8 [hands] (in duplicate mode each batch lists its deals with A in seat 0, then the same
  deals with A in seat 1); final: the finished hands when asked for (`keep_hands`)."""

  policy_a: str
  policy_b: str
  hands: int
  deals: int
  duplicate: bool
  seed: int
  batch: int
  big_blind: int
  mbb_per_hand: float
  ci95_low: float
  ci95_high: float
  sd_mbb: float  # standard deviation of one unit (a deal pair's mean, or a hand)
  seat_mbb: tuple[float, float]  # A's mbb/hand in seat 0 (small blind, button) and in seat 1
  seat_ci95: tuple[tuple[float, float], tuple[float, float]]
  seconds: float
  chips: np.ndarray = dataclasses.field(repr=False)
  a_seat: np.ndarray = dataclasses.field(repr=False)
  final: nlhe.HandState | None = dataclasses.field(default=None, repr=False)
  aivat: dict | None = None  # AIVAT's figures (`aivat_figures`), None when it was off
  aivat_chips: np.ndarray | None = dataclasses.field(default=None, repr=False)  # A's estimate per hand
  small_blind: int = nlhe.DEFAULT_RULES.small_blind
  stack: int = nlhe.DEFAULT_RULES.stack  # each player's chips at the start of every hand
  ante: int = 0  # each player's, posted before the blinds

  @property
  def hands_per_second(self) -> float:
    return self.hands / self.seconds if self.seconds > 0 else float('inf')

  def to_json(self) -> dict:
    """The figures as JSON-ready values (no per-hand arrays)."""
    return dict(
      policy_a=self.policy_a,
      policy_b=self.policy_b,
      mbb_per_hand=self.mbb_per_hand,
      ci95_low=self.ci95_low,
      ci95_high=self.ci95_high,
      hands=self.hands,
      deals=self.deals,
      duplicate=self.duplicate,
      seed=self.seed,
      batch=self.batch,
      big_blind=self.big_blind,
      small_blind=self.small_blind,
      stack=self.stack,
      ante=self.ante,
      sd_mbb=self.sd_mbb,
      seats=[
        dict(seat=seat, mbb_per_hand=self.seat_mbb[seat], ci95_low=low, ci95_high=high)
        for seat, (low, high) in enumerate(self.seat_ci95)
      ],
      aivat=self.aivat,
      seconds=self.seconds,
      hands_per_second=self.hands_per_second,
    )


def aivat_figures(summary: dict, plain_sd: float, value: str, samples: int, rollouts: int) -> dict:
  """AIVAT's figures for the JSON and the report from its `summarise` of the estimates: mean, 95%
  interval, sd of one unit, per seat, and how many times fewer hands than plain it needs."""
  from jaxcfr.poker.eval import aivat  # noqa: PLC0415

  return dict(
    mbb_per_hand=summary['mean'],
    ci95_low=summary['ci95_low'],
    ci95_high=summary['ci95_high'],
    sd_mbb=summary['sd_mbb'],
    seats=[
      dict(seat=seat, mbb_per_hand=summary['seat_mbb'][seat], ci95_low=low, ci95_high=high)
      for seat, (low, high) in enumerate(summary['seat_ci95'])
    ],
    hands_ratio=aivat.hands_ratio(plain_sd, summary['sd_mbb']),
    value_function=value,
    **{'equity': {'preflop_samples': samples}, 'rollouts': {'rollouts_per_node': rollouts}}.get(value, {}),
  )


def _mean_ci(values: np.ndarray) -> tuple[float, float, float, float]:
  """(mean, low, high, sd) of the normal 95% interval of the mean of `values`."""
  mean = float(values.mean())
  sd = float(values.std(ddof=1)) if len(values) > 1 else float('nan')
  half = Z95 * sd / math.sqrt(len(values))
  return mean, mean - half, mean + half, sd


def summarise(units: list, chips: list, seats: list, big_blind: int) -> dict:
  """The figures of a batched run in mbb/hand: the mean over `units` (deal pairs' means, or hands)
  with its normal 95% interval and sd, and per seat of the measured side; `chips` and `seats`
  (per hand, by batch) concatenated."""
  mbb = lambda x: x * 1000.0 / big_blind
  chips, seats = np.concatenate(chips), np.concatenate(seats)
  mean, low, high, sd = _mean_ci(mbb(np.concatenate(units)))
  by_seat = [_mean_ci(mbb(chips[seats == seat].astype(np.float64))) for seat in (0, 1)]
  return {
    'hands': len(chips),
    'mean': mean,
    'ci95_low': low,
    'ci95_high': high,
    'sd_mbb': sd,
    'seat_mbb': (by_seat[0][0], by_seat[1][0]),
    'seat_ci95': ((by_seat[0][1], by_seat[0][2]), (by_seat[1][1], by_seat[1][2])),
    'chips': chips,
    'seats': seats,
  }


def check_strategy(policy, actions: nlhe.ActionSet, probs: np.ndarray, count: int) -> np.ndarray:
  """The probabilities [n, A] of the player to act, after checking the policy's answer."""
  name = getattr(policy, 'name', repr(policy))
  kind, amount, valid = (np.asarray(x) for x in actions)
  probs = np.asarray(probs, np.float64)
  width = kind.shape[-1] if kind.ndim == 2 else -1
  if not (kind.shape == amount.shape == valid.shape == (count, width) and probs.shape == (count, 1, width)):
    raise ValueError(
      f'policy {name}: strategy gave actions {kind.shape}, {amount.shape}, {valid.shape} and '
      f'probabilities {probs.shape} for {count} hands (need [n, A] and [n, 1, A])'
    )
  probs = probs[:, 0]
  if not np.all(np.isfinite(probs) & (probs >= 0)) or np.any(np.where(valid, 0, probs) > 0):
    raise ValueError(f'policy {name}: probabilities must be finite, non-negative, and 0 on invalid actions')
  if np.any(np.abs(probs.sum(axis=1) - 1) > 1e-6):
    raise ValueError(f'policy {name}: probabilities must sum to 1 over the actions')
  return probs


def sample_actions(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
  """Indices [n] drawn from probabilities [n, A] by inverse transform of uniforms u [n]; never a slot
  of probability 0."""
  cdf = np.cumsum(probs, axis=1)
  choice = (cdf <= u[:, None]).sum(axis=1)
  last_positive = probs.shape[1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)
  return np.minimum(choice, last_positive)


def _play_batch(
  policies, state: nlhe.HandState, a_seat: np.ndarray, draws: np.ndarray, tracker=None
) -> nlhe.HandState:
  """Plays every hand of `state` to the end: policies (A, B); A sits in seat `a_seat` [B]; draws
  float [B, L] are the uniforms of the hands' successive actions; `tracker` (`aivat.Tracker`), if
  given, sees every decision and chance step."""
  rows = np.arange(len(a_seat))
  ranges = getattr(tracker, 'needs_ranges', False)
  if ranges:
    from jaxcfr.poker.rules import hands  # noqa: PLC0415 (an exported bot copies this file without it)
  while not state.finished.all():
    live = ~state.finished
    kind = np.zeros(len(rows), np.int64)
    amount = np.zeros(len(rows), np.int64)
    for policy, turn in ((policies[0], state.to_act == a_seat), (policies[1], state.to_act != a_seat)):
      index = np.flatnonzero(live & turn)
      if not len(index):
        continue
      sub = nlhe.take(state, index)
      if ranges:  # the strategy of every pair, the actual one's row played (`aivat.RangeTracker`)
        actions, every = hands.query(policy, sub)  # [n, H, A]
        own = hands.PAIR_INDEX[
          sub.hole[np.arange(len(index)), sub.to_act, 0], sub.hole[np.arange(len(index)), sub.to_act, 1]
        ]
        probs = every[np.arange(len(index)), own][:, None, :]
      else:
        holes = sub.hole[np.arange(len(index)), sub.to_act][:, None, :]  # [n, 1, 2]
        actions, probs = policy.strategy(sub, holes)
      probs = check_strategy(policy, actions, probs, len(index))
      choice = sample_actions(probs, draws[index, state.num_actions[index]])
      picked = np.arange(len(index)), choice
      kind[index] = np.asarray(actions.kind)[picked]
      amount[index] = np.asarray(actions.amount)[picked]
      illegal = ~nlhe.is_legal(sub, kind[index], amount[index])
      if illegal.any():
        first = int(np.flatnonzero(illegal)[0])
        raise ValueError(
          f'policy {policy.name}: chose an illegal action (kind {kind[index][first]}, amount '
          f'{amount[index][first]}) with probability {probs[first, choice[first]]:.3g}'
        )
      if tracker is not None:
        tracker.decide(index, sub, actions, every if ranges else probs, choice, policy)
    before, state = state, nlhe.apply(state, kind, amount, live)
    if tracker is not None:
      tracker.advance(before, state)
  return state


def _play_public(policies, state, a_seat, draws, deals: int, duplicate: bool, on_group=None):
  """`_play_batch` with AIVAT's public values (`aivat.PublicTracker`), `aivat.PUBLIC_DEALS` deals at a
  time (both copies of a deal together): the finished hands in the batch's order and player 0's
  estimates float64 [B]. The hands are the batch's own (every policy answers each hand from its
  state); the groups keep the boards that the tracker's cached runout tables serve few.
  on_group(hands_done), if given, after each group."""
  from jaxcfr.poker.eval import aivat  # noqa: PLC0415

  finals, estimates, order = [], [], []
  for first in range(0, deals, aivat.PUBLIC_DEALS):
    rows = np.arange(first, min(first + aivat.PUBLIC_DEALS, deals))
    rows = np.concatenate([rows, rows + deals]) if duplicate else rows
    part = nlhe.take(state, rows)
    tracker = aivat.PublicTracker(part)
    final = _play_batch(policies, part, a_seat[rows], draws[rows], tracker)
    finals.append(final)
    estimates.append(tracker.estimate(final))
    order.append(rows)
    if on_group is not None:
      on_group(sum(len(rows) for rows in order))
  inverse = np.argsort(np.concatenate(order))
  return nlhe.take(nlhe.concatenate(finals), inverse), np.concatenate(estimates)[inverse]


def play_match(
  policy_a,
  policy_b,
  hands: int,
  seed: int = 0,
  duplicate: bool = True,
  batch: int = DEFAULT_BATCH,
  rules=nlhe.DEFAULT_RULES,
  keep_hands: bool = False,
  on_progress: Callable[[int], None] | None = None,
  aivat: str | None = 'equity',
  aivat_samples: int = defaults.AIVAT_SAMPLES,
  aivat_rollouts: int = defaults.AIVAT_ROLLOUTS,
) -> MatchResult:
  """Plays `hands` hands of policy A against policy B (`nlhe.Policy`) and reports A's result in
  mbb/hand (chips / big blind * 1000) with its 95% confidence interval; see the module.

  In duplicate mode `hands` is rounded up to an even number (whole deal pairs) and a batch holds
  batch // 2 deals. The interval needs at least two units: 4 hands in duplicate, else 2.
  on_progress(hands_done) is called after each batch; keep_hands keeps the finished hands (`final`).
  With `aivat` the result also carries AIVAT's estimate (`eval.aivat`), its random numbers drawn with
  a key of their own (the deals and draws are those of a run without it): 'equity', the check-down
  value (`aivat_samples` preflop boards per deal); 'rollouts', B's own value (`aivat_rollouts`
  playouts of B against itself per node; B should be a fast policy, e.g. the blueprint under A's
  search); 'ranges', both players' hole cards as imaginary observations (each policy is asked for
  all 1,326 pairs at its decisions and the actual pair's row is played); 'public', those ranges and a
  correction at every public action and board card by the ranges' check-down value
  (`aivat.PublicTracker`); None for none.
  """
  import jax  # noqa: PLC0415

  from jaxcfr.poker.eval import aivat as aivat_module  # noqa: PLC0415

  if not isinstance(hands, int) or hands < (4 if duplicate else 2):
    raise ValueError(f'hands must be a whole number >= {4 if duplicate else 2}, got {hands!r}')
  if not isinstance(batch, int) or batch < (2 if duplicate else 1):
    raise ValueError(f'batch must be a whole number >= {2 if duplicate else 1}, got {batch!r}')
  if not isinstance(seed, int) or seed < 0:
    raise ValueError(f'seed must be a non-negative whole number, got {seed!r}')
  if aivat not in AIVAT_VALUES:
    raise ValueError(f'aivat must be one of {", ".join(map(str, AIVAT_VALUES))}, got {aivat!r}')
  # A blueprint of another depth plays these hands read into its own game (`depth.at_rules`).
  policy_a, policy_b = (depth.at_rules(policy, rules) for policy in (policy_a, policy_b))
  copies = 2 if duplicate else 1
  deals = -(-hands // copies)
  per_batch = batch // copies
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
    tracker, aivat_key = None, jax.random.fold_in(chunk_key, 1)
    copies_of = (lambda x: np.concatenate([x, x])) if duplicate else (lambda x: x)
    if aivat == 'equity':  # one preflop estimate per deal, shared by its two copies
      preflop = copies_of(aivat_module.preflop_equity(state.hole, aivat_key, aivat_samples))
    elif aivat == 'rollouts':
      rng = nlhe.generator(aivat_key)
      root = copies_of(aivat_module.rollout_values(policy_b, state, rng, aivat_rollouts, _play_batch))
    if duplicate:
      state = nlhe.concatenate([state, state])
      draws = np.concatenate([draws, draws])
      a_seat = np.repeat(np.array([0, 1], np.int8), count)
    else:
      a_seat = ((first + np.arange(count)) % 2).astype(np.int8)
    if aivat == 'equity':
      tracker = aivat_module.Tracker(state, preflop)
    elif aivat == 'rollouts':
      tracker = aivat_module.RolloutTracker(state, policy_b, rng, aivat_rollouts, _play_batch, root)
    elif aivat == 'ranges':
      tracker = aivat_module.RangeTracker(state)
    if aivat == 'public':  # a few deals at a time, so that their boards' runout tables stay cached
      within = None if on_progress is None else (lambda hands, done=done: on_progress(done + hands))
      state, estimate = _play_public((policy_a, policy_b), state, a_seat, draws, count, duplicate, within)
    else:
      state = _play_batch((policy_a, policy_b), state, a_seat, draws, tracker)
    rows = np.arange(len(a_seat))
    payoffs = nlhe.payoffs(state)
    won = payoffs[rows, a_seat]  # [hands of the batch]
    chips.append(won)
    units.append((won[:count] + won[count:]) / 2 if duplicate else won.astype(np.float64))
    seats.append(a_seat)
    if aivat:
      if aivat != 'public':
        estimate = tracker.estimate(state, payoffs)
      estimate = np.where(a_seat == 0, estimate, -estimate)  # A's chips
      estimates.append(estimate)
      estimate_units.append((estimate[:count] + estimate[count:]) / 2 if duplicate else estimate)
    if keep_hands:
      finals.append(state)
    done += len(a_seat)
    if on_progress is not None:
      on_progress(done)
  seconds = time.perf_counter() - start
  summary = summarise(units, chips, seats, rules.big_blind)  # units: deal pairs' means, or hands
  figures = None
  if aivat:
    corrected = summarise(estimate_units, estimates, seats, rules.big_blind)
    figures = aivat_figures(corrected, summary['sd_mbb'], aivat, aivat_samples, aivat_rollouts)
  return MatchResult(
    policy_a=getattr(policy_a, 'name', repr(policy_a)),
    policy_b=getattr(policy_b, 'name', repr(policy_b)),
    hands=summary['hands'],
    deals=deals,
    duplicate=duplicate,
    seed=seed,
    batch=batch,
    big_blind=rules.big_blind,
    mbb_per_hand=summary['mean'],
    ci95_low=summary['ci95_low'],
    ci95_high=summary['ci95_high'],
    sd_mbb=summary['sd_mbb'],
    seat_mbb=summary['seat_mbb'],
    seat_ci95=summary['seat_ci95'],
    seconds=seconds,
    chips=summary['chips'],
    a_seat=summary['seats'],
    final=nlhe.concatenate(finals) if keep_hands else None,
    aivat=figures,
    aivat_chips=np.concatenate(estimates) if aivat else None,
    small_blind=rules.small_blind,
    stack=rules.stack,
    ante=rules.ante,
  )


# Matches with stacks carried over from hand to hand (Chipzen's), played to a bust or a hand limit.


@dataclasses.dataclass(frozen=True)
class CarryResult:
  """A's results over `matches` matches whose stacks carry over (see `play_carry_matches`): the share
  of matches A won (a tie at the hand limit counts half) with its normal 95% interval over mirrored
  match pairs, and A's mbb/hand (each pair's chips over its hands, the mean over pairs, with its 95%
  interval). `final_stacks` int64 [matches, 2]: A's and B's chips at the end; `hands_played` [matches]."""

  policy_a: str
  policy_b: str
  matches: int
  start_stack: int
  max_hands: int
  seed: int
  small_blind: int
  big_blind: int
  won: float
  win_share: float
  win_ci95_low: float
  win_ci95_high: float
  busted: int  # matches that ended with a player unable to post the big blind (and the ante)
  hands: int
  mbb_per_hand: float
  ci95_low: float
  ci95_high: float
  seconds: float
  final_stacks: np.ndarray = dataclasses.field(repr=False)
  hands_played: np.ndarray = dataclasses.field(repr=False)
  ante: int = 0  # each player's, every hand

  def to_json(self) -> dict:
    """The figures as JSON-ready values, with each match's final stacks and hands."""
    figures = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    figures['final_stacks'] = self.final_stacks.tolist()
    figures['hands_played'] = self.hands_played.tolist()
    return figures


def play_carry_matches(
  policy_a,
  policy_b,
  matches: int,
  seed: int = 0,
  rules=nlhe.DEFAULT_RULES,
  max_hands: int = defaults.CARRY_HANDS,
  on_progress: Callable[[int], None] | None = None,
) -> CarryResult:
  """`matches` matches of A against B (rounded up to an even number: mirrored pairs) that start at
  `rules.stack` each and carry the stacks over from hand to hand; a match ends when a player has at most one
  big blind (and the ante) left (bust: they cannot post them) or after `max_hands` hands (the bigger stack
  wins). The button alternates; match 2k + 1 deals the cards of match 2k with the seats swapped, hand for
  hand. Each hand is played at its effective stack (the shorter one; the deeper player's excess is never in
  play heads-up), so hands of equal effective stacks are played as one batch. on_progress(hands_done) after
  each round of hands. Cards and draws come from `numpy.random.default_rng([seed, pair, hand])`: deterministic
  given the seed."""
  if not isinstance(matches, int) or isinstance(matches, bool) or matches < 2:
    raise ValueError(f'matches must be a whole number >= 2, got {matches!r}')
  if not isinstance(max_hands, int) or isinstance(max_hands, bool) or max_hands < 1:
    raise ValueError(f'max_hands must be a whole number >= 1, got {max_hands!r}')
  if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
    raise ValueError(f'seed must be a non-negative whole number, got {seed!r}')
  from abstractions.betting import NoLimitRules  # noqa: PLC0415

  matches += matches % 2
  start = time.perf_counter()
  stacks = np.full((matches, 2), rules.stack, np.int64)  # A's, B's
  hands_played = np.zeros(matches, np.int64)
  names = [getattr(p, 'name', repr(p)) for p in (policy_a, policy_b)]
  done = 0
  for hand in range(max_hands):
    live = np.flatnonzero(stacks.min(axis=1) > rules.big_blind + rules.ante)
    if not len(live):
      break
    effective = stacks[live].min(axis=1)
    for depth_chips in np.unique(effective):
      group = live[effective == depth_chips]
      group_rules = NoLimitRules(rules.small_blind, rules.big_blind, int(depth_chips), rules.ante)
      length = nlhe.max_actions(group_rules)
      streams = [np.random.default_rng([seed, int(m) // 2, hand]) for m in group]
      cards = np.stack([rng.permutation(52)[:9] for rng in streams])
      noise = np.stack([rng.random(length) for rng in streams])
      draws = np.stack([rng.random(length) for rng in streams])
      state = nlhe.initial(cards[:, :4].reshape(-1, 2, 2), cards[:, 4:], group_rules, noise)
      a_seat = ((hand + group % 2) % 2).astype(np.int8)  # the mirror sits in the other seat
      players = tuple(depth.at_rules(p, group_rules) for p in (policy_a, policy_b))
      state = _play_batch(players, state, a_seat, draws)
      won = nlhe.payoffs(state)[np.arange(len(group)), a_seat]
      stacks[group, 0] += won
      stacks[group, 1] -= won
      hands_played[group] += 1
    done += len(live)
    if on_progress is not None:
      on_progress(done)
  busted = stacks.min(axis=1) <= rules.big_blind + rules.ante
  score = np.where(stacks[:, 0] > stacks[:, 1], 1.0, np.where(stacks[:, 0] < stacks[:, 1], 0.0, 0.5))
  pair_score = score.reshape(-1, 2).mean(axis=1)
  share, low, high, _ = _mean_ci(pair_score)
  chips = (stacks[:, 0] - rules.stack).reshape(-1, 2).sum(axis=1)
  pair_mbb = chips * 1000.0 / rules.big_blind / np.maximum(hands_played.reshape(-1, 2).sum(axis=1), 1)
  mbb, mbb_low, mbb_high, _ = _mean_ci(pair_mbb)
  return CarryResult(
    policy_a=names[0], policy_b=names[1], matches=matches, start_stack=rules.stack, max_hands=max_hands,
    seed=seed, small_blind=rules.small_blind, big_blind=rules.big_blind, won=float(score.sum()),
    win_share=share, win_ci95_low=low, win_ci95_high=high, busted=int(busted.sum()),
    hands=int(hands_played.sum()), mbb_per_hand=mbb, ci95_low=mbb_low, ci95_high=mbb_high,
    seconds=time.perf_counter() - start, final_stacks=stacks, hands_played=hands_played, ante=rules.ante,
  )  # fmt: skip
