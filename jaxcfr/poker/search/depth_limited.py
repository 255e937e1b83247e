"""Depth-limited search on the flop and the turn: the current betting round, solved with the
blueprint's continuation strategies at its leaves (Brown, Sandholm & Amos 2018, "Depth-limited
solving for imperfect-information games"; Pluribus, 2019). One code path for both streets.

    runouts = runout_tables(flop, sample_runouts(rng, flop, RUNOUTS))   # the flop: sampled runouts
    runouts = runout_tables(turn_board, river_cards(turn_board))       # the turn: every river card
    game = search_game(blueprint, state, b, tree_config, ranges, runouts)   # hand b's round
    policy, iterations = solve(game, iterations=100)
    policy[0], exploitability(game, policy)                  # the root's strategy [A, H], chips

**The game.** The current round from the bot's decision, with the search's bet sizes for that street
(`tree.build(..., first_round_only=True)`). Where the round ends and the hand goes on (checks or a
call), the tree stops at a leaf. At a leaf the bot's opponent chooses, per hand, how the rest of the
hand is played among `CONTINUATIONS`: the blueprint, or the blueprint biased towards folding,
calling or raising (at each of the opponent's later decisions the probabilities of those actions
times `BIAS`, 5, and renormalised, as Pluribus did); the bot plays the blueprint there. A leaf after
a called all-in has no decisions left and one value. Folds are terminal as usual.

**Leaf values** are one payoff matrix `U [H, H]` per leaf and continuation: what tree player 0
(OOP, the big blind) holding hand i wins from tree player 1 holding hand j, over the rest of the
hand. The cards still to come are the runouts: on the flop `runouts` sampled (turn, river) pairs
(distinct cards, drawn from the seed and the hand's public state), on the turn every river card or
a sample of them. On each runout the blueprint's own tree from the leaf is expanded by asking it at
every decision with all 1,326 hands (its actions, bet amounts and off-tree translation are its own);
each terminal of that tree adds reach(i) x reach(j) x the chips won to U, with the river board's
showdown between i and j or the fold. U(i, j) weighs the runouts that share no card with i and j
(0 where i and j share a card): on the flop their mean (the runouts' 2R cards are distinct, so at
least R - 4 count); on the turn each by c a(i) a(j) (`Runouts.hand_weight`), with n(h) the runout
cards hand h holds, d the most common n, a(h) = 1 / (R - d - n(h)) and c = R - 2d: their mean
whenever i or j holds d of them, so with every river card (n = 2 for every hand: 1/44 each) and for
most pairs on a sample (on 8 river cards pairs that both hold one weigh 2% less, both two 11%
less), and a product of one factor per hand, which keeps the turn's leaves factorable.

A leaf's values come in two forms, the same game. **Dense** (`leaf_matrices`): the matrices built
on the JAX device by a loop of products over the runouts; the solve is then one matrix-vector
product per leaf terminal and iteration, with card removal in the matrices. **Factored**
(`FactoredLeaves`, the turn): no H x H matrix; each product is a showdown sweep per terminal of
the other side's rows (O(H), `showdown`) or a fold's compatible mass, shared by the continuations.
Building matrices costs the runouts times H x H per leaf and continuation and their products stay
the same; the factored products grow with the runouts: the turn takes the factored form up to
`FACTORED_RIVER_CARDS` river cards. A leaf's values depend on its public state and not on the
ranges, so a search keeps them between decisions (`search_game`'s `cache`).

**The solve** is DCFR (`solvers.discount`'s rule, in NumPy; the subgame solver's hyper-parameters),
alternating, every hand at once, on the host with NumPy: the round has tens of nodes and each
spot's tree differs, so a compiled program per tree would cost more than it saves; the products
with the leaf matrices, nearly all the work, are one jitted batched product on the JAX device
(`_Products`). `evaluate` gives the exact values and best responses of a profile in this game (its
exploitability, not the full game's).

Glossary: H hands (the hole pairs the board leaves: 1,176 on the flop, 1,128 on the turn), L
leaves, C continuations, R runouts, Z terminals, A actions.
"""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np

from abstractions import HOLES
from jaxcfr import algorithms
from jaxcfr.poker import defaults
from jaxcfr.poker.rules import cards as cards_module
from jaxcfr.poker.rules import hands as hand_ranges
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.subgame import showdown, tree
from jaxcfr.recent import Recent

CONTINUATIONS = ('blueprint', 'fold', 'call', 'raise')  # the opponent's choices at a leaf
BIAS = 5.0  # the biased continuations multiply their action kind's probability by this
RUNOUTS = 8  # sampled turn and river cards per flop search
# Bets and raises of the flop round: finer bets than the small blueprint's 75%, raises all-in only.
# Each leaf that is not all-in costs C matrices of H x H floats (5.5 MB each) and its expansion: a
# 200-big-blind flop has 11 leaves, 5 not all-in (all-in leaves share one matrix); with 2.5x raises
# as well it would have 51, 25 not all-in.
FLOP_SIZES = ('33%,75%,a', 'a')
# Bets and raises of a depth-limited turn round: its leaves deal 48 river cards, so each leaf that is
# not all-in costs C matrices of the turn's 1,128 x 1,128 hands built over 48 runouts.
TURN_ROUND_SIZES = ('75%,a', 'a')
_BIASED_KIND = {1: nlhe.FOLD, 2: nlhe.CALL, 3: nlhe.RAISE}


def line_action(label: str) -> tuple[int, int]:
  """(nlhe kind, this round's total after it) of a tree edge's label ('fold', 'check', 'call',
  'bet 120', 'raise 300', 'all-in 900'); the amount is 0 except for bets and raises."""
  word = label.split()[0]
  if word == 'fold':
    return nlhe.FOLD, 0
  if word in ('check', 'call'):
    return nlhe.CALL, 0
  return nlhe.RAISE, int(label.split()[-1])


def biased(
  actions: nlhe.ActionSet, probs: np.ndarray, rows: np.ndarray, slots: np.ndarray, continuation: int
):
  """[m, K]: the probability of slot `slots` [m] at state `rows` [m] of `actions` [n, A] with `probs`
  [n, K, A] under continuation `continuation` (an index of `CONTINUATIONS`): unchanged for the
  blueprint, else the slots of the biased kind times `BIAS` and renormalised (where that leaves
  any weight)."""
  taken = probs[rows, :, slots]
  if continuation == 0:
    return taken
  boost = np.where(actions.valid & (actions.kind == _BIASED_KIND[continuation]), BIAS, 1.0)  # [n, A]
  total = (probs @ boost[:, :, None])[..., 0][rows]  # [m, K]: the weighted row sums
  return np.where(total > 0, taken * boost[rows, slots][:, None] / np.where(total > 0, total, 1), taken)


# 1. Leaf values.


def sample_runouts(rng: np.random.Generator, board, count: int) -> np.ndarray:
  """[count, 2] turn and river cards, 2 x count distinct cards that `board` (3 flop cards) leaves."""
  if len(board) != 3:
    raise ValueError(f'runouts are sampled on the flop (3 cards), got {len(board)} cards')
  left = np.setdiff1d(np.arange(52), np.asarray(board))
  if not 1 <= count <= len(left) // 2:
    raise ValueError(f'runouts must be 1..{len(left) // 2}, got {count}')
  cards = rng.permutation(left)[: 2 * count]
  return np.stack([cards[:count], cards[count:]], axis=1).astype(np.int64)


def river_cards(board) -> np.ndarray:
  """[48, 1] every river card that `board` (4 cards: the turn) leaves: the turn's runouts."""
  if len(board) != 4:
    raise ValueError(f'every river card is dealt on the turn (4 cards), got {len(board)} cards')
  return np.setdiff1d(np.arange(52), np.asarray(board))[:, None].astype(np.int64)


def sample_river_cards(rng: np.random.Generator, board, count: int) -> np.ndarray:
  """[count, 1] distinct river cards of the 48 that `board` (4 cards: the turn) leaves, in card order
  (all 48 when `count` is at least that)."""
  every = river_cards(board)
  if count >= len(every):
    return every
  return np.sort(rng.choice(every[:, 0], count, replace=False))[:, None]


def _river_boards(board, runouts: np.ndarray) -> np.ndarray:
  """[R, 5] `board` and each runout [R, 5 - len(board)]."""
  return np.concatenate([np.broadcast_to(np.asarray(board), (len(runouts), len(board))), runouts], axis=1)


def _at_runouts(leaves: list, board, runouts: np.ndarray) -> nlhe.HandState:
  """Each of `leaves` (one-hand states at the end of their round) on each runout, leaf by leaf: the
  same history, board `board` + the runout; the hole cards are any others (policies are asked with
  given hands). One replay for all of them."""
  count = len(runouts)
  boards = _river_boards(board, runouts)
  holes = np.empty((count, 2, 2), np.int64)
  for r, row in enumerate(boards):
    holes[r] = np.setdiff1d(np.arange(52), row)[:4].reshape(2, 2)
  steps = max(int(leaf.num_actions[0]) for leaf in leaves)
  kinds = np.full((len(leaves), steps), -1)  # -1 pads a shorter history
  amounts = np.zeros((len(leaves), steps), np.int64)
  for k, leaf in enumerate(leaves):
    n = int(leaf.num_actions[0])
    kinds[k, :n], amounts[k, :n] = leaf.history[0, :n, 1], leaf.history[0, :n, 2]
  noise = np.concatenate([leaf.noise for leaf in leaves])
  states = nlhe.initial(
    np.tile(holes, (len(leaves), 1, 1)), np.tile(boards, (len(leaves), 1)), leaves[0].rules,
    np.repeat(noise, count, axis=0),
  )  # fmt: skip
  return nlhe.replay(states, np.repeat(kinds, count, axis=0), np.repeat(amounts, count, axis=0))


def _by_buckets(policy, states: nlhe.HandState) -> tuple | None:
  """The policy's range query by buckets (`range_classes`) for states on any streets, one query per
  street: (real actions [n, A], probabilities [n, K, A] per bucket, zero-padded to the widest
  street's K, each pair's bucket [n, 1,326]); None where the policy does not answer by buckets."""
  classes = getattr(policy, 'range_classes', None)
  if classes is None:
    return None
  streets = [np.flatnonzero(states.street == street) for street in np.unique(states.street)]
  answers = [classes(nlhe.take(states, rows)) for rows in streets]
  if any(answer is None for answer in answers):
    return None
  if len(answers) == 1:
    return answers[0]
  count, width = len(states.street), max(answer[1].shape[1] for answer in answers)
  kind, amount, valid = (np.zeros((count, *x.shape[1:]), x.dtype) for x in answers[0][0])
  probs = np.zeros((count, width, answers[0][1].shape[2]))
  bucket = np.zeros((count, len(HOLES)), np.int64)
  for rows, (actions, p, b) in zip(streets, answers, strict=True):
    kind[rows], amount[rows], valid[rows] = actions
    probs[rows, : p.shape[1]], bucket[rows] = p, b
  return nlhe.ActionSet(kind, amount, valid), probs, bucket


def _expand(policy, states: nlhe.HandState, chooser: int, continuations: int, dtype=np.float32):
  """The terminals of the policy's tree from each of `states` (by breadth): (source [Z] the state
  each came from, final states [Z], reach of the seat that does not choose [Z, 1326], reach of the
  chooser seat under each continuation [Z, C, 1326]).

  Where the policy answers by buckets (`range_classes`: the blueprint's tables) it is asked per
  bucket and each pair reads its bucket's row (what `strategy` answers, `_merged` per row, made
  once per bucket instead of per pair); where moreover every state is on the river the reach too is
  carried per bucket of each state's board, [., K] instead of [., 1326] (the products the same, per
  bucket), and read per pair at the end. The reach of a pair the board blocks is left as it comes
  (the leaf rows keep only the pairs each runout leaves)."""
  count = len(states.street)
  on_river = ((states.street == 3) | states.finished).all()  # (a finished hand is never asked)
  classes = getattr(policy, 'range_classes', None) if on_river else None
  source = np.arange(count)
  plain, chosen = np.ones((count, 1), dtype), np.ones((count, continuations, 1), dtype)  # widened below
  # Per bucket: each pair's column of the reach (a state not yet asked: ones in column 0).
  bucket = np.zeros((count, len(HOLES)), np.int64) if classes is not None else None
  pick = lambda index: None if bucket is None else bucket[index]  # noqa: E731
  done = []
  while len(source):
    over = states.finished
    if over.any():
      ends = np.flatnonzero(over)
      done.append((source[ends], nlhe.take(states, ends), plain[ends], chosen[ends], pick(ends)))
    live = np.flatnonzero(~over)
    if not len(live):
      break
    states, source, plain, chosen, bucket = (
      nlhe.take(states, live),
      source[live],
      plain[live],
      chosen[live],
      pick(live),
    )
    answer = classes(states) if classes is not None else None
    per_pair = None  # in pair mode with a bucket answer: each pair's bucket [n, 1326]
    if answer is None:
      if bucket is not None:  # answered by buckets, now not (a policy at another depth, parted): per pair
        plain, chosen, done = _per_pair_reach(plain, chosen, bucket, done)
      classes = bucket = None
      answer = _by_buckets(policy, states)
      if answer is None:
        actions, probs = hand_ranges.query(policy, states)  # [n, A], [n, 1326, A]
      else:
        actions, probs, per_pair = answer  # [n, A], [n, K, A], [n, 1326]
      width = len(HOLES)
    else:
      actions, probs, bucket = answer  # [n, A], [n, K, A], [n, 1326]
      width = probs.shape[1]
    if plain.shape[1] != width:  # the first query: the width of the reach
      plain = np.broadcast_to(plain, (len(live), width)).astype(dtype)
      chosen = np.broadcast_to(chosen, (len(live), continuations, width)).astype(dtype)
    rows, slots = np.nonzero(actions.valid)  # the children: [m] (state, slot)
    plain, chosen, bucket = plain[rows], chosen[rows], pick(rows)
    mine = states.to_act[rows] == chooser
    theirs = ~mine
    # [m, K or 1326] -> the reach's columns: each pair's bucket's where the answer was by buckets.
    by_pair = lambda values, at: values if per_pair is None else np.take_along_axis(values, per_pair[at], 1)  # noqa: E731, B023
    plain[theirs] *= by_pair(probs[rows[theirs], :, slots[theirs]], rows[theirs])
    if mine.any():  # the chooser's states only: each continuation's probabilities
      own = np.flatnonzero(states.to_act == chooser)
      at = np.zeros(len(states.street), np.int64)
      at[own] = np.arange(len(own))
      own_actions = nlhe.ActionSet(*(x[own] for x in actions))
      for c in range(continuations):
        taken = biased(own_actions, probs[own], at[rows[mine]], slots[mine], c)
        chosen[mine, c] *= by_pair(taken, rows[mine])
    kind, amount = actions.kind[rows, slots], actions.amount[rows, slots]
    states = nlhe.apply(nlhe.take(states, rows), kind, amount)
    source = source[rows]
  parts = list(zip(*done, strict=True))
  # A state that met no decision keeps a column of ones.
  width = len(HOLES) if bucket is None else max(p.shape[-1] for p in parts[2])
  plain = np.concatenate([np.broadcast_to(p, (len(p), width)) for p in parts[2]])
  chosen = np.concatenate([np.broadcast_to(p, (len(p), continuations, width)) for p in parts[3]])
  if bucket is not None:  # per bucket: each pair's bucket's column
    bucket = np.concatenate(parts[4])  # [Z, 1326]
    plain = np.take_along_axis(plain, bucket, axis=1)
    chosen = np.take_along_axis(chosen, bucket[:, None, :], axis=2)
  return np.concatenate(parts[0]), nlhe.concatenate(parts[1]), plain, chosen


def _per_pair_reach(plain, chosen, bucket, done) -> tuple:
  """`_expand`'s reach carried per bucket, read per pair ([., 1,326] by each pair's `bucket` [., 1,326]),
  the terminals found so far alike; a column of ones (no decision met yet) stays one."""

  def pairs(values, buckets):
    if values.shape[-1] == 1:
      return values
    index = buckets if values.ndim == 2 else buckets[:, None, :]
    return np.take_along_axis(values, index, axis=-1)

  kept = [(s, st, pairs(p, b), pairs(c, b), None) for s, st, p, c, b in done]
  return pairs(plain, bucket), pairs(chosen, bucket), kept


@dataclasses.dataclass(frozen=True)
class Runouts:
  """What the leaf values of one board share: the hands, the runouts, per runout which hands it leaves
  and the hands' strengths on its river board; the tables each form of leaf values reads are made
  on first use (`sign` and `weight` by the matrices; `sweep` by the factored leaves)."""

  board: tuple[int, ...]  # the flop (3 cards) or the turn (4)
  hands: np.ndarray  # [H, 2] the pairs the board leaves
  cards: np.ndarray  # [R, 5 - len(board)] the cards still to come: turn and river, or the river
  avoid: np.ndarray  # [R, H] 1 where the hand holds neither runout card
  strength: np.ndarray  # [R, H] int32 each hand's strength on each river board, -1 where blocked
  dtype: type = np.float32  # of the tables and the leaf values built from them

  @functools.cached_property
  def sign(self):
    """jax int8 [R, H, H]: sign(strength i - strength j) on each river board (see `_signs`)."""
    import jax.numpy as jnp  # noqa: PLC0415  (the poker layer's host code imports JAX lazily)

    return _signs(jnp.asarray(self.strength, jnp.int32))

  @functools.cached_property
  def hand_weight(self) -> tuple[float, np.ndarray] | None:
    """On the turn, (c, a [H]): a runout's share of a pair's mean is c a(i) a(j) (see the module's leaf
    values); None on the flop."""
    if len(self.board) != 4:
      return None
    count = len(self.cards)
    blocked = count - self.avoid.sum(0).astype(np.int64)  # [H] n(h): the runouts the hand blocks
    common = int(np.bincount(blocked).argmax())  # d
    return float(count - 2 * common), 1 / np.maximum(count - common - blocked, 1)

  @functools.cached_property
  def weight(self):
    """jax [H, H]: a runout's share of each pair's mean, 0 where the hands share a card (see the
    module's leaf values)."""
    import jax.numpy as jnp  # noqa: PLC0415

    disjoint = showdown.disjoint_pairs(self.hands)
    if self.hand_weight is None:
      share = 1 / np.maximum(self.avoid.T @ self.avoid, 1)
    else:
      scale, per_hand = self.hand_weight
      share = scale * per_hand[:, None] * per_hand[None, :]
    return jnp.asarray(np.where(disjoint, share, 0).astype(self.dtype))

  @functools.cached_property
  def sweep(self) -> showdown.ShowdownTables:
    """The showdown sweep's tables of the river boards (`showdown.showdown_tables`)."""
    return showdown.showdown_tables(self.hands, _river_boards(self.board, self.cards), strength=self.strength)


def runout_tables(board, runout_cards: np.ndarray, dtype=np.float32) -> Runouts:
  """The `Runouts` of `board` (3 or 4 card ids) and the cards to come [R, 5 - len(board)], in `dtype`
  (float64 needs JAX's x64); the device tables are made when a form of leaf values first asks."""
  hands = cards_module.hands(cards_module.FULL_DECK, board)
  runout_cards = np.asarray(runout_cards, np.int64).reshape(len(runout_cards), -1)
  if len(board) not in (3, 4) or len(board) + runout_cards.shape[1] != 5:
    shown = f'a board of {len(board)} cards and runouts of {runout_cards.shape[1]}'
    raise ValueError(f'{shown} do not make a river')
  strength = showdown.strengths(hands, _river_boards(board, runout_cards))  # [R, H], -1 where blocked
  avoid = (strength >= 0).astype(dtype)
  return Runouts(tuple(int(c) for c in board), hands, runout_cards, avoid, strength, dtype)


@functools.cache
def _sign_program():
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  return jax.jit(lambda strength: jnp.sign(strength[:, :, None] - strength[:, None, :]).astype(jnp.int8))


def _signs(strength):
  """jax int8 [R, H, H]: sign(strength i - strength j) per river board, made on the JAX device (a
  hand a runout blocks has no reach there and two hands that share a card are cleared by `disjoint`,
  so neither is masked here)."""
  return _sign_program()(strength)


PAD = 8  # terminals per runout beyond `EXACT` are padded to a multiple of this; the fewest fold rows
EXACT = 16  # up to this many terminals per runout are not padded: a river's blueprint tree has a few
FOLD_PAD = 64  # fold rows up to this are padded to a power of two, more to a multiple of it


@functools.cache
def _leaf_program(chooser_wins: bool):
  """The jitted sum of a leaf's matrices (see `leaf_matrices`): the chooser seat's rows per
  continuation, the other seat's once (the blueprint's, the same in every continuation);
  `chooser_wins`: the chooser is seat 1, whose rows index the matrices' rows (i)."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  def one_continuation(plain, fold_plain, sign, weight, args):
    chosen, fold_chosen = args  # [R, Zp, H], [F, H] (the other seat's: the same shapes)
    one, zero = (chosen, plain) if chooser_wins else (plain, chosen)
    fold_one, fold_zero = (fold_chosen, fold_plain) if chooser_wins else (fold_plain, fold_chosen)
    # A loop over the runouts: on XLA:CPU far faster than one batched product [R, H, H] and a sum;
    # the signs read as int8 (a quarter of float32's bytes) beat signs made in the loop.
    add = lambda r, total: total + (one[r].T @ zero[r]) * sign[r].astype(total.dtype)  # noqa: E731
    showdowns = jax.lax.fori_loop(0, len(sign), add, jnp.zeros_like(weight))
    return (showdowns + fold_one.T @ fold_zero) * weight

  def run(chosen, plain, fold_chosen, fold_plain, sign, weight):
    step = lambda args: one_continuation(plain, fold_plain, sign, weight, args)  # noqa: E731
    return jax.lax.map(step, (chosen, fold_chosen))

  return jax.jit(run)


def _padded(rows: int) -> int:
  """Showdown rows per runout: exact up to `EXACT` (a turn leaf's river tree has a handful, the same
  for every leaf of its kind: padding 9 to 16 would nearly double the products), multiples of `PAD`
  above (a flop leaf's turn and river have about 100, of varying counts: few compiled shapes)."""
  return max(rows, 1) if rows <= EXACT else -(-rows // PAD) * PAD


def _padded_folds(rows: int) -> int:
  """Fold rows: a power of two (at least `PAD`) up to `FOLD_PAD`, multiples of `FOLD_PAD` above. Their
  count runs over all the runouts (hundreds on the turn), so multiples of `PAD` would compile a
  program for nearly every leaf; a power of two would pad 384 to 512."""
  if rows <= FOLD_PAD:
    return max(PAD, 1 << max(rows - 1, 0).bit_length())
  return -(-rows // FOLD_PAD) * FOLD_PAD


def leaf_matrices(policy, leaf: nlhe.HandState, runouts: Runouts, chooser: int, continuations: int = 4):
  """jax [C, H, H] in `runouts.dtype`: for one leaf (`leaf`, one hand at the end of its round, or after a
  called all-in), what seat 1 (tree player 0) holding hand i wins from seat 0 holding hand j over
  the rest of the hand, when seat `chooser` plays continuation c and the other seat the blueprint
  `policy`; the mean over the runouts compatible with both hands (see the module)."""
  return leaves_matrices(policy, [leaf], runouts, chooser, continuations)[0]


def leaves_matrices(policy, leaves: list, runouts: Runouts, chooser: int, continuations: int = 4) -> list:
  """`leaf_matrices` of each of `leaves` (one-hand states), their blueprint trees expanded together
  (one range query per depth for all of them)."""
  return [_dense(runouts, rows) for rows in leaves_rows(policy, leaves, runouts, chooser, continuations)]


@dataclasses.dataclass(frozen=True)
class LeafRows:
  """One leaf's terminals over its runouts, what both forms of its values are made of: the leaf's
  payoff U_c(i, j) = sum over terminals z of one_c[z, i] x zero_c[z, j] x (the showdown sign of i and
  j on z's river board, or 1 at a fold), over the runouts compatible with i and j, where one and
  zero are seat 1's and seat 0's rows (`plain` and `chosen` by the chooser)."""

  chooser: int  # the seat that picks a continuation
  runout: np.ndarray  # [Z] the runout of each terminal
  fold: np.ndarray  # [Z] bool: a fold (else a showdown)
  plain: np.ndarray  # [Z, H] the other seat's reach (the blueprint's), times seat 1's chips won there
  chosen: np.ndarray  # [C, Z, H] the chooser's reach per continuation; both 0 where the runout blocks


def leaves_rows(policy, leaves: list, runouts: Runouts, chooser: int, continuations: int = 4) -> list:
  """The `LeafRows` of each of `leaves` (one-hand states), their blueprint trees expanded together."""
  if not leaves:
    return []
  count = len(runouts.cards)
  states = _at_runouts(leaves, runouts.board, runouts.cards)
  expanded = _expand(policy, states, chooser, continuations, runouts.dtype)
  return [
    _leaf_rows(runouts, chooser, expanded, np.flatnonzero(expanded[0] // count == k))
    for k in range(len(leaves))
  ]


def _leaf_rows(runouts: Runouts, chooser: int, expanded: tuple, rows: np.ndarray) -> LeafRows:
  """One leaf's `LeafRows` from the terminals `rows` of `_expand`'s output `expanded`."""
  source, final, plain, chosen = expanded
  source = source[rows] % len(runouts.cards)
  final = nlhe.take(final, rows)
  dtype = runouts.dtype
  committed = final.committed.astype(dtype)
  folded = final.folded.astype(np.int64)
  # Seat 1's winnings: a fold by seat 0 wins its commitment, by seat 1 loses its own; a showdown wins
  # or loses the (equal) commitment by the sign of the hands.
  amount = np.where(folded == 0, committed[:, 0], np.where(folded == 1, -committed[:, 1], committed[:, 0]))
  pairs = hand_ranges.PAIR_INDEX[runouts.hands[:, 0], runouts.hands[:, 1]]
  mask = runouts.avoid[source]  # [Z, H]
  return LeafRows(
    chooser,
    source,
    folded >= 0,
    (plain[rows][:, pairs] * mask * amount[:, None]).astype(dtype),
    (np.moveaxis(chosen[rows][:, :, pairs], 1, 0) * mask).astype(dtype),
  )


def _layout(runout: np.ndarray, fold: np.ndarray, count: int, pad: int) -> tuple:
  """Terminals `runout` [Z] (-1: a padding row, neither kind), `fold` [Z] laid out as rows: (the
  showdowns by runout [R, M], the folds [F], padded with `pad`; each showdown's (runout, slot): its
  index [S], runout [S], slot [S])."""
  showdowns = np.flatnonzero(~fold & (runout >= 0))
  order = showdowns[np.argsort(runout[showdowns], kind='stable')]
  by_runout = runout[order]
  slot = np.arange(len(order)) - np.searchsorted(by_runout, np.arange(count))[by_runout]
  layout = np.full((count, _padded(int(slot.max(initial=0)) + 1)), pad)
  layout[by_runout, slot] = order
  folds = np.flatnonzero(fold)
  fold_layout = np.full(_padded_folds(len(folds)), pad)
  fold_layout[: len(folds)] = folds
  return layout, fold_layout, (order, by_runout, slot)


def _dense(runouts: Runouts, leaf: LeafRows):
  """One leaf's matrices, jax [C, H, H], from its `LeafRows` (see `leaf_matrices`): showdowns grouped
  by runout, then one jitted loop of products over the runouts. They stay on the JAX device, where
  the solve's products read them (no copy to the host and back)."""
  layout, fold_layout, _ = _layout(leaf.runout, leaf.fold, len(runouts.cards), -1)
  # Padding rows (index -1) read the zero row at the end.
  other = np.concatenate([leaf.plain, np.zeros_like(leaf.plain[:1])])
  own = np.concatenate([leaf.chosen, np.zeros_like(leaf.chosen[:, :1])], 1)
  program = _leaf_program(leaf.chooser == 1)
  return program(
    own[:, layout], other[layout], own[:, fold_layout], other[fold_layout], runouts.sign, runouts.weight
  )


# The factored form: a turn's leaves without H x H matrices.


@dataclasses.dataclass
class FactoredLeaves:
  """The leaves of a turn's round in factored form: each product `U_c @ y` becomes, per terminal, a
  showdown sweep of the other seat's weighted rows on the terminal's river board (O(H) after the
  board's sort, `showdown`) or a fold's compatible mass, then the rows of the side asked. Nothing
  H x H is built, and the swept side is shared by the continuations: the chooser's values of all C
  continuations take one sweep per terminal, the other seat's values the continuations' rows summed
  before theirs.

  The pair weights of the turn (`Runouts.hand_weight`: c a(i) a(j)) factor too: the swept side's
  rows are weighted by a, the side asked by c a.

  `leaves[k]`: the game's terminals of leaf k (one per continuation)."""

  runouts: Runouts
  chooser: int  # the tree player who picks a continuation at each leaf
  leaves: list  # [L] lists of RoundGame terminals, one per continuation (1 after a called all-in)
  continuations: int  # C, the most of any leaf (an all-in leaf's rows are 0 beyond its one)
  arrays: dict  # the program's arguments on the JAX device (see `factored_leaves`)

  def values(self, reach: list, player: int) -> dict:
    """{terminal: tree player 0's payoff product for `player`'s hands}: `U_c @ y` (player 0) or
    `U_c.T @ x` (player 1) at each leaf terminal, as `_Products` gives them. For the player who does
    not choose, a leaf's continuations are only ever summed (the choice is the opponent's): their
    sum is given at the first and 0 at the others."""

    dtype = self.runouts.dtype
    chooser = player == self.chooser
    if chooser:  # the other player's reach at the leaf: the same at every continuation
      weights = np.stack([reach[leaf[0]][1 - player] for leaf in self.leaves])
    else:
      weights = np.zeros((len(self.leaves), self.continuations, self.runouts.hands.shape[0]))
      for k, leaf in enumerate(self.leaves):
        for c, z in enumerate(leaf):
          weights[k, c] = reach[z][self.chooser]
    out = np.asarray(_factored_program(chooser, player == 1)(self.arrays, weights.astype(dtype)), np.float64)
    values = {}
    for k, leaf in enumerate(self.leaves):
      for c, z in enumerate(leaf):
        values[z] = out[k, c] if chooser else (out[k] if c == 0 else np.zeros_like(out[k]))
    return values


BLOCK = 16  # a factored leaf's rows are padded to a multiple of this: its sums are reduces of blocks


def factored_leaves(runouts: Runouts, rows: list, chooser_seat: int, leaves: list) -> FactoredLeaves:
  """The `FactoredLeaves` of a turn round's leaves from their `LeafRows` `rows` (all of one chooser
  seat) and their terminals in the round game `leaves` ([L] lists, one terminal per continuation)."""
  import jax.numpy as jnp  # noqa: PLC0415

  if len(runouts.board) != 4:
    raise ValueError('factored leaves are for the turn (runouts of one card, weights of one factor per hand)')
  dtype = runouts.dtype
  count = len(runouts.cards)
  hands = runouts.hands.shape[0]
  widest = max(len(terminals) for terminals in leaves)
  # Each leaf's rows in whole blocks; a padding row (runout -1) is zeros and neither kind of terminal.
  sizes = [-(-len(r.runout) // BLOCK) * BLOCK for r in rows]
  total = sum(sizes)
  runout = np.full(total, -1)
  fold = np.zeros(total, bool)
  plain = np.zeros((total, hands), dtype)
  chosen = np.zeros((widest, total, hands), dtype)
  at = 0
  for r, size in zip(rows, sizes, strict=True):
    used = slice(at, at + len(r.runout))
    runout[used], fold[used], plain[used] = r.runout, r.fold, r.plain
    chosen[: len(r.chosen), used] = r.chosen
    at += size
  blocks = np.repeat(np.arange(len(rows)), np.array(sizes) // BLOCK)  # [Z / BLOCK] each block's leaf
  # Showdowns grouped by runout [R, M] and folds [F]; padding reads the zero row (index `total`).
  layout, fold_layout, (order, by_runout, slot) = _layout(runout, fold, count, total)
  folds = np.flatnonzero(fold)
  # Where each row's values come out: its (runout, slot) of the showdowns, else after them its place
  # among the folds, else (padding) a zero row after those (a gather, not a scatter: XLA:CPU's
  # scatters are slow).
  position = np.full(total, layout.size + len(fold_layout))
  position[order] = by_runout * layout.shape[1] + slot
  position[folds] = layout.size + np.arange(len(folds))
  scale, per_hand = runouts.hand_weight
  arrays = {
    'tables': showdown._per_board(runouts.sweep),
    'plain': jnp.asarray(plain),
    'chosen': jnp.asarray(chosen),
    'leaf_of': jnp.asarray(np.repeat(blocks, BLOCK)),
    'owner': jnp.asarray((blocks[None, :] == np.arange(len(rows))[:, None]).astype(dtype)),  # [L, Z / BLOCK]
    'layout': jnp.asarray(layout),
    'fold_layout': jnp.asarray(fold_layout),
    'position': jnp.asarray(position),
    'swept_weight': jnp.asarray(per_hand.astype(dtype)),  # [H] a
    'weight': jnp.asarray((scale * per_hand).astype(dtype)),  # [H] c a
    'hands': jnp.asarray(runouts.hands, jnp.int32),
  }
  chooser = 1 - chooser_seat  # tree player 0 is seat 1
  return FactoredLeaves(runouts, chooser, leaves, widest, arrays)


@functools.cache
def _factored_program(chooser: bool, transposed: bool):
  """The jitted products of `FactoredLeaves.values`: for the chooser (`chooser`; weights [L, H], the
  other player's reach at each leaf) [L, C, H], else (weights [L, C, H], the chooser's reach at each
  continuation) [L, H], on tree player 1's hands where `transposed` (the showdown's sign turned)."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  def run(arrays, weights):
    plain, chosen, leaf_of = arrays['plain'], arrays['chosen'], arrays['leaf_of']
    # The swept side's rows [Z, H] (a continuation at a time: faster than one contraction on XLA:CPU).
    if chooser:
      swept = plain * weights[leaf_of]
    else:
      swept = sum(chosen[c] * weights[leaf_of, c] for c in range(len(chosen)))
    swept = jnp.concatenate([swept * arrays['swept_weight'], jnp.zeros_like(swept[:1])])  # [Z + 1, H]
    layout = arrays['layout']  # [R, M]
    count, width = layout.shape

    def sweep(args):
      *board, rows = args
      return showdown.board_difference(*board, rows, transposed=True)

    showdowns = jax.lax.map(sweep, (*arrays['tables'], swept[layout]))  # [R, M, H]
    if transposed:
      showdowns = -showdowns
    card_lists = arrays['tables'][3][0]  # each card's hands (`showdown.card_hands`): any board's
    folds = showdown.compatible_mass(arrays['hands'], swept[arrays['fold_layout']], card_lists)  # [F, H]
    parts = [showdowns.reshape(count * width, -1), folds, jnp.zeros_like(folds[:1])]
    at = jnp.concatenate(parts)[arrays['position']] * arrays['weight']  # [Z, H]

    def by_leaf(rows):  # [Z, H] -> [L, H]: each leaf's blocks reduced, then the blocks' owners
      return arrays['owner'] @ rows.reshape(-1, BLOCK, rows.shape[-1]).sum(1)

    if chooser:
      return jnp.stack([by_leaf(chosen[c] * at) for c in range(len(chosen))], 1)  # [L, C, H]
    return by_leaf(plain * at)  # [L, H]

  return jax.jit(run)


# 2. The round's game.


FOLD = -2  # `RoundGame.matrix` of a fold: scale x the opponent's weight on the hands that share no card
LEAF = -3  # `RoundGame.matrix` of a factored leaf's terminal: its products from `RoundGame.factored`


@dataclasses.dataclass
class RoundGame:
  """A small two-player tree over hands whose terminals are payoff matrices: decision nodes (a tree
  player and children) and terminals (a matrix and a scale), in breadth-first order (parents
  first). Tree player 0's payoff at terminal z between hands i and j is scale[z] x matrices[m[z]][i, j],
  or scale[z] x matrices[m[z]][part[z], i, j] where the matrix is a block of several (a leaf's
  continuations, each part one terminal's); at a fold, m = `FOLD`: scale[z] where i and j share no
  card; player 1's is its negative."""

  player: np.ndarray  # [N] int: the decision's tree player, -1 at terminals
  children: list  # [N] lists of child nodes (empty at terminals)
  matrix: np.ndarray  # [N] int: the terminal's matrix (or `FOLD`), -1 at decisions
  scale: np.ndarray  # [N] float64
  matrices: list  # M arrays [H, H] or blocks [K, H, H], NumPy or jax (float32 from the leaf tables)
  ranges: np.ndarray  # [2, H] float64: tree players' ranges
  hands: np.ndarray  # [H, 2] the hole pairs
  origin: np.ndarray  # [N] int: the `tree.build` node of each row, -1 for a leaf's continuations
  part: np.ndarray | None = None  # [N] int: the terminal's part of its block (-1: a matrix, not a block)
  factored: FactoredLeaves | None = None  # the products of the `LEAF` terminals
  _products: object = dataclasses.field(default=None, repr=False)  # `_Products`, made when first needed

  @property
  def decisions(self) -> np.ndarray:
    return np.flatnonzero(self.player >= 0)

  @property
  def terminals(self) -> np.ndarray:
    return np.flatnonzero(self.player < 0)

  def ready(self) -> RoundGame:
    """The game, once the JAX device has made its leaf matrices (`_dense` dispatches them and returns:
    a timing of the leaf values waits here; the solve's first products wait anyway)."""
    import jax  # noqa: PLC0415

    jax.block_until_ready(self.matrices)
    return self

  def normalizer(self) -> float:
    """The total weight of the deals (pairs of hands that share no card)."""
    return float(self.ranges[0] @ compatible_mass(self.hands, self.ranges[1:])[0])


def compatible_mass(hands: np.ndarray, reach: np.ndarray) -> np.ndarray:
  """[T, H]: the weight of `reach` [T, H] on the hands that share no card with each hand (`hands`
  [H, 2]): the total, less the weight on each of its two cards, plus its own (counted twice)."""
  per_card = np.stack([np.bincount(hands[:, 0], r, 52) + np.bincount(hands[:, 1], r, 52) for r in reach])
  return reach.sum(1, keepdims=True) - per_card[:, hands[:, 0]] - per_card[:, hands[:, 1]] + reach


@functools.cache
def _products_program():
  """The jitted products of `_Products` (one program per shapes and transposition)."""
  import jax  # noqa: PLC0415  (the poker layer's host code imports JAX lazily)
  import jax.numpy as jnp  # noqa: PLC0415

  def run(matrices, reach, transpose):
    out = []
    for matrix, r in zip(matrices, reach, strict=True):
      if matrix.ndim == 3:  # a block: one reach row per part
        out.append(jnp.einsum('cji,cj->ci' if transpose else 'cij,cj->ci', matrix, r))
      else:
        out.append((r @ matrix) if transpose else (r @ matrix.T))
    return jnp.concatenate(out)

  return jax.jit(run, static_argnums=2)


class _Products:
  """`RoundGame`'s matrix products on the JAX device, one program for all terminals: each block
  [K, H, H] one batched product over its parts (a part per terminal), each matrix [H, H] one
  product with the reach of every terminal that uses it. Nothing is stacked or copied: a block
  made on the device is read where it is."""

  def __init__(self, game: RoundGame):
    import jax.numpy as jnp  # noqa: PLC0415

    users = {}
    for z in game.terminals:
      if game.matrix[z] >= 0:
        users.setdefault(int(game.matrix[z]), []).append(int(z))
    self.users = []  # per matrix used: its terminals, by part in a block (-1: a part no terminal uses)
    for m, zs in users.items():
      if game.matrices[m].ndim == 3:
        by_part = np.full(len(game.matrices[m]), -1)
        for z in zs:
          if by_part[game.part[z]] >= 0:
            raise ValueError(f'part {game.part[z]} of block {m} is used by two terminals')
          by_part[game.part[z]] = z
        zs = list(by_part)
      self.users.append(zs)
    self.matrices = [jnp.asarray(game.matrices[m]) for m in users]
    self.dtype = np.result_type(np.float32, *(m.dtype for m in game.matrices))

  def __call__(self, opponent: dict, player: int) -> dict:
    """{terminal: matrix @ opponent reach (player 0) or matrix.T @ it (player 1)}, float64 [H]."""
    if not self.users:
      return {}
    hands = len(next(iter(opponent.values())))
    zero = np.zeros(hands, self.dtype)
    reach = [np.stack([zero if z < 0 else opponent[z] for z in zs]).astype(self.dtype) for zs in self.users]
    out = np.asarray(_products_program()(self.matrices, reach, player == 1), np.float64)
    order = [z for zs in self.users for z in zs]
    return {z: row for z, row in zip(order, out, strict=True) if z >= 0}


def _matching(regret: np.ndarray) -> np.ndarray:
  """Regret matching [A, H] -> strategy (uniform where no regret is positive)."""
  positive = np.maximum(regret, 0)
  total = positive.sum(0, keepdims=True)
  return np.where(total > 0, positive / np.where(total > 0, total, 1), 1 / len(regret))


def _reach(game: RoundGame, policy: dict, ranges: np.ndarray | None = None) -> list:
  """[N] each node's reach [2, H] under `policy` {decision: [A, H]}, from `ranges` [2, H] at the root
  (default: the game's)."""
  reach = [None] * len(game.player)
  reach[0] = (game.ranges if ranges is None else ranges).copy()
  for node in game.decisions:
    p = game.player[node]
    for a, child in enumerate(game.children[node]):
      reach[child] = reach[node].copy()
      reach[child][p] = reach[node][p] * policy[node][a]
  return reach


def _terminal_values(game: RoundGame, reach: list, player: int) -> dict:
  """{terminal: `player`'s counterfactual values [H]}: the scale times the matrix times the opponent's
  reach (player 1: the transpose, negated)."""
  if game._products is None:
    game._products = _Products(game)
  sign = 1.0 if player == 0 else -1.0
  folds = [z for z in game.terminals if game.matrix[z] == FOLD]
  values = {}
  if folds:
    mass = compatible_mass(game.hands, np.stack([reach[z][1 - player] for z in folds]))
    values = {z: sign * game.scale[z] * row for z, row in zip(folds, mass, strict=True)}
  opponent = {z: reach[z][1 - player] for z in game.terminals if game.matrix[z] >= 0}
  products = game._products(opponent, player)
  if game.factored is not None:
    products.update(game.factored.values(reach, player))
  for z, product in products.items():
    values[z] = sign * game.scale[z] * product
  return values


def _values(
  game: RoundGame, policy: dict, reach: list, player: int, best_response: bool = False, terminal=None
):
  """(`player`'s counterfactual values [H] at every node, bottom-up; per own decision the action values
  [A, H]); `terminal`: the terminals' values (`_terminal_values`) where the caller has them."""
  values = dict(_terminal_values(game, reach, player) if terminal is None else terminal)
  actions = {}
  for node in game.decisions[::-1]:
    children = np.stack([values[c] for c in game.children[node]])  # [A, H]
    if game.player[node] != player:
      values[node] = children.sum(0)
    elif best_response:
      values[node] = children.max(0)
    else:
      values[node] = (policy[node] * children).sum(0)
      actions[node] = children
  return values, actions


def evaluate(game: RoundGame, policy: dict) -> tuple[np.ndarray, np.ndarray]:
  """([2] each tree player's value per deal under `policy` {decision: [A, H]}, [2] each one's
  best-response value against the other's part of it)."""
  reach = _reach(game, policy)
  z = game.normalizer()
  values, best = np.zeros(2), np.zeros(2)
  for p in range(2):
    terminal = _terminal_values(game, reach, p)  # the same for both: one set of products
    values[p] = game.ranges[p] @ _values(game, policy, reach, p, terminal=terminal)[0][0] / z
    best[p] = game.ranges[p] @ _values(game, policy, reach, p, True, terminal)[0][0] / z
  return values, best


def exploitability(game: RoundGame, policy: dict) -> float:
  """The mean of the two players' best-response gains per deal (chips)."""
  values, best = evaluate(game, policy)
  return float((best - values).sum() / 2)


@dataclasses.dataclass(frozen=True)
class Gadget:
  """Safe re-solving of a `RoundGame` (Burch, Johanson & Bowling 2014; Moravcik et al. 2016; the river's
  public-tree gadgets are `resolving`'s): before the root the `opponent` (tree player) chooses, hand by
  hand, between entering the round and its alternative, `alternatives` [H], the counterfactual value
  of its best response to the strategy the re-solve replaces (`alternatives`). 'maxmargin' lets it
  pick the hands that gain most over their alternatives, per unit of the player's compatible range,
  so the solve raises the smallest margin over all hands; 'maxmargin-prior' holds it to the game's
  prior range of the opponent part of the time (`resolving.entering`); 'resolve' weighs them by that
  prior and lets each enter or take its alternative. Regret matching with floored regrets (CFR+'s
  rule) solves the gadget, as on the river."""

  kind: str  # one of defaults.GADGETS
  opponent: int  # tree player
  alternatives: np.ndarray  # [H] float64, in the units of the game's counterfactual values

  def __post_init__(self):
    if self.kind not in defaults.GADGETS:
      raise ValueError(f'gadget must be one of {", ".join(defaults.GADGETS)}, got {self.kind!r}')
    if self.opponent not in (0, 1):
      raise ValueError(f"a gadget's opponent is tree player 0 or 1, got {self.opponent!r}")


def alternatives(game: RoundGame, replaced: dict, opponent: int) -> np.ndarray:
  """[H] tree player `opponent`'s counterfactual values at the root of its best response to `replaced`
  {decision: [A, H]} (the strategy a re-solve replaces; where the opponent chooses at a leaf, the best
  response picks its continuation per hand): a re-solve that keeps every hand at or below these is no
  more exploitable in this game than `replaced`."""
  reach = _reach(game, replaced)
  return _values(game, replaced, reach, opponent, best_response=True)[0][0]


def _gadget_masses(game: RoundGame, gadget: Gadget) -> np.ndarray:
  """[H] the player's range on the hands that share no card with each of the opponent's."""
  return compatible_mass(game.hands, game.ranges[1 - gadget.opponent][None])[0]


def solve(
  game: RoundGame,
  iterations: int | None = None,
  deadline: float | None = None,
  min_iterations: int = 1,
  algorithm: str = defaults.ALGORITHM,
  warm: dict | None = None,
  warm_iterations: int = 0,
  after: float = 0.0,
  gadget: Gadget | None = None,
) -> tuple[dict, int]:
  """(average policy {decision: [A, H]}, iterations) of DCFR on `game` (alternating updates), for
  `iterations`, or until the wall clock `deadline` (a `time.perf_counter()` value), at least
  `min_iterations`; `after`: the work the caller does once it returns, in iterations' time (no
  iteration is begun unless that too would end by the deadline). With `warm` ({decision: [A, H]},
  e.g. the blueprint's strategy) the first `warm_iterations` iterations play it instead of regret
  matching (a warm start: their regrets and average are those of `warm`; see
  `solver.subgame_warm_start`); they count in neither the budget nor the returned iterations. With
  `gadget`, safely (`Gadget`): the opponent's reach at the root is the gadget's in every iteration,
  warm ones too; its average is the gadget's mix, not a strategy to play."""
  if algorithm != 'dcfr':
    raise ValueError(f'the depth-limited search solves with dcfr, got {algorithm!r}')
  config = algorithms.get('dcfr').resolve(**defaults.SUBGAME_HYPERPARAMETERS.get('dcfr', {}))
  alpha, beta, gamma = config['alpha'], config['beta'], config['gamma']
  if iterations is None and deadline is None:
    raise ValueError('solve needs iterations or a deadline')
  hands = game.ranges.shape[1]
  regrets = {n: np.zeros((len(game.children[n]), hands)) for n in game.decisions}
  weights = {n: np.zeros_like(r) for n, r in regrets.items()}
  warm_iterations = warm_iterations if warm is not None else 0
  if gadget is not None:
    from jaxcfr.poker.subgame import resolving  # noqa: PLC0415  (the river's rule; it imports JAX)

    gadget_regret, mass = np.zeros((2, hands)), _gadget_masses(game, gadget)
  t = 0
  per_iteration = 0.0
  while iterations is None or t < iterations + warm_iterations:
    if deadline is not None and t >= min_iterations + warm_iterations:
      if time.perf_counter() + (1 + after) * per_iteration > deadline:
        break
    started = time.perf_counter()
    t += 1
    keep = ((t - 1) / t) ** gamma
    if gadget is not None:  # the river's rule (`resolving`), in NumPy
      ranges = game.ranges.copy()
      ranges[gadget.opponent], share = resolving.entering(
        gadget.kind, gadget_regret, game.ranges[gadget.opponent], mass, np
      )
    for player in (0, 1):
      policy = warm if t <= warm_iterations else {n: _matching(r) for n, r in regrets.items()}
      reach = _reach(game, policy, None if gadget is None else ranges)
      if player == 0:  # a player's own reach is the same in both halves: one average update
        for n in game.decisions:
          weights[n] = weights[n] * keep + reach[n][game.player[n]] * policy[n]
      values, actions = _values(game, policy, reach, player)
      if gadget is not None and player == gadget.opponent:
        regret = resolving.gadget_regret(gadget.kind, share, values[0], gadget.alternatives, mass, np)
        gadget_regret = np.maximum(gadget_regret + regret, 0)
      positive, negative = 1 / (1 + t**-alpha), 1 / (1 + t**-beta)
      for n, children in actions.items():
        cumulative = regrets[n] + children - (policy[n] * children).sum(0)
        regrets[n] = cumulative * np.where(cumulative > 0, positive, negative)
    per_iteration = time.perf_counter() - started
  average = {}
  for n, w in weights.items():
    total = w.sum(0, keepdims=True)
    average[n] = np.where(total > 0, w / np.where(total > 0, total, 1), 1 / len(w))
  return average, t - warm_iterations


# 3. The round at a real state.


def round_game(
  nodes: list, ranges: np.ndarray, hands: np.ndarray, pot: int, outcomes: dict, chooser: int, matrices
) -> RoundGame:
  """A `RoundGame` from `tree.build` nodes (with `pot`, the pot when the tree's first round began)
  over `hands` [H, 2]: folds pay what the folder put in; `outcomes[i]` gives each other terminal's
  (index in `matrices`, scale) or (index, scale, part) where that matrix is a block [K, H, H], or a list
  of them for a leaf where tree player `chooser` picks one per hand (a decision with a child per
  entry). `matrices`: NumPy (made at least float32) or jax arrays (kept where they are)."""
  player, children, matrix, scale, origin, part = [], [], [], [], [], []
  index = {}

  def add(who, m=-1, s=0.0, node=-1, p=-1):
    player.append(who), children.append([]), matrix.append(m), scale.append(s), origin.append(node)
    part.append(p)
    return len(player) - 1

  choices = []
  index[0] = add(nodes[0].player, node=0)
  for i, node in enumerate(nodes):  # breadth-first: a parent before its children
    for child in node.children:
      c = nodes[child]
      if c.kind == tree.DECISION:
        index[child] = add(c.player, node=child)
      elif c.kind == tree.FOLD:  # tree player 0 loses what it put in when it folds, else wins player 1's
        sign = -1.0 if c.player == 0 else 1.0
        index[child] = add(-1, FOLD, sign * (pot / 2 + c.added[c.player]), child)
      elif isinstance(outcomes[child], list):
        index[child] = add(chooser, node=child)
        choices.append((index[child], outcomes[child]))
      else:
        m, s, *p = outcomes[child]
        index[child] = add(-1, m, s, child, *p)
      children[index[i]].append(index[child])
  for choice, entries in choices:  # after every tree node, so children still follow their parents
    for m, s, *p in entries:
      children[choice].append(add(-1, m, s, -1, *p))
  return RoundGame(
    np.array(player),
    children,
    np.array(matrix),
    np.array(scale, np.float64),
    [m if hasattr(m, 'devices') else np.asarray(m, np.result_type(m, np.float32)) for m in matrices],
    np.asarray(ranges, np.float64),
    np.asarray(hands),
    np.array(origin),
    np.array(part),
  )


def line_states(state: nlhe.HandState, b: int, nodes: list, targets) -> nlhe.HandState:
  """Hand b after the tree's line from its root (hand b's state) to each node of `targets`, one hand
  per target; the lines are actions only (no chance node on the way)."""
  lines = []
  for node in targets:
    line = []
    while nodes[node].parent >= 0:
      if nodes[nodes[node].parent].kind == tree.CHANCE:
        raise ValueError(f'node {node}: its line deals a card')
      line.append(line_action(nodes[node].label))
      node = nodes[node].parent
    lines.append(line[::-1])
  hands = nlhe.take(state, np.full(len(lines), b))
  for step in range(max(map(len, lines), default=0)):
    live = np.array([step < len(line) for line in lines])
    kind = np.array([line[step][0] if step < len(line) else nlhe.CALL for line in lines])
    amount = np.array([line[step][1] if step < len(line) else 0 for line in lines])
    hands = nlhe.apply(hands, kind, amount, live)
  return hands


def leaf_state(state: nlhe.HandState, b: int, nodes: list, leaf: int) -> nlhe.HandState:
  """Hand b after the tree's line from its root (hand b's state) to node `leaf`, one hand."""
  return line_states(state, b, nodes, [leaf])


class LeafCache:
  """What a search keeps between decisions: the leaf values of recent leaves (matrices, or the rows of
  the factored form), by the leaf's public state (history, visible board, the noise of the actions
  played, the rules), the chooser, the runouts, the continuations and the form, the least recently
  used going once `entries` are held (a flop leaf's four matrices are 22 MB, a turn leaf's 20 MB; its
  rows on 6 river cards about 2 MB: 16 hold a round's leaves, at most 0.35 GB); and the `Runouts` of
  the last `boards` boards (a turn's signs, made for its matrices, are 61 MB)."""

  def __init__(self, entries: int = 16, boards: int = 2):
    self.entries, self.boards = entries, boards
    self._held = Recent(entries)
    self._tables = Recent(boards)

  def runouts(self, board, runout_cards: np.ndarray) -> Runouts:
    """`runout_tables(board, runout_cards)`, kept for the next ask."""
    key = (np.asarray(board, np.int64).tobytes(), np.asarray(runout_cards, np.int64).tobytes())
    return self._tables.get_many([key], lambda _: [runout_tables(board, runout_cards)])[0]

  def matrices(self, policy, leaves: list, runouts: Runouts, chooser: int, continuations: int) -> list:
    """`leaves_matrices(policy, leaves, runouts, chooser, continuations)`, the leaves not held built
    together and kept for the next ask."""
    return self.leaves(policy, leaves, runouts, chooser, continuations, 'dense')

  def leaves(
    self, policy, leaves: list, runouts: Runouts, chooser: int, continuations: int, form: str
  ) -> list:
    """Each leaf's values in `form`: its matrices [C, H, H] ('dense', `leaves_matrices`) or its
    `LeafRows` ('factored', `leaves_rows`); the leaves not held built together and kept."""
    keys, hands = [], {}
    for hand in leaves:
      n = int(hand.num_actions[0])
      key = (
        hand.history[0, :n].tobytes(),
        np.asarray(runouts.board).tobytes(),  # the board dealt so far (the rest are the runouts)
        hand.noise[0, :n].tobytes(),
        hand.rules,
        chooser,
        runouts.cards.tobytes(),
        continuations,
        form,
      )
      keys.append(key)
      hands.setdefault(key, hand)

    def build(missing: list) -> list:
      rows = leaves_rows(policy, [hands[key] for key in missing], runouts, chooser, continuations)
      return [_dense(runouts, r) for r in rows] if form == 'dense' else rows

    return self._held.get_many(keys, build)


FORMS = ('dense', 'factored')  # the leaf values' forms: H x H matrices, or sweeps of the leaves' rows
# A turn round on at most this many river cards takes factored leaves by default, more take matrices:
# the factored products grow with the river cards, the matrices' do not (their building does).
FACTORED_RIVER_CARDS = 24


def search_game(
  policy,
  state: nlhe.HandState,
  b: int,
  tree_config: tree.TreeConfig,
  ranges: np.ndarray,
  runouts: Runouts,
  cache: LeafCache | None = None,
  form: str | None = None,
) -> RoundGame:
  """Hand b's current round, flop or turn (`tree_config`, from `search.subgame_config`; tree player 0
  is seat 1) with the seats' ranges `ranges` [2, 1326], its leaves valued by the blueprint `policy`
  and its continuations on `runouts` (see the module), through `cache` when given; the bot is the
  player to act, its opponent chooses. `form`: the leaf values as matrices ('dense') or factored
  (`FactoredLeaves`, the turn only); by default factored on a turn of at most `FACTORED_RIVER_CARDS`
  river cards (no H x H matrix to build), else matrices."""
  if tree_config.street not in (1, 2):
    raise ValueError(f'a depth-limited search starts on the flop or the turn, street {tree_config.street}')
  if len(runouts.board) != 2 + tree_config.street:
    raise ValueError(f'street {tree_config.street}: runouts of a {len(runouts.board)}-card board')
  if form is None:
    few = tree_config.street == 2 and len(runouts.cards) <= FACTORED_RIVER_CARDS
    form = 'factored' if few else 'dense'
  if form not in FORMS or (form == 'factored' and tree_config.street != 2):
    raise ValueError(f'leaf values {form!r}: dense on either street, or factored on the turn')
  leaf_values = functools.partial((LeafCache(0) if cache is None else cache).leaves, form=form)
  nodes = tree.build(tree_config, first_round_only=True)
  chooser_seat = 1 - int(state.to_act[b])
  leaves = [i for i, node in enumerate(nodes) if node.kind == tree.LEAF]
  lines = line_states(state, b, nodes, leaves)
  hands = {i: nlhe.take(lines, [k]) for k, i in enumerate(leaves)}
  # A called all-in: no decisions are left, one value (the same at equal stakes).
  all_in = {}
  for i in leaves:
    if hands[i].finished[0]:
      all_in.setdefault(tuple(hands[i].committed[0].tolist()), hands[i])
  going_on = [i for i in leaves if not hands[i].finished[0]]
  single = [
    m[0] if form == 'dense' else m
    for m in leaf_values(policy, list(all_in.values()), runouts, chooser_seat, 1)
  ]
  index = {key: k for k, key in enumerate(all_in)}
  continued = leaf_values(policy, [hands[i] for i in going_on], runouts, chooser_seat, len(CONTINUATIONS))
  by_player = np.stack([ranges[1], ranges[0]])[
    :, hand_ranges.PAIR_INDEX[runouts.hands[:, 0], runouts.hands[:, 1]]
  ]
  if form == 'dense':
    matrices = list(single)
    outcomes = {
      i: (index[tuple(hands[i].committed[0].tolist())], 1.0) for i in leaves if hands[i].finished[0]
    }
    for i, block in zip(going_on, continued, strict=True):  # a leaf's continuations: one block
      outcomes[i] = [(len(matrices), 1.0, c) for c in range(len(block))]
      matrices.append(block)
    return round_game(nodes, by_player, runouts.hands, tree_config.pot, outcomes, 1 - chooser_seat, matrices)
  rows = {i: single[index[tuple(hands[i].committed[0].tolist())]] for i in leaves if hands[i].finished[0]}
  rows.update(zip(going_on, continued, strict=True))
  outcomes = {i: (LEAF, 1.0) if hands[i].finished[0] else [(LEAF, 1.0)] * len(CONTINUATIONS) for i in leaves}
  game = round_game(nodes, by_player, runouts.hands, tree_config.pot, outcomes, 1 - chooser_seat, [])
  row = {int(o): r for r, o in enumerate(game.origin) if o >= 0}
  terminals = [game.children[row[i]] or [row[i]] for i in leaves]
  game.factored = factored_leaves(runouts, [rows[i] for i in leaves], chooser_seat, terminals)
  return game
