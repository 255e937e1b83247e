"""Real-time search: a bot that re-solves the subgame it is in at its decisions on `SearchConfig.streets`
(by default the flop and the turn, their betting round alone, depth-limited, and the river to the end;
each with the Maxmargin-prior gadget, a budget of 0.1 s per decision: `defaults`, the configuration
measured stronger than its blueprint and less exploitable than it).

    bot = search_policy(load_policy('bp.npz'))               # the default bot
    actions, probabilities = bot.strategy(state, holes)      # an `nlhe.Policy`, like the blueprint
    bot.median_think_seconds()                               # {street: seconds per decision}
    search_policy(blueprint, streets=(2, 3), turn_depth_limited=False, gadget=None, think_seconds=1.0)
                                  # the turn to the end of the hand and the river, unsafe

Preflop, and on a street that `SearchConfig.streets` leaves out, the bot plays its blueprint (it
delegates). At a decision of the bot on a turn or river it searches (the flop and a depth-limited turn:
below) it

1. tracks both players' ranges over the 1,326 hole pairs (`track_ranges`): uniform at the deal, times
   at every past action the probability the strategy that was played gives that action with each pair
   (one query with all 1,326 pairs per action, as local best response does): the bot's own actions on
   its search streets under its re-solve there (cached, or solved again; `track_own`), every other
   action under the blueprint (an off-tree raise first translated to one of the blueprint's raise
   amounts pseudo-harmonically with the hand's `state.noise`, as the blueprint translates it); then
   cleared of the pairs the visible board blocks, and mixed with `range_floor` (0.1%) of the uniform
   range, so that a hand the blueprint would not have played this way still gets a strategy. Neither
   range is cleared of the bot's own hole cards: the ranges are public beliefs, so one solve serves
   every hand the bot may hold (and range queries), and the solver removes, for each of the bot's
   hands, the opponent's pairs that share a card with it (card removal per hand pair in the subgame's
   values), which is the opponent's range as the bot holding that hand sees it.
2. builds the subgame at the current public state (`subgame_config`): the real board, the pot when
   the round began and the stacks behind then, the round as played so far (`tree.RoundStart`: the
   chips each has put in this round, who acts, the bets and raises so far), so that the opponent's
   actual bet, off the abstraction or not, is the root's facing bet; with the real game's minimum
   raise (the big blind, or the round's last increment) and `SearchConfig`'s bet sizes: a river
   subgame bets 33% or 75% of the pot or all-in and raises 2.5x or all-in (finer than the small
   blueprint's 75% bets and pot raises); a turn subgame, which deals 48 river cards, bets 75% or
   all-in and raises all-in on the turn, and bets 75% without raises on the river (1,509 public
   nodes 200 big blinds deep: coarser sizes, so that a decision's time buys enough iterations);
3. solves it to the end of the hand (`SearchConfig.algorithm`, DCFR by default) until
   `think_seconds` have passed since the decision began, or the exploitability is at most
   `target_pct` % of the pot (checked on the river only), or `iterations`, whichever first, but at
   least `min_iterations` (10), and plays the average strategy of the root for the bot's hand; the
   root's actions are real, legal actions (fold, check or call, bets and raises to their amounts).

Trees are padded to an envelope per street (on the turn, per round start) that grows as new shapes
come, so that spots of other pots and stacks reuse compiled programs (`build_spot`); the first
decisions of a shape include compiling (seconds; JAX's persistent cache keeps the programs between
runs when enabled, as the `jaxcfr` command does).

On the flop (street 1 in `streets`), and on the turn with `SearchConfig.turn_depth_limited`, the
subgame is the current betting round alone, depth-limited (`depth_limited`, one code path for both):
the same ranges and real state, `SearchConfig.flop_sizes` (33% and 75% of the pot or all-in; raises
all-in) or `turn_round_sizes` (75% or all-in; raises all-in), and at each leaf, where the round ends
and the hand goes on, the opponent chooses per hand among four continuations of the blueprint for the
rest of the hand (Pluribus's), on `runouts` turn and river cards drawn from the seed and the public
state (the flop) or on every river card (the turn; `SearchConfig.river_cards` of them drawn the same
way, if set). The leaf values come first, then DCFR until `think_seconds` have passed since the
decision began (or for `iterations`), at least `min_iterations`. A leaf's values and a board's runout
tables are kept between decisions (`depth_limited.LeafCache`): the next decision of the same round
reuses the leaves it shares.

**Warm starts** (`SearchConfig.warm_start`, (flop, river) = `WARM_START`): a flop or river re-solve
may start from K iterations in which both players play the blueprint's strategy on the search tree
(`blueprint_strategies`: one batched range query over its decision nodes, raises split between the sizes
by pseudo-harmonic odds), so that its regrets and average begin as the blueprint's
(`solver.subgame_warm_start`; strategy-based warm starting, Brown & Sandholm 2016). By default no
re-solve is warm-started: with the small blueprint the warm-started ones were further from equilibrium
after the same iterations (`experiments/warm_start.py`). The turn always starts cold: solved to the end,
its tree deals 48 river cards, so the blueprint would be asked at 584 decision nodes (200 big blinds
deep), and `warm_start` holds no count for a depth-limited turn.

Without a gadget (`gadget=None`) this is **unsafe** re-solving (Ganzfried & Sandholm 2015; Brown &
Sandholm 2017): the ranges at the root are fixed by the blueprint's strategy and no gadget lets the
opponent opt out, so the combined strategy may be more exploitable than the blueprint; what it gains is
the exact cards, the finer bet sizes and the real pot instead of a translated one. Local best response
shows that it is: on the same deals it wins about 4 big blinds a hand more against the river search bot
than against its blueprint (`experiments/lbr_pair.py`; docs/benchmarks.md has the figures), since the bot
answers the range the blueprint would hold in the opponent's place, which an opponent that does not play
the blueprint does not hold.

**Safe re-solving** (`SearchConfig.gadget`, Maxmargin-prior by default: the river, the flop and a
depth-limited turn; a turn solved to the end of the hand stays unsafe): the opponent's range at the root
is no longer fixed. Each of its hands may take instead its *alternative*: the counterfactual value of its
best response, from the current state on, to the blueprint's strategy on the search tree
(`blueprint_policy`, `resolving.alternatives`; the blueprint's raises split between the tree's sizes as it
translates an off-tree raise). 'resolve' (Burch, Johanson & Bowling 2014) weighs the hands by the tracked
range and lets each enter or take its alternative; 'maxmargin' (Moravcik et al. 2016) lets the opponent
pick whichever hands gain most over their alternatives, so the re-solve raises the smallest margin over
all hands (`resolving.safe_subgame_solver`); 'maxmargin-prior' holds that opponent to the tracked range
half the time (`defaults.PRIOR_SHARE`), a restricted Nash response's trade between the margins and what
the re-solve wins from the range it expects (no guarantee). Solved to convergence (Resolve, Maxmargin), no
hand of the opponent wins more at this state against the bot than its best response to the blueprint's
strategy would, whatever the tracked range says: no more exploitable than the blueprint there, which is
not the same as better against it (Maxmargin loses to it: docs/benchmarks.md has the match). Short of
convergence it can be worse than the unsafe re-solve: on 20 river spots of a small blueprint, the hand
that gains most over its alternative gained a median 24% of the pot after 60 Maxmargin iterations (18%
unsafe), -0.2% after 150 and -5.8% after 300 (6.4% unsafe; Resolve converges more slowly:
`experiments/safe_resolving.py`, docs/benchmarks.md has the table). On the depth-limited rounds the gadget
is `depth_limited.Gadget`: the alternatives are the opponent's best responses, per hand, to the
blueprint's strategy on the round's tree (`round_warm_policy`), where it also picks its continuation at
each leaf, so a converged safe round is no more exploitable than the blueprint in the depth-limited game.
A turn solved to the end (its tree deals 48 river cards, so a decision's time buys it few iterations)
stays unsafe. The gadget's solves have no exploitability target (the game it solves is not the tracked
ranges').

**Any depth.** The bot plays hands of any blinds and stacks (`jaxcfr.poker.rules.translation.rules_of` is
None for it): its subgames are built from the real state, so a search after a blueprint of another depth
re-solves at the real pot and stacks, while the blueprint (preflop, range tracking, leaves, alternatives,
warm starts) is asked through `AtRules` (`jaxcfr.poker.rules.translation`), each hand read into the
blueprint's own game as at a table. In the depth-aware bot (`depth:search:A,search:B`) each depth's search
runs over the blueprint built nearest it. At the blueprint's own depth nothing is translated.

**Batches.** With `batch_resolves` (by default on a GPU or TPU, where one program over many subgames
costs little more than one; on XLA:CPU it costs more per spot than solving them in turn), the turn and
river re-solves that one query needs (a match batch's hands at their decisions, LBR's states) are
grouped by envelope key and each group solved in one `jax.vmap`ped program (`resolve_batch`), with
one budget for the group and the iterations the same for all; each decision is timed at its share.

Stateless (the `nlhe.Policy` protocol): everything comes from the state (history, visible board, the
noise of the actions so far); a re-solve is cached by that public key, so the K candidate hands of a
query, repeated queries of a public state (local best response's) and duplicate deals that reach the
same public state solve once. With `think_seconds` the iterations depend on the machine's speed, so
play is not reproducible bit for bit; with `think_seconds=None` and `iterations=N` it is deterministic.

Glossary: B hands, H = 1,326 hole pairs (canonical order `abstractions.HOLES`), A actions, K candidate
hole pairs of a query.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import statistics
import time
import zlib

import jax
import numpy as np

from abstractions import HOLES
from jaxcfr import backend, protocol
from jaxcfr.poker import defaults
from jaxcfr.poker.rules import hands as hand_ranges
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.translation import any_depth
from jaxcfr.poker.search import depth_limited
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import tree
from jaxcfr.poker.subgame.resolving import GADGETS, SafeSubgame, safe_subgame, safe_subgame_solver
from jaxcfr.poker.subgame.solver import subgame_solver, subgame_warm_start

NUM_PAIRS = len(HOLES)  # H
PAIR_INDEX = hand_ranges.PAIR_INDEX  # [52, 52] -> position in HOLES
SEARCH_STREETS = defaults.SEARCH_STREETS
TURN_DEPTH_LIMITED = defaults.TURN_SEARCH == 'depth-limited'
STREET_NAMES = ('preflop', 'flop', 'turn', 'river')
STREETS = (1, 2, 3)  # where the bot can search: the flop depth-limited (`depth_limited`), turn and river
# Bet sizes (first bets, raises) of the subgames: a turn subgame plays its turn and its river with
# the first two, a river subgame its river with the third. A turn subgame deals 48 river cards, so
# its size is kept small to fit the think time (1,509 public nodes); a river subgame is tiny.
TURN_SIZES = (('75%,a', 'a'), ('75%', ''))  # turn subgames: the turn round, then the river rounds
RIVER_SIZES = ('33%,75%,a', '2.5x,a')  # river subgames
WARM_START = defaults.WARM_START  # (flop, river)
CACHE_ENTRIES = 4096  # public states whose re-solved root strategy is kept (float32, ~25 kB each)


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """How the bot searches: the streets it re-solves on, its bet sizes on the turn and river
  (postflop-solver's syntax, `tree.street_sizes`), the solver, and the budget of one decision."""

  think_seconds: float | None = defaults.THINK_SECONDS  # wall seconds per decision (None: no limit)
  flop_seconds: float | None = None  # a flop decision's wall seconds, where they differ (None: think_seconds)
  iterations: int | None = None  # at most this many iterations (None: only the time and target)
  target_pct: float | None = 0.5  # stop once the exploitability is at most this % of the pot (river)
  eval_every: int = 10  # iterations between exploitability checks (when a target is set)
  min_iterations: int = 10  # at least this many, whatever the time (an average of fewer is noise)
  range_floor: float = 1e-3  # share of each range spread evenly over the pairs the board leaves
  track_own: bool = True  # the bot's own actions on `streets` weigh its range by its re-solves
  algorithm: str = 'dcfr'
  turn_sizes: tuple[tuple[str, str], tuple[str, str]] = TURN_SIZES
  river_sizes: tuple[str, str] = RIVER_SIZES
  raise_cap: int | None = None
  force_all_in: float = 0.15
  streets: tuple[int, ...] = SEARCH_STREETS
  seed: int = 0  # the solver's key (full-width algorithms sample nothing) and the flop's runouts
  flop_sizes: tuple[str, str] = depth_limited.FLOP_SIZES  # the flop round's bets and raises
  runouts: int = depth_limited.RUNOUTS  # turn and river cards sampled for the flop's leaf values
  # The turn depth-limited too (its round alone, every river card at the leaves), with these sizes;
  # else the turn is solved to the end of the hand with `turn_sizes`.
  turn_depth_limited: bool = TURN_DEPTH_LIMITED
  turn_round_sizes: tuple[str, str] = depth_limited.TURN_ROUND_SIZES
  # A depth-limited turn's leaves on this many of the 48 river cards, drawn from the seed and the
  # public state as the flop's runouts (None: every river card, exact).
  river_cards: int | None = defaults.RIVER_CARDS
  warm_start: tuple[int, int] = WARM_START  # (flop, river): blueprint iterations a re-solve starts from
  batch_resolves: bool | None = None  # turn and river re-solves of one query together (None: on a GPU/TPU)
  # Safe re-solves of the river and the depth-limited rounds: one of GADGETS (None: unsafe).
  gadget: str | None = defaults.GADGET
  # Blending: the root strategy played is (1 - alpha) the blueprint's + alpha the re-solve's, alpha =
  # min(1, iterations / blend), so that a young search leans on the blueprint (None: the re-solve's).
  blend: int | None = None

  def __post_init__(self):
    if self.think_seconds is None and self.iterations is None:
      raise ValueError('a search needs a budget: think_seconds or iterations')
    if not (isinstance(self.min_iterations, int) and self.min_iterations >= 1):
      raise ValueError(f'min_iterations must be a whole number >= 1, got {self.min_iterations!r}')
    if self.think_seconds is not None and not self.think_seconds > 0:
      raise ValueError(f'think_seconds must be positive, got {self.think_seconds!r}')
    if self.flop_seconds is not None and not self.flop_seconds > 0:
      raise ValueError(f'flop_seconds must be positive, got {self.flop_seconds!r}')
    if self.iterations is not None and not (isinstance(self.iterations, int) and self.iterations >= 1):
      raise ValueError(f'iterations must be a whole number >= 1, got {self.iterations!r}')
    if not set(self.streets) <= set(STREETS):
      raise ValueError(f'search re-solves on the flop, turn and river (streets 1, 2, 3), got {self.streets}')
    if not (isinstance(self.runouts, int) and 1 <= self.runouts <= 24):
      raise ValueError(f'runouts must be a whole number in 1..24, got {self.runouts!r}')
    cards = self.river_cards
    if cards is not None and (isinstance(cards, bool) or not (isinstance(cards, int) and 1 <= cards <= 48)):
      raise ValueError(f'river_cards must be a whole number in 1..48 or None, got {self.river_cards!r}')
    warm = self.warm_start
    if isinstance(warm, int) and not isinstance(warm, bool):
      object.__setattr__(self, 'warm_start', warm := (warm, warm))
    if not (isinstance(warm, tuple) and len(warm) == 2 and all(isinstance(k, int) and k >= 0 for k in warm)):
      raise ValueError(
        f'warm_start must be a whole number >= 0 or a pair of them (flop, river), got {warm!r}'
      )
    if self.batch_resolves not in (None, True, False):
      raise ValueError(f'batch_resolves must be True, False or None, got {self.batch_resolves!r}')
    if self.gadget is not None and self.gadget not in GADGETS:
      raise ValueError(f'gadget must be one of {", ".join(GADGETS)} or None, got {self.gadget!r}')
    if self.gadget is not None and self.warm_start[1]:
      raise ValueError(
        'a river re-solve with a gadget starts cold: give warm_start (flop, 0), '
        'or no gadget (--search-gadget none)'
      )
    if self.blend is not None and not (isinstance(self.blend, int) and self.blend >= 1):
      raise ValueError(f'blend must be a whole number >= 1 (iterations) or None, got {self.blend!r}')
    if not isinstance(self.turn_depth_limited, bool):
      raise ValueError(f'turn_depth_limited must be True or False, got {self.turn_depth_limited!r}')
    if any(self.depth_limited_street(s) for s in self.streets) and self.algorithm != 'dcfr':
      raise ValueError(f'a depth-limited search solves with dcfr, got algorithm {self.algorithm!r}')

  def depth_limited_street(self, street: int) -> bool:
    """Whether a decision on `street` is searched depth-limited (`depth_limited`): the flop always,
    the turn with `turn_depth_limited`."""
    return street == 1 or (street == 2 and self.turn_depth_limited)

  def seconds(self, street: int) -> float | None:
    """The wall seconds of a decision on `street`: `flop_seconds` on the flop where given, else
    `think_seconds` (None: no limit)."""
    return self.flop_seconds if street == 1 and self.flop_seconds is not None else self.think_seconds

  @property
  def least_iterations(self) -> int:
    """Iterations a re-solve runs whatever the clock: `min_iterations`, capped by `iterations`."""
    return self.min_iterations if self.iterations is None else min(self.min_iterations, self.iterations)

  def sizes(self, street: int) -> tuple[tree.StreetSizes, tree.StreetSizes, tree.StreetSizes]:
    """The `TreeConfig.sizes` (flop, turn, river) of a subgame starting on `street` (1, 2 or 3); a
    depth-limited search (`depth_limited_street`) plays its round only."""
    if self.depth_limited_street(street):
      round_sizes = tree.street_sizes(*(self.flop_sizes if street == 1 else self.turn_round_sizes))
      return (round_sizes,) * 3
    if street == 3:
      river = tree.street_sizes(*self.river_sizes)
      return (river, river, river)
    turn, river = (tree.street_sizes(*sizes) for sizes in self.turn_sizes)
    return (turn, turn, river)


# 1. Ranges.


def _raise_slot(state: nlhe.HandState, actions: nlhe.ActionSet, amount, noise) -> np.ndarray:
  """The slot [n] of `actions` that a real raise to `amount` [n] maps to: the raise of that amount if
  offered, else pseudo-harmonic translation of its size (raise over the top bet / pot after calling)
  between the offered raises' sizes, drawn with `noise` [n]; -1 where no raise is offered."""
  from jaxcfr.poker.blueprint.policy import translate_fraction  # noqa: PLC0415  (shared with the blueprint)

  kind, offered, valid = actions
  raises = valid & (kind == nlhe.RAISE)
  top, after_call = nlhe.raise_basis(state)
  after_call = np.maximum(after_call, 1)
  exact = raises & (offered == amount[:, None])
  fractions = np.where(raises, (offered - top[:, None]) / after_call[:, None], np.nan)
  translated = translate_fraction((amount - top) / after_call, fractions, noise)
  return np.where(exact.any(1), np.argmax(exact, 1), np.where(raises.any(1), translated, -1))


def likelihood(state: nlhe.HandState, policy, kind, amount, noise) -> np.ndarray:
  """P(the real action kind [n], amount [n] | pair) under `policy` at `state` (its player to act),
  float64 [n, H]: the probability of the policy's slot for that action (fold, check/call, or the
  raise it is translated to, see `_raise_slot`); 1 for every pair where the policy offers no such
  slot (the action says nothing it can weigh); 0 for pairs the visible board blocks."""
  actions, probs = hand_ranges.query(policy, state)
  actions = nlhe.ActionSet(*(np.asarray(x) for x in actions))
  kinds, valid = actions.kind, actions.valid
  first = lambda mask: np.where(mask.any(1), np.argmax(mask, 1), -1)  # noqa: E731
  slot = np.select(
    [kind == nlhe.FOLD, kind == nlhe.CALL],
    [first(valid & (kinds == nlhe.FOLD)), first(valid & (kinds == nlhe.CALL))],
    _raise_slot(state, actions, amount, noise),
  )
  found = slot >= 0
  weights = hand_ranges.action_likelihood(actions, probs, np.maximum(slot, 0))
  return np.where(found[:, None], weights, 1.0)


def track_ranges(policy, state: nlhe.HandState, own=None, own_streets=()) -> np.ndarray:
  """Both players' ranges float64 [B, 2, H] (by seat, each summing to 1) after each hand's history,
  by Bayes' rule under `policy` (see the module): uniform, times `likelihood` of every past action,
  cleared of the pairs the visible board blocks. With `own`, the actions of the player to act at
  `state` taken on `own_streets` are weighed under `own` instead (the search bot's own re-solves). A
  history the policy gives probability 0 with every pair (which it would never play) leaves the range
  as it was before that action."""
  batch = len(state.street)
  weights = np.ones((batch, 2, NUM_PAIRS))
  real = nlhe.initial(state.hole, state.board, state.rules, state.noise)
  for t in range(int(state.num_actions.max(initial=0))):
    acting = t < state.num_actions
    index = np.flatnonzero(acting)
    sub = nlhe.take(real, index)
    kind, amount = state.history[index, t, 1], state.history[index, t, 2]
    seat = sub.to_act.astype(np.int64)
    mine = np.zeros(len(index), bool)
    if own is not None:
      mine = (seat == state.to_act[index]) & np.isin(sub.street, own_streets)
    update = np.empty((len(index), NUM_PAIRS))
    for who, rows in ((policy, np.flatnonzero(~mine)), (own, np.flatnonzero(mine))):
      if len(rows):
        noise = state.noise[index[rows], t]
        update[rows] = likelihood(nlhe.take(sub, rows), who, kind[rows], amount[rows], noise)
    update *= weights[index, seat]
    keep = update.sum(1, keepdims=True) > 0
    weights[index, seat] = np.where(keep, update, weights[index, seat])
    real = nlhe.apply(real, state.history[:, t, 1], state.history[:, t, 2], acting)
  weights = np.where(hand_ranges.blocked(nlhe.visible_board(state))[:, None, :], 0.0, weights)
  total = weights.sum(2, keepdims=True)
  return weights / np.where(total > 0, total, 1.0)


def floor_ranges(ranges: np.ndarray, board: np.ndarray, floor: float) -> np.ndarray:
  """(1 - floor) * ranges [2, H] + floor * uniform over the pairs `board` (int [5], -1 unseen) leaves:
  every pair the bot may hold then has reach in the subgame, so its re-solved strategy is defined
  (one the blueprint never plays this way would have weight 0 and a meaningless uniform average)."""
  possible = ~hand_ranges.blocked(board[None])[0]
  return (1 - floor) * ranges + floor * possible / possible.sum()


# 2. The subgame at a real state.


def subgame_config(state: nlhe.HandState, b: int, config: SearchConfig) -> tree.TreeConfig:
  """The public tree of hand b's current state (postflop, a player to act): tree player 0 (OOP) is
  seat 1 (the big blind), tree player 1 (IP) seat 0; pot and stack as the round began; the round so
  far as the root's `RoundStart`; the real minimum raise."""
  street = int(state.street[b])
  if street not in (1, 2, 3) or state.finished[b]:
    raise ValueError(f'hand {b}: a subgame starts at a postflop decision (street {street})')
  round_bet = state.round_bet[b].astype(np.int64)
  before = state.committed[b] - round_bet  # [2] each seat's chips before this round (equal)
  if before[0] != before[1]:
    raise ValueError(f'hand {b}: the round began with unequal commitments {before.tolist()}')
  seat = int(state.to_act[b])
  fresh = not state.acted[b].any() and int(state.raises[b]) == 0 and not round_bet.any()
  start = None
  if not fresh:
    start = tree.RoundStart(
      round_bet=(int(round_bet[1]), int(round_bet[0])),
      to_act=1 - seat,
      raises=int(state.raises[b]),
      last_increment=int(state.last_increment[b]),
      acted=(bool(state.acted[b, 1]), bool(state.acted[b, 0])),
    )
  return tree.TreeConfig(
    street,
    int(before.sum()),
    int(state.rules.stack - before[0]),
    config.sizes(street),
    config.raise_cap,
    config.force_all_in,
    start=start,
    min_increment=int(state.rules.big_blind),
  )


def root_action_set(state: nlhe.HandState, b: int, tree_config: tree.TreeConfig) -> nlhe.ActionSet:
  """The root's actions (in the order of its children) as real actions of hand b, [1, A]."""
  options = nlhe.legal(nlhe.take(state, [b]))
  kinds, amounts = [], []
  for kind, _, amount in tree.root_actions(tree_config):
    if kind == 'fold':
      kinds.append(nlhe.FOLD), amounts.append(0)
    elif kind in ('check', 'call'):
      kinds.append(nlhe.CALL), amounts.append(int(options.call_to[0]))
    else:
      kinds.append(nlhe.RAISE), amounts.append(amount)
  actions = nlhe.ActionSet(
    np.array([kinds], np.int8), np.array([amounts], np.int64), np.ones((1, len(kinds)), bool)
  )
  for slot in range(len(kinds)):
    if not nlhe.is_legal(nlhe.take(state, [b]), actions.kind[:, slot], actions.amount[:, slot])[0]:
      raise AssertionError(f'the subgame root action {kinds[slot]} {amounts[slot]} is not legal in hand {b}')
  return actions


def build_spot(
  state: nlhe.HandState, b: int, ranges: np.ndarray, config: SearchConfig, shapes: dict | None = None
) -> subgame.Subgame:
  """The subgame of hand b with the seats' ranges `ranges` [2, H] (by seat).

  `shapes` ({`envelope_key`: `subgame.TreeShape`}, updated in place): the tree is padded to its key's
  envelope, grown to hold it when it does not, so that spots of many pots and stacks share one
  compiled program (padding weighs nothing: the values are the unpadded tree's)."""
  tree_config = subgame_config(state, b, config)
  board = state.board[b, : nlhe.BOARD_SIZES[state.street[b]]].tolist()
  shape = None if shapes is None else _envelope(tree_config, shapes)
  tree_arrays = subgame.build_tree(tree_config, shape=shape)
  spot = subgame.make_spot(tree_arrays, board, (ranges[1], ranges[0]))  # (OOP, IP) = seats (1, 0)
  return subgame.Subgame(tree_arrays, spot)


def _envelope(tree_config: tree.TreeConfig, shapes: dict) -> subgame.TreeShape:
  """The envelope of `tree_config`'s key in `shapes`, seeded (`seed_envelope`) or grown to hold its tree
  as needed (updated in place)."""
  key = envelope_key(tree_config)
  if key not in shapes:
    shapes[key] = seed_envelope(tree_config)
  shapes[key] = shapes[key].union(subgame.tree_shape(tree_config))
  return shapes[key]


SEED_SCALES = (0.25, 0.5, 2.0, 4.0, 8.0, 16.0)  # pot multiples an envelope is first built over


def envelope_key(tree_config: tree.TreeConfig) -> tuple:
  """What groups subgames into one padded shape: on the river (trees of a few hundred nodes) the
  street alone; on the turn the street and how the round stands (who acts, bets and raises so far,
  whether anyone has acted), so that padding costs little there."""
  if tree_config.street == 3:
    return (3,)
  start = tree_config.start
  return (
    (tree_config.street,) if start is None else (tree_config.street, start.to_act, start.raises, start.acted)
  )


def seed_envelope(tree_config: tree.TreeConfig) -> subgame.TreeShape:
  """The envelope of `tree_config`'s tree and the trees of the same round at other stack-to-pot
  ratios (the pot and the round's bets scaled by `SEED_SCALES`), so that an envelope rarely grows
  (each growth compiles anew). On the river also fresh rounds and rounds facing a bet."""
  configs = [tree_config]
  variants = [tree_config]
  if tree_config.street == 3:
    variants += [
      dataclasses.replace(tree_config, start=start)
      for start in (
        None,
        tree.RoundStart((0, 0), 1, 0, 0, (True, False)),
        tree_config.start or tree.RoundStart((0, 0), 1, 0, 0, (True, False)),
      )
    ]
  for variant in variants:
    for scale in SEED_SCALES:
      start = variant.start
      if start is not None:
        start = dataclasses.replace(
          start,
          round_bet=tuple(int(round(x * scale)) for x in start.round_bet),
          last_increment=int(round(start.last_increment * scale)),
        )
      pot = max(1, int(round(variant.pot * scale)))
      if start is None or max(start.round_bet) < variant.stack:
        configs.append(dataclasses.replace(variant, pot=pot, start=start))
  return subgame.envelope(configs)


# 3. Warm starts: the blueprint's strategy on a search tree.


def blueprint_strategies(blueprint, state: nlhe.HandState, b: int, nodes: list, targets) -> dict:
  """{node: float64 [children, 1,326]}: the blueprint's strategy at each decision node of `targets`
  (`tree.build` nodes of hand b's search tree, reached by actions only) for every pair, over the
  node's children, from one range query with all of them (`hand_ranges.query`). Fold and check/call map to
  the same; each of the blueprint's raises is split between the tree's raises next to it by
  pseudo-harmonic translation's odds (`translation`, the fractions of the pot after calling), as the
  blueprint itself splits a raise off its abstraction. Pairs the board blocks are uniform."""
  from jaxcfr.poker.blueprint.policy import translation  # noqa: PLC0415  (shared with the blueprint)

  targets = list(targets)
  states = depth_limited.line_states(state, b, nodes, targets)
  actions, probs = hand_ranges.query(blueprint, states)  # [n, A], [n, H, A]
  top, after_call = nlhe.raise_basis(states)
  after_call = np.maximum(after_call, 1)
  strategies = {}
  for i, node in enumerate(targets):
    lines = [depth_limited.line_action(nodes[c].label) for c in nodes[node].children]
    kinds = np.array([kind for kind, _ in lines])
    raises = np.flatnonzero(kinds == nlhe.RAISE)
    fractions = np.array([[(lines[j][1] - top[i]) / after_call[i] for j in raises]], np.float64)
    out = np.zeros((len(lines), NUM_PAIRS))
    for a in np.flatnonzero(actions.valid[i]):
      kind, p = actions.kind[i, a], probs[i, :, a]
      if kind != nlhe.RAISE:
        out[kinds == kind] += p / max(1, (kinds == kind).sum())
      elif len(raises):
        x = np.array([(actions.amount[i, a] - top[i]) / after_call[i]], np.float64)
        low, high, p_low = (v[0] for v in translation(x, fractions))
        if low >= 0:
          out[raises[low]] += p_low * p
        if high >= 0:
          out[raises[high]] += (1 - p_low) * p
    total = out.sum(0, keepdims=True)
    strategies[node] = np.where(total > 0, out / np.where(total > 0, total, 1), 1 / len(lines))
  return strategies


def blueprint_policy(blueprint, state: nlhe.HandState, b: int, game: subgame.Subgame) -> np.ndarray:
  """`blueprint_strategies` in the layout of `game`'s policies (hand b's river subgame): [D, A, H] over
  its decision rows and hands (padding rows uniform over their legal actions)."""
  info, legal = game.tree.info, np.asarray(game.tree.legal)
  real = [int(node) for node in info.decisions if node >= 0]
  strategies = blueprint_strategies(blueprint, state, b, info.nodes, real)
  hands = np.asarray(game.spot.hands)
  pairs = PAIR_INDEX[hands[:, 0], hands[:, 1]]
  policy = np.broadcast_to(legal / legal.sum(1, keepdims=True), (*legal.shape[:2], len(hands))).copy()
  for row, node in enumerate(info.decisions):
    if node >= 0:
      strategy = strategies[int(node)]
      policy[row] = 0
      policy[row, : len(strategy)] = strategy[:, pairs]
  return policy.astype(np.dtype(game.dtype))


def round_warm_policy(
  blueprint, state: nlhe.HandState, b: int, game: depth_limited.RoundGame, tree_config: tree.TreeConfig
) -> dict:
  """`blueprint_strategies` for the depth-limited round `game` of hand b ({decision: [A, H]} over its hands):
  at each leaf the opponent takes the unbiased continuation (the blueprint)."""
  nodes = tree.build(tree_config, first_round_only=True)
  pairs = PAIR_INDEX[game.hands[:, 0], game.hands[:, 1]]
  origin = {int(n): int(game.origin[n]) for n in game.decisions}
  real = [node for node in origin.values() if nodes[node].kind == tree.DECISION]
  strategies = blueprint_strategies(blueprint, state, b, nodes, real)
  warm = {}
  for n, node in origin.items():
    if nodes[node].kind == tree.DECISION:
      warm[n] = strategies[node][:, pairs]
    else:  # a leaf's choice of continuation
      warm[n] = np.zeros((len(game.children[n]), len(pairs)))
      warm[n][0] = 1.0
  return warm


# 4. Solving.


@functools.cache
def _programs(algorithm: str, batched: bool = False, gadget: str | None = None, options: tuple = ()):
  """The solver and its compiled pieces (jit caches them per tree shape): init, init with a warm start,
  a run of N iterations, the average policy, the exploitability (chips). `batched`: each over a stack
  of games of one shape (`jax.vmap` over their leading axis; the key and N shared). With `gadget`, of
  `SafeSubgame`s (`safe_subgame_solver`; no warm start). `options`: the compiler options of the
  games' street (`backend.compiler_options(game)`, as sorted pairs)."""
  solver = subgame_solver(algorithm) if gadget is None else safe_subgame_solver(algorithm, gadget)
  warm_start = subgame_warm_start(algorithm)
  jit = functools.partial(jax.jit, compiler_options=dict(options))
  pieces = (
    (solver.init, (0, None)),
    (lambda game, key, policy, n: warm_start(solver.init(game, key), game, policy, n), (0, None, 0, None)),
    (lambda state, game, n: protocol.run(solver, state, game, n), (0, 0, None)),
    (solver.average_policy, (0, 0)),
    (lambda policy, game: game.evaluate_profile(policy)[0] / 2, (0, 0)),
  )
  return (solver, *(jit(jax.vmap(f, in_axes=axes) if batched else f) for f, axes in pieces))


@dataclasses.dataclass(frozen=True)
class Solved:
  """One re-solve: the root's real actions [A], the root strategy of every pair [H, A] (check/call
  for pairs the board blocks), and how it went."""

  actions: nlhe.ActionSet  # [1, A]
  probabilities: np.ndarray  # float32 [H, A]
  iterations: int
  exploitability_pct: float  # at the last check (river), nan when not checked
  seconds: float


def solve_spot(
  game: subgame.Subgame,
  config: SearchConfig,
  deadline: float | None,
  warm: np.ndarray | None = None,
  pots: np.ndarray | None = None,
) -> tuple:
  """(average policy [D, A, H], iterations, exploitability % of the pot at the last check or nan) of
  `game` under the budget: `config.iterations`; `config.target_pct`, checked every `eval_every`
  iterations on the river only (on the turn an exact check costs about an iteration, and the budget
  allows few); the wall clock `deadline` (a `time.perf_counter()` value); and at least
  `config.min_iterations` (capped by `config.iterations`) whatever the time. With `warm` ([D, A, H],
  `blueprint_policy`) the solver starts from `config.warm_start[1]` iterations of it
  (`solver.subgame_warm_start`), which count in neither budget. Deterministic unless the deadline
  stops it.

  With `pots` [B] (each game's pot), `game` is a stack of B games of one tree shape (`stack_games`)
  solved together in one program: policies [B, D, A, H], the iterations (the same for all; the target
  stops them once every game has reached it) and exploitabilities [B]."""
  batched = pots is not None
  safe = isinstance(game, SafeSubgame)
  options = tuple(sorted(backend.compiler_options(game).items()))  # river trees: not those of the turn
  programs = _programs(config.algorithm, batched, config.gadget if safe else None, options)
  _, init, warm_init, run, average, exploitability = programs
  key = jax.random.key(config.seed)
  if warm is None:
    state = init(game, key)
  else:
    state = warm_init(game, key, warm, np.int32(config.warm_start[1]))
  pot = np.asarray(pots, np.float64) if batched else game.tree.info.config.pot
  done, per_iteration, checked = 0, None, np.full(np.shape(pot), np.nan)
  river = game.tree.info.config.street == 3
  target = None if config.target_pct is None or not river or safe else config.target_pct / 100 * pot
  least = config.least_iterations
  while config.iterations is None or done < config.iterations:
    steps = config.eval_every - done % config.eval_every if target is not None else 1 << 30
    if config.iterations is not None:
      steps = min(steps, config.iterations - done)
    if done < least:  # the first chunk (which may compile) is the first iteration alone
      steps = min(steps, least - done) if done else 1
    elif deadline is not None:
      # About one iteration's time is kept for the work after the loop (the average, its layout).
      left = deadline - time.perf_counter() - per_iteration
      if left < 0.5 * per_iteration:
        break
      steps = max(1, min(steps, int(left / per_iteration)))
    started = time.perf_counter()
    state = jax.block_until_ready(run(state, game, np.int32(steps)))
    if done:  # the first chunk's time includes compiling
      per_iteration = (time.perf_counter() - started) / steps
    done += steps
    if per_iteration is None and done >= least:
      per_iteration = time.perf_counter() - started
    if target is not None and done % config.eval_every == 0:
      checked = np.asarray(exploitability(average(state, game), game), np.float64)
      if np.all(checked <= target):
        break
  policy = np.asarray(average(state, game))
  pct = 100 * checked / pot
  return policy, done, pct if batched else float(pct)


def stack_games(games: list) -> subgame.Subgame:
  """Games of one padded tree shape stacked along a new leading axis, for `solve_spot(..., pots=)`."""
  return jax.tree.map(lambda *x: np.stack([np.asarray(a) for a in x]), *games)


def resolve(
  state: nlhe.HandState,
  b: int,
  ranges: np.ndarray,
  config: SearchConfig,
  deadline=None,
  shapes=None,
  blueprint=None,
) -> Solved:
  """Re-solves hand b's public state with the seats' ranges [2, H] (see the module; `shapes` as in
  `build_spot`); on the river with `config.warm_start[1]` iterations of `blueprint`'s strategy first
  (`blueprint_policy`) when both are given, or safely against it with `config.gadget` (`_prepare`)."""
  started = time.perf_counter()
  game, warm = _prepare(state, b, ranges, config, shapes, blueprint)
  policy, iterations, exploitability_pct = solve_spot(game, config, deadline, warm)
  seconds = time.perf_counter() - started
  return _finish(state, b, game, policy, iterations, exploitability_pct, seconds, config, blueprint)


def resolve_batch(
  state: nlhe.HandState,
  rows,
  ranges: np.ndarray,
  config: SearchConfig,
  deadline=None,
  shapes: dict | None = None,
  blueprint=None,
) -> list[Solved]:
  """`resolve` of hands `rows` (turn or river decisions whose subgames share an `envelope_key`) with
  their seats' ranges [n, 2, H], solved together in one program (`solve_spot` with `pots`): the
  budget is the batch's, the iterations the same for all (the target stops them once every spot has
  reached it). Each `Solved` counts an even share of the batch's seconds."""
  started = time.perf_counter()
  rows = [int(b) for b in rows]
  shapes = {} if shapes is None else shapes
  configs = [subgame_config(state, b, config) for b in rows]
  if len({envelope_key(c) for c in configs}) != 1:
    raise ValueError('a batch of re-solves needs one envelope key (street and how the round stands)')
  for tree_config in configs:  # the envelope that holds all of them, before any is built
    _envelope(tree_config, shapes)
  prepared = [_prepare(state, b, r, config, shapes, blueprint) for b, r in zip(rows, ranges, strict=True)]
  games = [game for game, _ in prepared]
  warm = None
  if all(w is not None for _, w in prepared):
    warm = np.stack([w for _, w in prepared])
  pots = np.array([c.pot for c in configs])
  policies, iterations, pcts = solve_spot(stack_games(games), config, deadline, warm, pots)
  share = (time.perf_counter() - started) / len(rows)
  return [
    _finish(state, b, game, policy, iterations, float(pct), share, config, blueprint)
    for b, game, policy, pct in zip(rows, games, policies, pcts, strict=True)
  ]


def _prepare(state, b, ranges, config, shapes, blueprint) -> tuple:
  """(hand b's subgame with its ranges floored, the blueprint's strategy on it for a river warm start
  or None); on the river with `config.gadget`, a `SafeSubgame` whose alternatives are the opponent's
  best-response values against the blueprint's strategy on the search tree (`blueprint_policy`)."""
  ranges = floor_ranges(ranges, nlhe.visible_board(nlhe.take(state, [b]))[0], config.range_floor)
  game = build_spot(state, b, ranges, config, shapes)
  info = game.tree.info
  if info.decisions[0] != 0:
    raise AssertionError('the root is not the first decision row')
  warm = None
  if config.gadget is not None and info.config.street == 3:
    if blueprint is None:
      raise ValueError('a river re-solve with a gadget needs the blueprint (its alternatives)')
    replaced = jax.numpy.asarray(blueprint_policy(blueprint, state, b, game))
    opponent = int(state.to_act[b])  # tree player 0 is seat 1: the opponent's is the bot's seat number
    game = safe_subgame(game, replaced, opponent)
  elif config.warm_start[1] and blueprint is not None and info.config.street == 3:
    warm = blueprint_policy(blueprint, state, b, game)
  return game, warm


def _finish(
  state, b, game, policy, iterations, exploitability_pct, seconds, config: SearchConfig, blueprint
) -> Solved:
  """The `Solved` of hand b from its subgame's average policy [D, A, H] (blended with the blueprint's
  root strategy where `config.blend` says so)."""
  actions = root_action_set(state, b, game.tree.info.config)
  width, hands = actions.kind.shape[1], np.asarray(game.spot.hands)
  root = np.asarray(policy[0, :width], np.float64)  # [A, H]
  if config.blend is not None:
    info = game.tree.info
    node = int(info.decisions[0])
    strategy = _blueprint_root(blueprint, state, b, info.nodes, node)
    root = blended(root, strategy[:width][:, PAIR_INDEX[hands[:, 0], hands[:, 1]]], iterations, config.blend)
  return Solved(actions, _per_pair(actions, root.T, hands), iterations, exploitability_pct, seconds)


def _blueprint_root(blueprint, state, b, nodes, node) -> np.ndarray:
  """[children, 1,326]: the blueprint's strategy at search-tree node `node` (for blending)."""
  if blueprint is None:
    raise ValueError('blending a re-solve with the blueprint needs the blueprint')
  return blueprint_strategies(blueprint, state, b, nodes, [node])[node]


def blended(root: np.ndarray, blueprint_root: np.ndarray, iterations: int, blend: int) -> np.ndarray:
  """(1 - alpha) `blueprint_root` + alpha `root` (both [A, H]), alpha = min(1, iterations / blend):
  the blueprint's strategy while the search is young, the re-solve's once it has run `blend`
  iterations."""
  alpha = min(1.0, iterations / blend)
  return (1 - alpha) * blueprint_root + alpha * root


def _per_pair(actions: nlhe.ActionSet, root: np.ndarray, hands: np.ndarray) -> np.ndarray:
  """float32 [H, A]: the root strategy `root` [H_board, A] of the board's `hands` [H_board, 2] for
  every pair (a nominal check or call for the pairs the board blocks)."""
  probabilities = np.zeros((NUM_PAIRS, actions.kind.shape[1]))
  probabilities[:, int(np.flatnonzero(actions.kind[0] == nlhe.CALL)[0])] = 1.0
  probabilities[PAIR_INDEX[hands[:, 0], hands[:, 1]]] = root
  return (probabilities / probabilities.sum(1, keepdims=True)).astype(np.float32)


def round_runouts(
  state: nlhe.HandState, b: int, config: SearchConfig, cache: depth_limited.LeafCache | None = None
) -> depth_limited.Runouts:
  """The runouts of hand b's depth-limited search (through `cache`): on the flop `config.runouts`
  drawn from `config.seed` and the hand's public state (`public_key`), so that a public state always
  gets the same ones; on the turn every river card, or `config.river_cards` of them drawn the same
  way."""
  tables = depth_limited.runout_tables if cache is None else cache.runouts
  board = nlhe.visible_board(nlhe.take(state, [b]))[0]
  history, board_bytes, noise, _ = public_key(state, b)
  rng = np.random.default_rng([config.seed, zlib.crc32(history + board_bytes + noise)])
  if state.street[b] == 2:
    if config.river_cards is None:
      return tables(board[:4], depth_limited.river_cards(board[:4]))
    return tables(board[:4], depth_limited.sample_river_cards(rng, board[:4], config.river_cards))
  return tables(board[:3], depth_limited.sample_runouts(rng, board[:3], config.runouts))


def resolve_round(
  blueprint,
  state: nlhe.HandState,
  b: int,
  ranges: np.ndarray,
  config: SearchConfig,
  cache: depth_limited.LeafCache | None = None,
  deadline: float | None = None,
) -> Solved:
  """Re-solves hand b's flop or turn round with the seats' ranges [2, H], depth-limited
  (`depth_limited`): the leaves valued by `blueprint`'s continuations (through `cache`) on the
  flop's `config.runouts` sampled runouts or the turn's river cards, then DCFR for
  `config.iterations`, or until the wall clock `deadline` (a `time.perf_counter()` value; default
  `config.think_seconds` from the call: the leaf values spend the same budget), at least
  `config.min_iterations`; on the flop after `config.warm_start[0]` iterations of the blueprint's
  strategy (`round_warm_policy`); with `config.gadget`, safely against that strategy
  (`depth_limited.Gadget`). Its exploitability is the depth-limited game's (the tracked ranges'; NaN
  with a gadget)."""
  started = time.perf_counter()
  seconds = config.seconds(int(state.street[b]))
  if deadline is None and seconds is not None:
    deadline = started + seconds
  ranges = floor_ranges(ranges, nlhe.visible_board(nlhe.take(state, [b]))[0], config.range_floor)
  tree_config = subgame_config(state, b, config)
  runouts = round_runouts(state, b, config, cache)
  game = depth_limited.search_game(blueprint, state, b, tree_config, ranges, runouts, cache)
  warm_iterations = config.warm_start[0] if tree_config.street == 1 else 0
  replaced = gadget = None
  if warm_iterations or config.gadget is not None:
    replaced = round_warm_policy(blueprint, state, b, game, tree_config)
  if config.gadget is not None:
    opponent = 1 - int(game.player[0])  # the bot acts at the root
    alternatives = depth_limited.alternatives(game, replaced, opponent)
    gadget = depth_limited.Gadget(config.gadget, opponent, alternatives)
  policy, iterations = depth_limited.solve(
    game,
    config.iterations,
    deadline,
    config.least_iterations,
    config.algorithm,
    replaced,
    warm_iterations,
    # The exploitability below (the products of about one iteration) and the root's layout.
    after=1.5 if gadget is None else 0.5,
    gadget=gadget,
  )
  # A safe round's solve has no exploitability in the tracked ranges' game (it plays another).
  gap = depth_limited.exploitability(game, policy) if gadget is None else float('nan')
  actions = root_action_set(state, b, tree_config)
  root = np.asarray(policy[0], np.float64)  # [A, H]
  if config.blend is not None:
    nodes = tree.build(tree_config, first_round_only=True)
    strategy = _blueprint_root(blueprint, state, b, nodes, int(game.origin[0]))
    pairs = PAIR_INDEX[runouts.hands[:, 0], runouts.hands[:, 1]]
    root = blended(root, strategy[: root.shape[0]][:, pairs], iterations, config.blend)
  probabilities = _per_pair(actions, root.T, runouts.hands)
  return Solved(
    actions, probabilities, iterations, 100 * gap / tree_config.pot, time.perf_counter() - started
  )


# 5. The policy.


def public_key(state: nlhe.HandState, b: int) -> tuple:
  """What a re-solve of hand b depends on: the history, the visible board, the noise of the actions
  played (action translation in range tracking), and the rules."""
  n = int(state.num_actions[b])
  return (
    state.history[b, :n].tobytes(),
    nlhe.visible_board(nlhe.take(state, [b]))[0].tobytes(),
    state.noise[b, :n].tobytes(),
    state.rules,
  )


def _pad(actions: nlhe.ActionSet, probabilities: np.ndarray, width: int):
  """ActionSet [n, A] and probabilities [n, K, A] padded with invalid slots to `width`."""
  extra = width - actions.kind.shape[1]
  if extra == 0:
    return actions, probabilities
  pad = lambda x, value: np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)], constant_values=value)  # noqa: E731
  return nlhe.ActionSet(pad(actions.kind, nlhe.CALL), pad(actions.amount, 0), pad(actions.valid, False)), pad(
    probabilities, 0.0
  )


class SearchPolicy:
  """The search bot as an `nlhe.Policy` (see the module). `timings` holds the seconds of each
  decision the bot worked out, per street (a re-solve, or the blueprint's share of a batched query);
  cached answers are not counted; `solves` lists each re-solve's (street, iterations,
  exploitability %, seconds)."""

  def __init__(self, blueprint, config: SearchConfig, name: str | None = None):
    self.blueprint = any_depth(blueprint)  # asked at any depth: the searches are at the real one
    self.config = config
    self.name = name or f'search:{getattr(blueprint, "name", "blueprint")}'
    self.timings = {street: [] for street in range(4)}
    self.solves = []
    self._cache = collections.OrderedDict()
    self._shapes = {}  # street -> the envelope its subgames are padded to
    self._leaves = depth_limited.LeafCache()  # depth-limited searches' leaf matrices
    batch = config.batch_resolves
    self.batch_resolves = jax.default_backend() != 'cpu' if batch is None else batch

  def median_think_seconds(self) -> dict[int, float]:
    """{street: median seconds per decision} over the streets with decisions."""
    return {street: statistics.median(times) for street, times in self.timings.items() if times}

  def decisions(self) -> dict[str, dict]:
    """{street name: count, median and 90th-percentile seconds of its decisions, median iterations
    and exploitability (% of the pot, where checked) of its re-solves} over the streets with
    decisions, as the match and LBR scripts report them."""
    out = {}
    for street, times in self.timings.items():
      if not times:
        continue
      solves = [(it, pct) for s, it, pct, _ in self.solves if s == street]
      gaps = [p for _, p in solves if not np.isnan(p)]
      out[STREET_NAMES[street]] = {
        'count': len(times),
        'median_seconds': float(np.median(times)),
        'p90_seconds': float(np.percentile(times, 90)),
        'median_iterations': float(np.median([it for it, _ in solves])) if solves else None,
        'median_exploitability_pct': float(np.median(gaps)) if gaps else None,
      }
    return out

  def strategy(self, state: nlhe.HandState, holes: np.ndarray) -> tuple[nlhe.ActionSet, np.ndarray]:
    """Real actions [B, A] and probabilities [B, K, A] (`nlhe.Policy`)."""
    holes = np.asarray(holes)
    batch = len(state.street)
    if holes.ndim != 3 or holes.shape[0] != batch or holes.shape[2] != 2:
      raise ValueError(f'holes must be [B, K, 2] for B = {batch}, got {holes.shape}')
    searched = ~state.finished & np.isin(state.street, self.config.streets)
    parts = []  # (rows, actions, probabilities)
    delegated = np.flatnonzero(~searched)
    if len(delegated):
      started = time.perf_counter()
      actions, probs = self.blueprint.strategy(nlhe.take(state, delegated), holes[delegated])
      share = (time.perf_counter() - started) / len(delegated)
      for street in state.street[delegated]:
        self.timings[int(street)].append(share)
      parts.append((delegated, nlhe.ActionSet(*(np.asarray(x) for x in actions)), np.asarray(probs)))
    rows = np.flatnonzero(searched)
    if len(rows):
      for b, solved in zip(rows, self._solved(state, rows), strict=True):
        pairs = PAIR_INDEX[holes[b, :, 0].astype(np.int64), holes[b, :, 1].astype(np.int64)]
        probs = np.where(pairs[:, None] >= 0, solved.probabilities[np.maximum(pairs, 0)], 0.0)
        parts.append((np.array([b]), solved.actions, probs[None]))
    width = max((part[1].kind.shape[1] for part in parts), default=1)
    count = holes.shape[1]
    kind = np.full((batch, width), nlhe.CALL, np.int8)
    amount = np.zeros((batch, width), np.int64)
    valid = np.zeros((batch, width), bool)
    probabilities = np.zeros((batch, count, width))
    for index, actions, probs in parts:
      actions, probs = _pad(actions, probs, width)
      kind[index], amount[index], valid[index] = actions
      probabilities[index] = probs
    return nlhe.ActionSet(kind, amount, valid), probabilities

  def _solved(self, state: nlhe.HandState, rows: np.ndarray) -> list[Solved]:
    """The re-solve of each of `rows` (cached by public key); the missing ones solved one by one, or
    with `batch_resolves` the turn and river ones in batches of one envelope key (`resolve_batch`)."""
    keys = [public_key(state, b) for b in rows]
    found = {key: self._cache[key] for key in keys if key in self._cache}
    missing = {}
    for b, key in zip(rows, keys, strict=True):
      if key not in found:
        missing.setdefault(key, b)
    if missing:
      started = time.perf_counter()
      todo = np.array(list(missing.values()))
      own = (self, self.config.streets) if self.config.track_own else (None, ())
      ranges = track_ranges(self.blueprint, nlhe.take(state, todo), *own)
      share = (time.perf_counter() - started) / len(todo)
      jobs = {}  # solved together: a batch's envelope key, or a hand alone
      for key, b, weights in zip(missing, todo, ranges, strict=True):
        group = (key,)
        if self.batch_resolves and not self.config.depth_limited_street(int(state.street[b])):
          group = envelope_key(subgame_config(state, int(b), self.config))
        jobs.setdefault(group, []).append((key, int(b), weights))
      for job in jobs.values():
        job_rows = [b for _, b, _ in job]
        seconds = self.config.seconds(int(state.street[job_rows[0]]))
        deadline = None if seconds is None else time.perf_counter() + seconds - share
        if len(job) > 1:
          weights = np.stack([w for _, _, w in job])
          solved = resolve_batch(
            state, job_rows, weights, self.config, deadline, self._shapes, self.blueprint
          )
        elif self.config.depth_limited_street(int(state.street[job_rows[0]])):
          solved = [
            resolve_round(self.blueprint, state, job_rows[0], job[0][2], self.config, self._leaves, deadline)
          ]
        else:
          solved = [
            resolve(state, job_rows[0], job[0][2], self.config, deadline, self._shapes, self.blueprint)
          ]
        for (key, b, _), one in zip(job, solved, strict=True):
          street = int(state.street[b])
          self.timings[street].append(share + one.seconds)
          self.solves.append((street, one.iterations, one.exploitability_pct, share + one.seconds))
          found[key] = self._cache[key] = one
    for key in keys:
      if key in self._cache:
        self._cache.move_to_end(key)
    while len(self._cache) > CACHE_ENTRIES:
      self._cache.popitem(last=False)
    return [found[key] for key in keys]


def search_policy(
  blueprint,
  *,
  think_seconds: float | None = defaults.THINK_SECONDS,
  seed: int = 0,
  iterations: int | None = None,
  flop_seconds: float | None = None,
  target_pct: float | None = 0.5,
  turn_sizes: tuple[tuple[str, str], tuple[str, str]] = TURN_SIZES,
  river_sizes: tuple[str, str] = RIVER_SIZES,
  streets: tuple[int, ...] = SEARCH_STREETS,
  track_own: bool = True,
  algorithm: str = 'dcfr',
  name: str | None = None,
  flop_sizes: tuple[str, str] = depth_limited.FLOP_SIZES,
  runouts: int = depth_limited.RUNOUTS,
  warm_start: int | tuple[int, int] = WARM_START,
  batch_resolves: bool | None = None,
  gadget: str | None = defaults.GADGET,
  blend: int | None = None,
  turn_depth_limited: bool = TURN_DEPTH_LIMITED,
  turn_round_sizes: tuple[str, str] = depth_limited.TURN_ROUND_SIZES,
  river_cards: int | None = defaults.RIVER_CARDS,
) -> SearchPolicy:
  """The search bot over `blueprint` (a `BlueprintPolicy`, or any `nlhe.Policy` that answers range
  queries): re-solves its decisions on `streets` (flop, turn and river by default; the flop
  depth-limited) for `think_seconds` each (or `iterations`, or until `target_pct` % of the pot) with
  the (bets, raises) sizes `turn_sizes` (a turn subgame's turn and river rounds), `river_sizes` and
  `flop_sizes` (the flop round), the flop's leaves valued on `runouts` sampled runouts; `track_own`:
  weigh the bot's own past actions on `streets` by its re-solves (else by the blueprint);
  `warm_start`: iterations of the blueprint's strategy that flop and river re-solves start from (a
  pair (flop, river), or one count for both); `batch_resolves`: solve the turn and river re-solves
  one query needs together, per tree shape (default: on a GPU or TPU only); `gadget`: re-solve the
  river, the flop and a depth-limited turn against the blueprint with one of `GADGETS` (default
  Maxmargin-prior; None: unsafe); `blend`: the root strategy played moves from the blueprint's to the
  re-solve's over this many iterations (`SearchConfig.blend`; default off); `turn_depth_limited`
  (default on): search the turn's round alone with continuation leaves (`turn_round_sizes`), as the
  flop, over `river_cards` (default 6) of the river cards drawn from the seed and the public state,
  or every one (None); `flop_seconds`: a flop decision's seconds instead of `think_seconds`; see the
  module."""
  config = SearchConfig(
    think_seconds=think_seconds,
    flop_seconds=flop_seconds,
    iterations=iterations,
    target_pct=target_pct,
    algorithm=algorithm,
    turn_sizes=tuple(tuple(sizes) for sizes in turn_sizes),
    river_sizes=tuple(river_sizes),
    streets=tuple(streets),
    track_own=track_own,
    seed=seed,
    flop_sizes=tuple(flop_sizes),
    runouts=runouts,
    warm_start=warm_start,
    batch_resolves=batch_resolves,
    gadget=gadget,
    blend=blend,
    turn_depth_limited=turn_depth_limited,
    turn_round_sizes=tuple(turn_round_sizes),
    river_cards=river_cards,
  )
  return SearchPolicy(blueprint, config, name)
