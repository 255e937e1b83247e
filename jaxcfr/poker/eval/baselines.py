"""Baseline policies of the real hold'em game, and their registry by name (`REGISTRY`).

Every baseline follows `nlhe.Policy` (stateless: the action comes from the state and the hole cards
only) and offers the same three actions per hand (`ActionSet` slots): fold (valid when facing a bet),
check/call (always valid), and one raise-to amount (valid when a raise is allowed):

- `always-call`: checks or calls.
- `always-fold`: folds when it may (facing a bet), else checks; local best response's calibration bot.
- `always-pot`: raises to the pot-size raise (call, then raise the pot: `nlhe.pot_raise_to`), clamped to
  the legal range; calls when it cannot raise.
- `random`: uniform over the legal kinds (fold when facing a bet, check/call, raise when allowed, so
  1/3 each or 1/2 each); the raise-to amount is uniform over the whole chips from the minimum raise to
  all-in, min + floor(u * (max - min + 1)) with u = `state.noise[b, num_actions[b]]`, the hand's
  draw for this action, so that the same history always offers the same amount.
- `equity`: hand strength e = equity against one uniformly random hand with the unseen board cards
  dealt uniformly (`hand_strength`); raises the pot when e >= 0.7, else calls when e >= the pot odds
  to_call / (pot + to_call) (so it always checks when free), else folds.
- `pushfold`: the push-or-fold equilibrium (`jaxcfr.poker.pushfold`) at the table's depth (stack and
  blinds of `state.rules`, no ante). As the small blind's first action it goes all-in with its class's
  push probability, else folds; at any other preflop decision it goes all-in (calls an all-in, raises
  all-in otherwise, a limp included) with its class's probability of calling a push, else folds (checks
  when free); after the flop, reached only when it checked a limp, it checks and folds to a bet.

    policy = REGISTRY['equity']()                # a spec (a name, a file, search:...): jaxcfr.poker.bots
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from jaxcfr.poker.eval import depth
from jaxcfr.poker.rules import nlhe

RAISE_EQUITY = 0.7  # the equity bot raises the pot from this hand strength up
EQUITY_SAMPLES = 512  # Monte Carlo samples of the equity bot on the flop and turn (standard error < 0.023)
PREFLOP_SAMPLES = 20_000  # per preflop class, for the table of preflop equities (built once)
_EQUITY_SEED = 0  # the fixed key of the Monte Carlo samples


def _one_hot(choice: np.ndarray, num_actions: int) -> np.ndarray:
  """Probabilities float [..., A] that put 1 on `choice` [...]."""
  return (np.arange(num_actions) == choice[..., None]).astype(np.float64)


def _holes_count(holes) -> int:
  holes = np.asarray(holes)
  if holes.ndim != 3 or holes.shape[2] != 2:
    raise ValueError(f'holes must be [B, K, 2], got shape {holes.shape}')
  return holes.shape[1]


@dataclasses.dataclass(frozen=True)
class AlwaysCall:
  name: str = 'always-call'

  def strategy(self, state, holes):
    actions = nlhe.fold_call_raise(state, nlhe.pot_raise_to(state))
    choice = np.full((len(actions.kind), _holes_count(holes)), 1)
    return actions, _one_hot(choice, 3)


@dataclasses.dataclass(frozen=True)
class AlwaysFold:
  name: str = 'always-fold'

  def strategy(self, state, holes):
    actions = nlhe.fold_call_raise(state, nlhe.pot_raise_to(state))
    choice = np.where(actions.valid[:, 0], 0, 1)[:, None].repeat(_holes_count(holes), axis=1)
    return actions, _one_hot(choice, 3)


@dataclasses.dataclass(frozen=True)
class AlwaysPot:
  name: str = 'always-pot'

  def strategy(self, state, holes):
    actions = nlhe.fold_call_raise(state, nlhe.pot_raise_to(state))
    choice = np.where(actions.valid[:, 2], 2, 1)[:, None].repeat(_holes_count(holes), axis=1)
    return actions, _one_hot(choice, 3)


@dataclasses.dataclass(frozen=True)
class UniformRandom:
  name: str = 'random'

  def strategy(self, state, holes):
    options = nlhe.legal(state)
    rows = np.arange(len(options.can_fold))
    u = state.noise[rows, np.minimum(state.num_actions, state.noise.shape[1] - 1)]
    span = options.max_raise_to - options.min_raise_to + 1
    raise_to = options.min_raise_to + np.minimum(np.floor(u * span).astype(np.int64), span - 1)
    actions = nlhe.fold_call_raise(state, raise_to)
    probs = actions.valid / actions.valid.sum(axis=1, keepdims=True)  # [B, 3]
    return actions, np.repeat(probs[:, None, :], _holes_count(holes), axis=1)


@dataclasses.dataclass(frozen=True)
class EquityThreshold:
  """Raises the pot from `raise_equity` up, calls with pot odds, else folds (see the module)."""

  name: str = 'equity'
  raise_equity: float = RAISE_EQUITY
  samples: int = EQUITY_SAMPLES

  def strategy(self, state, holes):
    holes = np.asarray(holes)
    count = _holes_count(holes)
    batch = len(state.street)
    board = np.repeat(nlhe.visible_board(state)[:, None, :], count, axis=1)  # [B, K, 5]
    strength = hand_strength(holes.reshape(-1, 2), board.reshape(-1, 5), self.samples).reshape(batch, count)
    actions = nlhe.fold_call_raise(state, nlhe.pot_raise_to(state))
    options = nlhe.legal(state)
    rows = np.arange(batch)
    to_call = (options.call_to - state.round_bet[rows, state.to_act])[:, None]  # [B, 1]
    odds = to_call / (nlhe.pot(state)[:, None] + to_call)
    choice = np.where(
      (strength >= self.raise_equity) & actions.valid[:, 2:3],
      2,
      np.where((strength >= odds) | ~actions.valid[:, 0:1], 1, 0),
    )
    return actions, _one_hot(choice, 3)


def PushOrFold() -> depth.PushFoldPlayer:  # noqa: N802 (a registry entry, like the classes above)
  """The push-or-fold equilibrium at the table's depth, solved on demand (see the module)."""
  return depth.PushFoldPlayer(depth.solved)


REGISTRY = {
  'always-call': AlwaysCall,
  'always-fold': AlwaysFold,
  'always-pot': AlwaysPot,
  'random': UniformRandom,
  'equity': EquityThreshold,
  'pushfold': PushOrFold,
}


# Hand strength: equity against one uniformly random hand.


_CHUNK = 512  # the jitted equity runs on chunks of this many hands (small inputs: 64), few shapes


def _chunked(function, *arrays: np.ndarray) -> np.ndarray:
  """function(*chunks) over chunks of the rows of `arrays`, each padded to 64 or `_CHUNK` rows, so that
  the jitted function compiles for two shapes only; float64 [N]."""
  count = len(arrays[0])
  out = []
  for start in range(0, count, _CHUNK):
    rows = min(_CHUNK, count - start)
    size = 64 if rows <= 64 else _CHUNK
    chunk = [
      np.concatenate([x[start : start + rows], np.repeat(x[start : start + 1], size - rows, 0)])
      for x in arrays
    ]
    out.append(np.asarray(function(*(c.astype(np.int32) for c in chunk)))[:rows])
  return np.concatenate(out).astype(np.float64) if out else np.zeros(0)


@functools.cache
def _draw_positions(samples: int, unseen: int, needed: int, seed: int = _EQUITY_SEED) -> np.ndarray:
  """Fixed draws int32 [S, needed]: for each sample, `needed` distinct positions in 0..unseen-1 (the
  first entries of a uniform shuffle), later read as indices into a hand's ascending unseen cards."""
  rng = np.random.default_rng([seed, unseen, needed])
  return np.argsort(rng.random((samples, unseen)), axis=1)[:, :needed].astype(np.int32)


@functools.cache
def _monte_carlo(shown: int):
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  from abstractions import hand_rank  # noqa: PLC0415

  @jax.jit
  def estimate(hole, board, positions):
    """Equity float32 [N] of hole [N, 2] with `shown` board cards board [N, >= shown] against a random
    hand, averaged over the draws positions [S, 7 - shown]: the opponent's two cards, then the missing
    board cards, taken at those positions of the hand's ascending unseen cards."""
    known = jnp.concatenate([hole, board[:, :shown]], axis=1)  # [N, 2 + shown]
    is_known = (jnp.arange(52)[None, :, None] == known[:, None, :]).any(axis=-1)  # [N, 52]
    unseen = jnp.argsort(is_known, axis=1, stable=True)  # [N, 52]: the unseen cards first, ascending
    drawn = unseen[:, positions]  # [N, S, 7 - shown]
    count, samples = drawn.shape[:2]
    full = jnp.concatenate(
      [jnp.broadcast_to(board[:, None, :shown], (count, samples, shown)), drawn[..., 2:]], -1
    )
    ours = hand_rank(jnp.concatenate([jnp.broadcast_to(hole[:, None], (count, samples, 2)), full], -1))
    theirs = hand_rank(jnp.concatenate([drawn[..., :2], full], -1))
    return jnp.where(ours > theirs, 1.0, jnp.where(ours == theirs, 0.5, 0.0)).mean(axis=1)

  return estimate


def _estimate(hole: np.ndarray, board: np.ndarray, shown: int, samples: int) -> np.ndarray:
  """Monte Carlo equity float64 [N] of hands that all show `shown` board cards (see `_monte_carlo`)."""
  positions = _draw_positions(samples, 52 - 2 - shown, 7 - shown)
  return _chunked(lambda h, b: _monte_carlo(shown)(h, b, positions), hole, board)


@functools.cache
def _preflop_classes() -> np.ndarray:
  """`abstractions.preflop_class` of every ordered pair of cards, int32 [52, 52] (a NumPy lookup)."""
  from abstractions import HOLES, preflop_class  # noqa: PLC0415

  table = np.zeros((52, 52), np.int32)
  classes = np.asarray(preflop_class(HOLES))
  table[HOLES[:, 0], HOLES[:, 1]] = table[HOLES[:, 1], HOLES[:, 0]] = classes
  return table


@functools.cache
def preflop_equities() -> np.ndarray:
  """Equity float64 [169] of each preflop class (`abstractions.preflop_class`) against a random hand,
  by Monte Carlo over `PREFLOP_SAMPLES` fixed draws of board and opponent (standard error < 0.004)."""
  from abstractions import HOLES, preflop_class  # noqa: PLC0415

  classes = np.asarray(preflop_class(HOLES))
  hole = HOLES[np.array([np.flatnonzero(classes == c)[0] for c in range(169)])]  # one pair per class
  board = np.zeros((169, 5), np.int32)
  positions = _draw_positions(PREFLOP_SAMPLES, 50, 7)
  estimate = _monte_carlo(0)
  step = 2_000
  sums = sum(
    np.asarray(estimate(hole, board, positions[i : i + step]), np.float64) * len(positions[i : i + step])
    for i in range(0, PREFLOP_SAMPLES, step)
  )
  return sums / PREFLOP_SAMPLES


def hand_strength(hole, board, samples: int = EQUITY_SAMPLES) -> np.ndarray:
  """Equity float64 [N] of hole cards [N, 2] on visible boards [N, 5] (-1 for unseen cards, shown
  cards first) against one uniformly random hand, the unseen board cards dealt uniformly.

  Preflop from the table `preflop_equities`; on the flop and turn by Monte Carlo over `samples` fixed
  card orders (the same orders for every hand: deterministic); on the river exact (all 990
  opponent hands, `abstractions.equity`)."""
  hole, board = np.asarray(hole, np.int32), np.asarray(board, np.int32)
  shown = (board >= 0).sum(axis=1)
  result = np.zeros(len(hole))
  pre = shown == 0
  if pre.any():
    result[pre] = preflop_equities()[_preflop_classes()[hole[pre, 0], hole[pre, 1]]]
  river = shown == 5
  if river.any():
    result[river] = _river_equity(hole[river], board[river])
  for count in (3, 4):
    rows = shown == count
    if rows.any():
      result[rows] = _estimate(hole[rows], board[rows], count, samples)
  return result


@functools.cache
def _river_jit():
  import jax  # noqa: PLC0415

  from abstractions import equity  # noqa: PLC0415

  return jax.jit(equity)


def _river_equity(hole: np.ndarray, board: np.ndarray) -> np.ndarray:
  return _chunked(_river_jit(), hole, board)
