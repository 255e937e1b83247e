"""AIVAT (Burch, Schmid, Moravcik, Morrill, Bowling, AAAI 2018) for the match engine: an unbiased
estimate of a hand's value with the luck that the known policies and chance explain taken out.

In a simulated match both players' cards and both policies' action distributions are known, so every
step of a hand is a node whose outcome distribution is known: a decision (the acting policy's
probabilities over its `ActionSet`, from which the match sampled) or chance (the next board cards,
uniform over the cards neither hand nor the board holds). At each such node the estimate subtracts

    (the value of the outcome that happened) - (the expected value over the known distribution)

which has mean 0 whatever the value function, so `payoff - sum of corrections` has the payoff's mean;
the closer the value function is to the policies' real values, the lower its variance.

The value function here is the check-down value of a node for player 0, in chips: with the hole cards
of both players known and the board as shown at the node, e0 = player 0's share of the pot if the hand
were checked down (1 for a win, 1/2 for a tie, averaged over every runout of the unseen cards),

    v(node) = (2 e0 - 1) * min(committed)       (the matched chips; an unmatched bet goes back)

and a fold's real payoff. It needs no policy (it serves every spec, the Chipzen bots' included) and
its expectation over the next board cards is the value before them (a martingale), so a chance
node's correction is v(after) - v(before). e0 is exact from the flop on (990, 44 or 1 runouts);
preflop it is a Monte Carlo mean over `samples` boards drawn with a key of their own, independent of
the deal: unbiased for the preflop equity, which keeps every correction's mean 0 (its noise lands in
the estimate, +- about pot / sqrt(samples) for a hand all-in preflop). The deal itself is a chance
node too: its correction is v after the blinds, whose mean over deals is 0.

Two more value functions: `RolloutTracker`, a fast policy's own value by playouts from each node, and
`RangeTracker`, both players' hole cards as imaginary observations (the expected payoff given the
public history). The match engine (`match.play_match(aivat=...)`) and LBR use them the same way:

    tracker = Tracker(state, preflop_equity(state.hole, key))
    ... at each step: tracker.decide(index, sub, actions, probs, choice); state = apply(...);
    tracker.advance(before, state)
    estimate = tracker.estimate(state)      # float64 [B], player 0's chips

Glossary: B hands, A actions of an `ActionSet`, R runouts, K preflop sample boards.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from jaxcfr.poker import defaults
from jaxcfr.poker.rules import nlhe

DEFAULT_SAMPLES = defaults.AIVAT_SAMPLES  # preflop Monte Carlo boards per deal
_CHUNK = {0: 16, 3: 64, 4: 256, 5: 1024}  # hands per jitted call by cards shown (padded: one shape each)


@functools.cache
def runout_pairs(unseen: int) -> np.ndarray:
  """The C(unseen, 2) index pairs (i < j) of two cards from `unseen`, int32 [R, 2]."""
  first, second = np.triu_indices(unseen, k=1)
  return np.stack([first, second], axis=1).astype(np.int32)


def unseen_cards(known, count: int):
  """The cards that none of `known` int [n, k] holds, ascending, int [n, count] (JAX, traceable;
  `count` = 52 - k for distinct known cards)."""
  import jax.numpy as jnp  # noqa: PLC0415

  is_known = (jnp.arange(52)[None, :, None] == known[:, None, :]).any(axis=-1)  # [n, 52]
  return jnp.argsort(is_known, axis=1, stable=True)[:, :count]


@functools.cache
def _equity_function(shown: int):
  """A jitted f(hole int32 [n, 2, 2], board int32 [n, 5]) -> player 0's exact showdown share float32
  [n] with `shown` (3, 4 or 5) board cards known, averaged over every runout of the unseen cards."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  unseen = 52 - 4 - shown
  runouts = jnp.asarray(runout_pairs(unseen)) if shown == 3 else None

  def equity(hole, board):
    n = hole.shape[0]
    cards = unseen_cards(jnp.concatenate([hole.reshape(n, 4), board[:, :shown]], axis=1), unseen)
    if shown == 5:
      boards = board[:, None, :]  # [n, 1, 5]
    elif shown == 4:
      boards = jnp.concatenate([jnp.broadcast_to(board[:, None, :4], (n, unseen, 4)), cards[..., None]], -1)
    else:
      rest = cards[:, runouts]  # [n, R, 2]
      boards = jnp.concatenate([jnp.broadcast_to(board[:, None, :3], (n, len(runouts), 3)), rest], -1)
    return mean_share(hole, boards)

  return jax.jit(equity)


def mean_share(hole, boards):
  """Player 0's showdown share averaged over boards: hole [n, 2, 2], boards [n, R, 5] -> [n] (JAX)."""
  import jax.numpy as jnp  # noqa: PLC0415

  from abstractions import hand_rank  # noqa: PLC0415

  n, runs = boards.shape[:2]
  cards = jnp.concatenate(
    [jnp.broadcast_to(hole[:, None], (n, runs, 2, 2)), jnp.broadcast_to(boards[:, :, None], (n, runs, 2, 5))],
    axis=-1,
  )  # [n, R, 2, 7]
  ranks = hand_rank(cards)
  mine, theirs = ranks[..., 0], ranks[..., 1]
  return jnp.where(mine > theirs, 1.0, jnp.where(mine == theirs, 0.5, 0.0)).mean(axis=1)


def sample_boards(key, unseen: int, samples: int):
  """`samples` boards drawn independently and uniformly from the C(unseen, 5) five-card subsets of
  positions 0 .. unseen - 1: int32 [samples, 5] (JAX, traceable). A uniform rank is unranked in the
  combinatorial number system: the largest c with C(c, k) <= rank, for k = 5 .. 1."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  table = np.array([[math.comb(c, k) for c in range(unseen)] for k in range(6)], np.int32)  # [6, unseen]
  rank = jax.random.randint(key, (samples,), 0, math.comb(unseen, 5))
  picks = []
  for k in range(5, 0, -1):
    position = jnp.searchsorted(jnp.asarray(table[k]), rank, side='right') - 1
    rank = rank - jnp.asarray(table[k])[position]
    picks.append(position)
  return jnp.stack(picks, axis=-1).astype(jnp.int32)


@functools.cache
def _preflop_function(samples: int):
  """A jitted f(hole int32 [n, 2, 2], keys [n]) -> player 0's showdown share over `samples` boards
  drawn uniformly from the 48 unseen cards with each hand's key (`sample_boards`)."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  def equity(hole, keys):
    n = hole.shape[0]
    cards = unseen_cards(hole.reshape(n, 4), 48)  # [n, 48]
    positions = jax.vmap(lambda key: sample_boards(key, 48, samples))(keys)  # [n, K, 5]
    boards = jnp.take_along_axis(cards, positions.reshape(n, -1), axis=1)
    return mean_share(hole, boards.reshape(n, samples, 5))

  return jax.jit(equity)


def chunked(function, chunk: int, *arrays) -> np.ndarray:
  """function over the rows of `arrays` (at least one row), `chunk` rows a call, the last call padded
  with copies of row 0 (one compiled shape for a jitted function), as float64 [rows, ...]."""
  count = len(arrays[0])
  parts = []
  for start in range(0, count, chunk):
    rows = np.arange(start, min(start + chunk, count))
    pad = np.concatenate([rows, np.repeat(rows[:1], chunk - len(rows))])
    parts.append(np.asarray(function(*(array[pad] for array in arrays)), np.float64)[: len(rows)])
  return np.concatenate(parts)


def street_equity(hole, board, shown) -> np.ndarray:
  """Player 0's exact showdown share float64 [n] with both hole cards known, hole int [n, 2, 2], and
  `shown` int [n] (3, 4 or 5) of the board int [n, 5]: averaged over every runout of the unseen cards."""
  hole, board = np.asarray(hole, np.int32), np.asarray(board, np.int32)
  shown = np.broadcast_to(np.asarray(shown), (len(hole),))
  if np.any((shown < 3) | (shown > 5)):
    raise ValueError('exact equity needs 3, 4 or 5 board cards shown (preflop: preflop_equity)')
  result = np.zeros(len(hole))
  for count in (3, 4, 5):
    index = np.flatnonzero(shown == count)
    if len(index):
      result[index] = chunked(_equity_function(count), _CHUNK[count], hole[index], board[index])
  return result


def preflop_equity(hole, key, samples: int = DEFAULT_SAMPLES) -> np.ndarray:
  """Player 0's preflop showdown share float64 [n], a Monte Carlo mean over `samples` boards per hand:
  unbiased, and its boards come from `key` (hand i's from `fold_in(key, i)`), not from the deal."""
  import jax  # noqa: PLC0415

  if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
    raise ValueError(f'samples must be a whole number >= 1, got {samples!r}')
  hole = np.asarray(hole, np.int32)
  keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(np.arange(len(hole), dtype=np.uint32))
  chunk = max(1, min(_CHUNK[0], 2**17 // samples))
  return chunked(_preflop_function(samples), chunk, hole, keys)


def node_value(state: nlhe.HandState, equity: np.ndarray) -> np.ndarray:
  """The check-down value of each hand of `state` for player 0, float64 [B], with player 0's share
  `equity` [B] at the board the node was reached with: a fold's payoff, else (2 e0 - 1) * matched."""
  committed = state.committed.astype(np.float64)
  fold = np.where(state.folded == 0, -committed[:, 0], committed[:, 1])
  return np.where(state.folded >= 0, fold, (2 * equity - 1) * committed.min(axis=1))


class Tracker:
  """AIVAT's corrections, in player 0's chips, for a batch of hands as the match engine plays them.

  The engine calls `decide` before applying each step's actions and `advance` after; `estimate` at
  the end gives payoff - corrections. `deal` [B] is the deal's own correction (part of the total)."""

  def __init__(self, state: nlhe.HandState, preflop: np.ndarray):
    self.equity = np.asarray(preflop, np.float64).copy()  # [B] player 0's share on the current street
    self.deal = node_value(state, self.equity)  # the deal's correction: v after the blinds, mean 0
    self.correction = self.deal.copy()  # [B]
    self.pending = np.full(len(self.equity), np.nan)  # [B] v before a showdown's runout

  def decide(
    self,
    index: np.ndarray,
    state: nlhe.HandState,
    actions: nlhe.ActionSet,
    probs: np.ndarray,
    choice,
    policy=None,
  ) -> None:
    """The decision correction at hands `index` [n] of the batch, whose state is `state` (n hands):
    the acting policy chose slot `choice` [n] of `actions` [n, A] with probabilities `probs` [n, A]."""
    kind, amount, valid = (np.asarray(x) for x in actions)
    equity = self.equity[index]
    values = np.zeros(kind.shape)  # [n, A]
    for slot in range(kind.shape[1]):
      legal = valid[:, slot] & nlhe.is_legal(state, kind[:, slot], amount[:, slot])
      if legal.any():
        child = nlhe.apply(state, kind[:, slot], amount[:, slot], legal)
        values[:, slot] = np.where(legal, node_value(child, equity), 0.0)
    taken = values[np.arange(len(index)), choice]
    self.correction[index] += taken - (np.asarray(probs, np.float64) * values).sum(axis=1)

  def advance(self, before: nlhe.HandState, after: nlhe.HandState) -> None:
    """The chance corrections of the step from `before` to `after`: new board cards (v after - v
    before), and the runout of a hand that reached a showdown (settled in `estimate`)."""
    moved = ~after.finished & (after.street != before.street)
    showdown = after.finished & ~before.finished & (after.folded < 0)
    old = node_value(after, self.equity)  # the value the decision gave the step's outcome
    self.pending[showdown] = old[showdown]
    index = np.flatnonzero(moved)
    if len(index):
      sub = nlhe.take(after, index)
      self.equity[index] = street_equity(sub.hole, sub.board, nlhe.board_size(sub))
      self.correction[index] += node_value(sub, self.equity[index]) - old[index]

  def estimate(self, final: nlhe.HandState, payoffs: np.ndarray | None = None) -> np.ndarray:
    """AIVAT's estimate of player 0's chips in each finished hand, float64 [B]: the payoff minus every
    correction (a showdown's runout: payoff - v before it). `payoffs` [B, 2] if already computed."""
    payoff = (nlhe.payoffs(final) if payoffs is None else payoffs)[:, 0].astype(np.float64)
    showdown = ~np.isnan(self.pending)
    runout = np.where(showdown, payoff - np.where(showdown, self.pending, 0.0), 0.0)
    return payoff - self.correction - runout


def hands_ratio(plain_sd: float, aivat_sd: float) -> float:
  """How many times fewer hands AIVAT needs for the same interval: (plain sd / AIVAT sd)^2."""
  return (plain_sd / aivat_sd) ** 2 if aivat_sd > 0 and math.isfinite(plain_sd) else float('nan')


# Rollout values: the value policy's own.


def rollout_values(
  policy, states: nlhe.HandState, rng: np.random.Generator, rollouts: int, play, streams=None
) -> np.ndarray:
  """Player 0's value of each node of `states` (n hands, finished or not) when `policy` plays both
  seats from there, float64 [n]: the mean of `rollouts` playouts per node, each with the unseen board
  cards redrawn uniformly and its own action draws. Nodes with the same `streams` entry (int [n];
  default: each its own) share their random numbers: pass a node with its children and their
  differences are less noisy; nodes of different streams are independent. A playout that ends at a
  showdown is valued at its check-down equity on the street it ended (exact from the flop on), a fold
  at its payoff. `play(policies, state, seats, draws)` is the match engine's batch loop."""
  count = len(states.street)
  if count == 0:
    return np.zeros(0)
  streams = np.arange(count) if streams is None else np.asarray(streams)
  _, stream = np.unique(streams, return_inverse=True)
  width = stream.max() + 1
  pick = lambda x: x[:, stream].reshape(rollouts * count, -1)  # [R, streams, k] -> [R * n, k]
  state = nlhe.concatenate([states] * rollouts)  # [R * n], replica r of node i at r * n + i
  shown = nlhe.board_size(state).astype(np.int64)
  noise = pick(rng.random((rollouts, width, 52)))
  known = np.concatenate(
    [state.hole.reshape(-1, 4), np.where(np.arange(5) < shown[:, None], state.board, -1)], 1
  )
  seen = np.zeros((len(shown), 53), bool)
  seen[np.arange(len(shown))[:, None], np.where(known < 0, 52, known)] = True
  order = np.argsort(np.where(seen[:, :52], 2.0, noise), axis=1)  # unseen cards first, in a random order
  fresh = np.take_along_axis(order, np.maximum(np.arange(5)[None, :] - shown[:, None], 0), axis=1)
  board = np.where(np.arange(5) < shown[:, None], state.board, fresh).astype(np.int8)
  state = state._replace(board=board)
  draws = pick(rng.random((rollouts, width, state.noise.shape[1])))
  final = play((policy, policy), state, np.zeros(len(shown), np.int8), draws)
  showdown = final.folded < 0
  value = nlhe.payoffs(final)[:, 0].astype(np.float64)
  ended = nlhe.board_size(final)
  exact = np.flatnonzero(showdown & (ended >= 3) & (ended < 5))  # all-in before the river: no runout luck
  if len(exact):
    sub = nlhe.take(final, exact)
    value[exact] = node_value(sub, street_equity(sub.hole, sub.board, ended[exact]))
  return value.reshape(rollouts, count).mean(axis=0)


class RolloutTracker:
  """AIVAT with the value function of `policy` (the match's own fast policy, e.g. the blueprint under
  a search bot): v(node) = the expected chips when `policy` plays both seats from the node, estimated
  by `rollout_values`. At the decisions of `policy` itself and at chance the correction's expectation
  is v of the node (those nodes need nothing computed: their terms cancel along the hand); at every
  other player's decision the term is sum_a sigma(a) v(node + a) - v(node), estimated with common
  draws. With rollout estimates that are unbiased and independent of the match's draws, so is

      estimate = v(root) + sum over the other player's decisions of (sum_a sigma(a) v(node + a) - v(node))

  and in duplicate the two copies' v(root) (the same rollouts) cancel."""

  def __init__(self, state: nlhe.HandState, policy, rng: np.random.Generator, rollouts: int, play, root=None):
    self.policy, self.rng, self.rollouts, self.play = policy, rng, rollouts, play
    self.root = rollout_values(policy, state, rng, rollouts, play) if root is None else root
    self.gain = np.zeros(len(state.street))  # [B] player 0's explicit terms

  def decide(self, index, state, actions, probs, choice, policy=None) -> None:
    """The term of the decision at hands `index` of the batch (see `Tracker.decide`) unless the actor
    is the value policy."""
    if policy is self.policy:
      return
    kind, amount, valid = (np.asarray(x) for x in actions)
    nodes, slots = [state], []
    for slot in range(kind.shape[1]):
      legal = valid[:, slot] & nlhe.is_legal(state, kind[:, slot], amount[:, slot])
      rows = np.flatnonzero(legal)
      if len(rows):
        nodes.append(nlhe.apply(nlhe.take(state, rows), kind[rows, slot], amount[rows, slot]))
        slots.append((slot, rows))
    streams = np.concatenate(
      [np.arange(len(index))] + [rows for _, rows in slots]
    )  # a node with its children
    values = rollout_values(self.policy, nlhe.concatenate(nodes), self.rng, self.rollouts, self.play, streams)
    here, start = values[: len(index)], len(index)
    expected = np.zeros(len(index))
    for slot, rows in slots:
      expected[rows] += np.asarray(probs, np.float64)[rows, slot] * values[start : start + len(rows)]
      start += len(rows)
    self.gain[index] += expected - here

  def advance(self, before, after) -> None:
    """Chance steps need nothing here (their terms cancel along the hand)."""

  def estimate(self, final: nlhe.HandState, payoffs: np.ndarray | None = None) -> np.ndarray:
    """Player 0's estimate of each hand, float64 [B]: v(root) plus the other player's terms."""
    return self.root + self.gain


# Range values: both players' hole cards as imaginary observations.


@functools.cache
def _disjoint() -> np.ndarray:
  """Whether two hole pairs share no card, bool [H, H]."""
  from abstractions import HOLES  # noqa: PLC0415

  return ~(HOLES[:, None, :, None] == HOLES[None, :, None, :]).any(axis=(2, 3))


def showdown_value(weights0: np.ndarray, weights1: np.ndarray, board: np.ndarray) -> np.ndarray:
  """Player 0's expected showdown share minus player 1's, E[score0 - score1] in [-1, 1], float64 [n],
  over the pairs of hole pairs (h0, h1) weighted weights0[h0] * weights1[h1] (each [n, H]), the two
  pairs disjoint and off the board int [n, 5]."""
  from abstractions import HOLES  # noqa: PLC0415
  from jaxcfr.poker.rules.hands import blocked  # noqa: PLC0415

  n = len(board)
  cards = np.concatenate(
    [np.broadcast_to(HOLES[None], (n, len(HOLES), 2)), np.broadcast_to(board[:, None], (n, len(HOLES), 5))],
    -1,
  ).astype(np.int32)
  ranks = np.asarray(nlhe._hand_rank()(cards.reshape(-1, 7))).reshape(n, len(HOLES))
  free = ~blocked(board)  # [n, H]
  w0, w1 = weights0 * free, weights1 * free
  disjoint = _disjoint()
  result = np.zeros(n)
  for i in range(n):
    sign = np.sign(ranks[i][:, None] - ranks[i][None, :]) * disjoint  # [H, H]
    total = w0[i] @ disjoint @ w1[i]
    result[i] = (w0[i] @ sign @ w1[i]) / total if total > 0 else 0.0
  return result


class RangeTracker:
  """AIVAT with both players' hole cards as imaginary observations: the estimate of a hand is its
  expected payoff given everything public (the actions, the board, the draws of a policy's own
  randomness), over the hole cards of both players weighted by the probability that each policy takes
  the actions it took with them (its strategy for all 1,326 pairs, asked at each of its decisions;
  the match plays the actual pair's row). A fold's payoff does not depend on the cards; a showdown's
  is (E[score0 - score1]) * the matched chips over that posterior (`showdown_value`). Unbiased by the
  law of total expectation (the posterior is exact: a uniform deal times each policy's likelihood),
  with no luck of either player's cards left in it: only the board's and the actions' remain."""

  needs_ranges = True  # the match engine asks each policy for every pair

  def __init__(self, state: nlhe.HandState):
    from jaxcfr.poker.rules.hands import NUM_PAIRS  # noqa: PLC0415

    self.weights = np.ones((2, len(state.street), NUM_PAIRS))  # [2, B, H] each seat's reach, normalised

  def decide(self, index, state, actions, probs, choice, policy=None) -> None:
    """Bayes' rule on the acting seat's reach at hands `index` with its probabilities for every pair
    `probs` [n, H, A] (`hands.observe`)."""
    from jaxcfr.poker.rules.hands import observe  # noqa: PLC0415

    seat = np.asarray(state.to_act, np.int64)
    for player in (0, 1):
      rows = np.flatnonzero(seat == player)
      if len(rows):
        sub = nlhe.ActionSet(*(np.asarray(x)[rows] for x in actions))
        hands = index[rows]
        self.weights[player, hands] = observe(self.weights[player, hands], sub, probs[rows], choice[rows])

  def advance(self, before, after) -> None:
    """Board cards need nothing here: the posterior is taken on the final board."""

  def estimate(self, final: nlhe.HandState, payoffs: np.ndarray | None = None) -> np.ndarray:
    """Player 0's estimate of each hand, float64 [B]: a fold's payoff, a showdown's expected payoff
    over the posterior of both players' hole cards."""
    payoff = (nlhe.payoffs(final) if payoffs is None else payoffs)[:, 0].astype(np.float64)
    showdown = np.flatnonzero(final.folded < 0)
    if len(showdown):
      share = showdown_value(self.weights[0, showdown], self.weights[1, showdown], final.board[showdown])
      payoff[showdown] = share * final.committed[showdown].min(axis=1)
    return payoff


# Public values: the range-against-range check-down value, on top of the imaginary observations.


@functools.cache
def _card_groups() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(groups int32 [52, 51]: the pairs that hold each card; card int32 [H, 2] and slot int32 [H, 2]:
  where each pair stands in the groups of its two cards)."""
  from abstractions import HOLES  # noqa: PLC0415

  groups = np.stack([np.flatnonzero((HOLES == c).any(axis=1)) for c in range(52)]).astype(np.int32)
  slot = np.array([[int(np.flatnonzero(groups[c] == h)[0]) for c in HOLES[h]] for h in range(len(HOLES))])
  return groups, HOLES.astype(np.int32), slot.astype(np.int32)


def _rank_positions(ranks):
  """For rows of ranks [..., n]: the order that sorts each row and, for each entry, how many entries
  of its row rank strictly below it and at most equal to it (JAX)."""
  import jax.numpy as jnp  # noqa: PLC0415

  order = jnp.argsort(ranks, axis=-1)
  ordered = jnp.take_along_axis(ranks, order, axis=-1)
  search = lambda side: jnp.vectorize(
    lambda row, x: jnp.searchsorted(row, x, side=side), signature='(n),(n)->(n)'
  )
  return order, search('left')(ordered, ranks), search('right')(ordered, ranks)


@functools.cache
def _board_function(shown: int):
  """A jitted f(board int32 [shown]) -> the runout tables of a board with `shown` (3, 4, 5) cards, for
  every runout of the cards the board leaves (R: flop 1,176 turn and river pairs, turn 48 rivers,
  river none) and pair (H): whether the pair misses the full board (`valid` [R, H]), the pairs in
  rank order, and where each pair's rank falls in that order, among all pairs and among the 51 pairs
  of each of its cards (`_rank_positions`), as flat indices into `_runout_sums`'s cumulative sums."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  from abstractions import HOLES, hand_rank  # noqa: PLC0415

  groups, card, slot = (jnp.asarray(x) for x in _card_groups())
  holes = jnp.asarray(HOLES, jnp.int32)
  rest = {3: runout_pairs(49), 4: np.arange(48, dtype=np.int32)[:, None], 5: np.zeros((1, 0), np.int32)}
  rest = jnp.asarray(rest[shown])

  def tables(board):
    unseen = unseen_cards(board[None], 52 - shown)[0]
    full = jnp.concatenate([jnp.broadcast_to(board, (len(rest), shown)), unseen[rest]], 1)  # [R, 5]
    runs, pairs = full.shape[0], holes.shape[0]
    cards = jnp.concatenate(
      [jnp.broadcast_to(holes, (runs, pairs, 2)), jnp.broadcast_to(full[:, None], (runs, pairs, 5))], -1
    )
    valid = ~(holes[None, :, :, None] == full[:, None, None, :]).any(axis=(-1, -2))  # [R, H]
    ranks = jnp.where(valid, hand_rank(cards), -1)
    row = jnp.arange(runs)[:, None]
    order, low, high = _rank_positions(ranks)  # [R, H]
    group_order, group_low, group_high = _rank_positions(ranks[:, groups])  # [R, 52, 51]
    group_hands = jnp.take_along_axis(jnp.broadcast_to(groups, group_order.shape), group_order, axis=-1)
    group_row = (row[:, :, None] * 52 + jnp.arange(52)[None, :, None]) * 52  # rows of [R, 52, 52]
    shared_at = lambda k: (row * 52 + card[:, k]) * 51 + slot[:, k]  # noqa: E731 [R, H] into [R, 52, 51]
    return (
      valid,
      order,
      jnp.take_along_axis(valid, order, axis=-1),
      row * (pairs + 1) + low,
      row * (pairs + 1) + high,
      group_hands,
      jnp.take_along_axis(valid, group_hands.reshape(runs, -1), axis=-1).reshape(group_hands.shape),
      group_row + group_low,
      group_row + group_high,
      shared_at(0),
      shared_at(1),
    )

  return jax.jit(tables)


def _runout_sums(tables, weights: np.ndarray) -> np.ndarray:
  """For a range weights [H] and every pair h, the sum over the board's runouts where h is valid of
  sum_{h' valid, no card shared with h} weights[h'] sign(rank h - rank h'), float64 [H]: each
  runout's cumulative weights in rank order, less those of the pairs that share each of h's cards
  (in rank order within the card's 51 pairs; h ties with itself)."""
  valid, order, ordered_valid, low, high, group_hands, group_valid, group_low, group_high, first, second = (
    tables
  )

  def below_minus_above(ordered, low, high):  # weights in rank order [..., n] -> at the positions
    total = np.zeros((*ordered.shape[:-1], ordered.shape[-1] + 1))
    np.cumsum(ordered, axis=-1, out=total[..., 1:])
    flat = total.ravel()  # one-dimensional gathers: NumPy's fastest
    return flat[low] + flat[high] - total[..., -1:]

  net = below_minus_above(weights[order] * ordered_valid, low, high)  # [R, H]
  shared = below_minus_above(weights[group_hands] * group_valid, group_low, group_high).ravel()  # [R, 52, 51]
  net -= shared[first] + shared[second]
  return (net * valid).sum(axis=0)


# Deals the match engine plays at a time with public values: their boards' tables stay cached.
PUBLIC_DEALS = 8


@functools.lru_cache(maxsize=2 * PUBLIC_DEALS)
def _board_tables(board: tuple[int, ...]) -> tuple[np.ndarray, ...]:
  """`_board_function`'s tables of a board (its cards sorted), as NumPy arrays, the last few kept."""
  return tuple(np.asarray(x) for x in _board_function(len(board))(np.array(board, np.int32)))


_RUNOUTS_PER_PAIR = {
  3: math.comb(45, 2),
  4: 44,
  5: 1,
}  # runouts a flop, turn, river leaves two disjoint pairs


@functools.cache
def _preflop_signs() -> np.ndarray:
  """E[score(h) - score(v)] over every board, float64 [H, H], 0 where h and v share a card."""
  from jaxcfr.poker.pushfold import equity  # noqa: PLC0415

  return np.where(_disjoint(), 2 * equity.pair_matrix() - 1, 0.0)


def range_values(board: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Each pair's check-down standing against ranges on one board: for weights [H] (or [K, H], K
  ranges) (g, d) float64 of the same shape with g[h] = sum_v weights[v] E[score(h) - score(v)] over
  the runouts of the unseen cards and d[h] = sum_v weights[v], both over the pairs v that share no
  card with h or the board (`board` int [k], k = 0, 3, 4 or 5 cards shown). So g[h] / d[h] is h's
  expected score difference against the range when the hand is checked down; exact on every street
  (preflop from the shipped equity table)."""
  from jaxcfr.poker.rules.hands import blocked  # noqa: PLC0415

  board = np.asarray(board, np.int64)
  weights = np.asarray(weights, np.float64)
  if weights.ndim == 1:
    return tuple(x[0] for x in range_values(board, weights[None]))
  free = ~blocked(board[None])[0]
  w = np.where(free, weights, 0.0)  # [K, H]
  groups, card, _ = _card_groups()
  per_card = w[:, groups].sum(axis=2)  # [K, 52]
  d = np.where(
    free, w.sum(axis=1, keepdims=True) - per_card[:, card[:, 0]] - per_card[:, card[:, 1]] + w, 0.0
  )
  if len(board) == 0:
    return w @ _preflop_signs().T, d
  if len(board) not in _RUNOUTS_PER_PAIR:
    raise ValueError(f'a board shows 0, 3, 4 or 5 cards, got {len(board)}')
  tables = _board_tables(tuple(sorted(board.tolist())))
  g = np.stack([_runout_sums(tables, row) for row in w])
  return np.where(free, g / _RUNOUTS_PER_PAIR[len(board)], 0.0), d


class PublicTracker(RangeTracker):
  """AIVAT's full construction on top of `RangeTracker`'s imaginary observations: besides both
  players' hole cards, every public event is corrected, each decision by its action (public) and each
  board card, with public values V(node) = the check-down value of the two ranges at the node,

      V = matched chips * sum_{h0, h1} w0[h0] w1[h1] E[score0 - score1] / sum_{h0, h1} w0[h0] w1[h1]

  over the pairs of hole pairs that share no card with each other or the visible board (the exact
  posterior of the two hands given the public history: w the reach of each seat's policy), the
  expectation over every runout (`range_values`); a fold's value is its payoff. With the exact
  posterior V is a martingale over the board cards (the next card's probability given the public
  history is the posterior's), so their corrections V(after) - V(before) need no computing: along a
  hand the corrections telescope and the estimate is

      V(root) + sum over decisions of (sum_a P(a) V(node + a) - V(node))

  with P(a) the acting policy's probability of a over its range and V(root) = 0 (the uniform ranges
  are equal). Each decision costs one `range_values` of the other seat's range on the board."""

  def __init__(self, state: nlhe.HandState):
    super().__init__(state)
    self.gain = np.zeros(len(state.street))  # [B] player 0's chips

  def decide(self, index, state, actions, probs, choice, policy=None) -> None:
    """The decision's term at hands `index` (the acting policy's probabilities for every pair `probs`
    [n, H, A]), then Bayes' rule on the actor's reach (`RangeTracker.decide`)."""
    from jaxcfr.poker.rules.hands import action_likelihood  # noqa: PLC0415

    kind, amount, valid = (np.asarray(x) for x in actions)
    probs = np.asarray(probs, np.float64)
    rows = np.arange(len(index))
    seat = np.asarray(state.to_act, np.int64)
    shown = nlhe.board_size(state)
    child = np.zeros(kind.shape)  # [n, A] player 0's value of a child, over the reach that takes it
    folds = np.zeros(kind.shape, bool)
    matched = np.zeros(kind.shape)
    for slot in range(kind.shape[1]):
      legal = valid[:, slot] & nlhe.is_legal(state, kind[:, slot], amount[:, slot])
      if legal.any():
        after = nlhe.apply(state, kind[:, slot], amount[:, slot], legal)
        payoff = node_value(after, np.full(len(rows), 0.5))  # a fold's payoff (0 otherwise)
        folds[:, slot] = legal & (after.folded >= 0)
        child[:, slot] = np.where(folds[:, slot], payoff, 0.0)
        matched[:, slot] = after.committed.min(axis=1)
    likely = np.stack(  # [n, H, A] P(the slot's real action | pair), slots of the same action summed
      [action_likelihood(actions, probs, np.full(len(rows), slot)) for slot in range(kind.shape[1])], axis=2
    )
    boards = [tuple(state.board[row, : shown[row]].tolist()) for row in rows]
    other = self.weights[1 - seat, index]  # [n, H] the other seat's reach
    sums, masses = np.zeros(other.shape), np.zeros(other.shape)
    for board in set(boards):
      group = np.array([row for row in rows if boards[row] == board])
      sums[group], masses[group] = range_values(np.array(board, np.int64), other[group])
    for row, hand in enumerate(index):
      actor = seat[row]
      sign = 1.0 if actor == 0 else -1.0
      g, d = sums[row], masses[row]
      reach = self.weights[actor, hand] * (d > 0)
      standing = reach @ g / (reach @ d)
      value = sign * state.committed[row].min() * standing
      taken = self.chances(reach, d, probs[row])  # [A]
      with np.errstate(invalid='ignore', divide='ignore'):
        child_standing = np.where(taken > 0, (reach * g) @ likely[row] / ((reach * d) @ likely[row]), 0.0)
      values = np.where(folds[row], child[row], sign * matched[row] * child_standing)
      self.gain[hand] += taken @ values - value
    super().decide(index, state, actions, probs, choice, policy)

  @staticmethod
  def chances(reach: np.ndarray, mass: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """P(slot) given the public history, float64 [A]: the actor's probabilities [H, A] over its reach
    [H] times the other seat's reach that each pair leaves (`mass` [H])."""
    return reach @ (probs * mass[:, None]) / (reach @ mass)

  def estimate(self, final: nlhe.HandState, payoffs: np.ndarray | None = None) -> np.ndarray:
    """Player 0's estimate of each hand, float64 [B]: the sum of its decisions' terms."""
    return self.gain.copy()
