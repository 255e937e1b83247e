"""The abstract game of the blueprint: the betting tree, a deck, and a bucket function.

An information set is (betting node, the acting player's bucket on the node's street): imperfect
recall, as Pluribus's blueprint. A deal fixes every card (two hole pairs and the whole board), so the
tree has no chance nodes and a traversal is a pass over the tree's depths for a batch of deals.

Bucket functions have `buckets` (bucket counts per street), `fingerprint` (a string) and
`buckets_of(hole [..., 2], board [..., n]) -> int32 [..., streets]`, jittable, their arrays pytree
leaves: the tables of `jaxcfr abstract` (`abstractions.load(dir)`, 4 streets of the 52-card deck), or
`LosslessBuckets` (one bucket per (hole, visible board), for the small exact games of the tests).

The game is parameterised by rules (blinds, stacks), deck, board cards per street (their count is
the number of betting rounds), bet abstraction and bucket function. Glossary: D decision nodes,
K buckets (the largest street's count), A actions, B deals, S streets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from abstractions import hand_rank
from abstractions.betting import BetAbstraction, NoLimitRules
from jaxcfr.games.base import CHANCE_PLAYER, TERMINAL_PLAYER
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.rules.cards import FULL_DECK, Deck

HOLDEM_BOARD = (0, 3, 1, 1)  # board cards dealt at the start of each street


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class LosslessBuckets:
  """One bucket per (hole pair, board cards seen) of a short deck: a perfect-recall abstraction.

  The bucket on street s is a mixed-radix number of the combination indices (within the deck) of
  the hole pair and of each street's new board cards up to s, so it tells every deal apart.
  """

  position: jax.Array  # int32 [52]: each card's position in the deck (0 for cards not in it)
  binomial: jax.Array  # int32 [n + 1, 6]: C(i, k)
  board_cards: tuple[int, ...] = dataclasses.field(metadata={'static': True})
  buckets: tuple[int, ...] = dataclasses.field(metadata={'static': True})
  fingerprint: str = dataclasses.field(metadata={'static': True})

  def buckets_of(self, hole: jax.Array, board: jax.Array) -> jax.Array:
    """int32 [..., S] of hole [..., 2] and board [..., sum(board_cards)]."""
    hole, board = jnp.asarray(hole), jnp.asarray(board)
    out, code, start = [], self._combination(hole), 0
    for street, count in enumerate(self.board_cards):
      if count:
        radix = math.comb(self.binomial.shape[0] - 1, count)
        code = code * radix + self._combination(board[..., start : start + count])
        start += count
      out.append(code)
      del street
    return jnp.stack(out, axis=-1).astype(jnp.int32)

  def _combination(self, cards: jax.Array) -> jax.Array:
    """Colex index of a set of cards among the deck's k-subsets: sum_i C(p_i, i + 1), p sorted."""
    positions = jnp.sort(self.position[cards.astype(jnp.int32)], axis=-1)
    return sum(self.binomial[positions[..., i], i + 1] for i in range(cards.shape[-1]))


def lossless_buckets(deck: Deck, board_cards: tuple[int, ...]) -> LosslessBuckets:
  """The lossless bucket function of a short deck (sizes grow as binomials: small decks only)."""
  n = deck.size
  position = np.zeros(52, np.int32)
  position[deck.cards] = np.arange(n)
  binomial = np.array([[math.comb(i, k) for k in range(6)] for i in range(n + 1)], np.int32)
  sizes, size = [], math.comb(n, 2)
  for count in board_cards:
    size *= math.comb(n, count) if count else 1
    sizes.append(size)
  name = f'lossless(deck={deck.num_ranks}x{deck.num_suits},board={list(board_cards)})'
  return LosslessBuckets(jnp.asarray(position), jnp.asarray(binomial), tuple(board_cards), tuple(sizes), name)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Level:
  """One depth of the tree for the traversal: its decision nodes (rows `offset` to `offset + n`, as
  the tree numbers them), then its terminals. Children index the next depth's nodes in the tree's
  order (decisions, then terminals); `n_next` (absent) reads a zero."""

  children: jax.Array  # int32 [n, A]: position in the next depth, n_next where absent
  parent: jax.Array  # int32 [n]: the parent's position among the previous depth's decisions
  fold: jax.Array  # [t]: player 0's payoff at each fold terminal (0 at showdowns)
  stake: jax.Array  # [t]: player 0 wins stake * sign(rank0 - rank1) at each showdown (0 at folds)
  offset: int = dataclasses.field(metadata={'static': True})  # the first decision row of the depth
  size: tuple[int, int] = dataclasses.field(metadata={'static': True})  # (decisions n, terminals t)


@dataclasses.dataclass(frozen=True)
class Twin:
  """The abstract game compiled history by history (`jaxcfr.compile_game`), for exact evaluation: each
  of its infosets is a (decision row, bucket) pair; its action ids are the tree's slots."""

  game: object  # CompiledGame
  cell: jax.Array  # int32 [I]: row * K + bucket of each infoset


jax.tree_util.register_dataclass(Twin, data_fields=['game', 'cell'], meta_fields=[])


@dataclasses.dataclass(frozen=True)
class BlueprintGame:
  """The abstract game on the device (a pytree; sizes static): what the blueprint solver takes."""

  levels: tuple[Level, ...]
  legal_mask: jax.Array  # bool [D, A]
  player: jax.Array  # int32 [D]: who acts at each decision row
  street: jax.Array  # int32 [D]
  parent: jax.Array  # int32 [D]: the parent's decision row (0 at the root)
  slot: jax.Array  # int32 [D]: the parent's action slot that leads here
  deck: jax.Array  # int32 [n]: the deck's card ids
  buckets: object  # a bucket function (see the module docstring)
  twin: Twin | None  # for exact evaluation (small games only)
  num_buckets: tuple[int, ...]  # [S] buckets per street
  board_cards: tuple[int, ...]  # [S]
  name: str
  fingerprint: str
  num_players = 2

  @property
  def num_decisions(self) -> int:
    return self.legal_mask.shape[0]

  @property
  def num_actions(self) -> int:
    return self.legal_mask.shape[1]

  @property
  def max_buckets(self) -> int:
    return max(self.num_buckets)

  @property
  def num_streets(self) -> int:
    return len(self.board_cards)

  @property
  def dtype(self):
    return self.levels[-1].fold.dtype

  @property
  def info(self):
    return SimpleNamespace(fingerprint=self.fingerprint, name=self.name)

  @property
  def num_infosets(self) -> int:
    return self.num_decisions * self.max_buckets

  @property
  def num_histories(self) -> int:
    return sum(sum(level.size) for level in self.levels)

  def evaluate_profile(self, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(NashConv, [2] values) of a `[D, K, A]` policy, exactly, on the compiled twin (`jaxcfr.train`
    calls this); only for games built with `exact=True`."""
    from jaxcfr import evaluation  # noqa: PLC0415

    if self.twin is None:
      raise ValueError(f'{self.name} has no exact evaluation (build it with exact=True, small games only)')
    twin_policy = twin_policy_of(self, policy)
    values = evaluation.expected_values(self.twin.game, twin_policy)
    return (evaluation.best_response_values(self.twin.game, twin_policy) - values).sum(), values


jax.tree_util.register_dataclass(
  BlueprintGame,
  data_fields=['levels', 'legal_mask', 'player', 'street', 'parent', 'slot', 'deck', 'buckets', 'twin'],
  meta_fields=['num_buckets', 'board_cards', 'name', 'fingerprint'],
)


def twin_policy_of(game: BlueprintGame, policy: jax.Array) -> jax.Array:
  """`[I, A]` policy of the twin from a `[D, K, A]` policy (its rows at each infoset's cell)."""
  flat = policy.reshape(-1, policy.shape[-1])
  return flat[game.twin.cell].astype(game.twin.game.dtype)


def make_game(
  bets: BetAbstraction | str,
  buckets,
  *,
  rules: NoLimitRules = tree_lib.ACPC,
  deck: Deck = FULL_DECK,
  board_cards: tuple[int, ...] = HOLDEM_BOARD,
  dtype=jnp.float32,
  exact: bool = False,
  tree: tree_lib.BettingTree | None = None,
) -> BlueprintGame:
  """The abstract game: `bets` (a `BetAbstraction` or a preset's name) under `rules`, a deal of two
  hole pairs and `board_cards` per street from `deck`, and the bucket function `buckets` (needs a
  count for each street). With `exact`, the game also carries its history-compiled twin, so that
  `jaxcfr.train` measures exact exploitability (small decks only)."""
  board_cards = tuple(int(c) for c in board_cards)
  num_streets = len(board_cards)
  if not 1 <= num_streets <= 4 or any(c < 0 for c in board_cards) or sum(board_cards) not in (3, 4, 5):
    raise ValueError(f'board_cards needs 1 to 4 streets and 3 to 5 board cards in all, got {board_cards}')
  if 4 + sum(board_cards) > deck.size:
    raise ValueError(f'{deck} has too few cards for two hole pairs and {sum(board_cards)} board cards')
  sizes = tuple(int(k) for k in buckets.buckets)
  if len(sizes) < num_streets:
    raise ValueError(f'the bucket function has {len(sizes)} streets; the game has {num_streets}')
  if tree is None:
    tree = tree_lib.build_tree(bets, rules, num_streets)
  elif tree.num_streets != num_streets:
    raise ValueError(f'the tree has {tree.num_streets} streets; the game has {num_streets}')
  sizes = sizes[:num_streets]
  fingerprint = hashlib.sha256(
    json.dumps([tree.fingerprint(), str(deck), board_cards, sizes, buckets.fingerprint]).encode()
  ).hexdigest()[:16]
  name = f'blueprint(nodes={tree.num_nodes},buckets={"/".join(map(str, sizes))})'
  game = BlueprintGame(
    levels=_levels(tree, dtype),
    legal_mask=jnp.asarray(tree.legal),
    player=jnp.asarray(tree.player[tree.decisions], jnp.int32),
    street=jnp.asarray(tree.street[tree.decisions], jnp.int32),
    parent=jnp.asarray(np.maximum(tree.decision[np.maximum(tree.parent[tree.decisions], 0)], 0), jnp.int32),
    slot=jnp.asarray(np.maximum(tree.parent_slot[tree.decisions], 0), jnp.int32),
    deck=jnp.asarray(deck.cards),
    buckets=buckets,
    twin=None,
    num_buckets=sizes,
    board_cards=board_cards,
    name=name,
    fingerprint=fingerprint,
  )
  if exact:
    game = dataclasses.replace(game, twin=compile_twin(game, tree, deck, dtype))
  return game


def _levels(tree: tree_lib.BettingTree, dtype) -> tuple[Level, ...]:
  """Per depth, the children and parents of its decision nodes and the payoffs of its terminals."""
  fold, stake = tree_lib.utility(tree)
  levels = []
  for d in range(tree.num_depths):
    start, n = tree.depth_offsets[d], tree.depth_decisions[d]
    nodes = np.arange(start, tree.depth_offsets[d + 1])
    decisions, terminals = nodes[:n], nodes[n:]
    if d + 1 < tree.num_depths:
      below, width = tree.depth_offsets[d + 1], tree.depth_offsets[d + 2] - tree.depth_offsets[d + 1]
      children = np.where(tree.children[decisions] >= 0, tree.children[decisions] - below, width)
    else:
      children = np.zeros((n, tree.num_actions), np.int64)
    parent = tree.parent[decisions] - (tree.depth_offsets[d - 1] if d else 0)
    levels.append(
      Level(
        children=jnp.asarray(children, jnp.int32),
        parent=jnp.asarray(np.maximum(parent, 0), jnp.int32),
        fold=jnp.asarray(fold[terminals], dtype),
        stake=jnp.asarray(stake[terminals], dtype),
        offset=int(tree.decision[decisions[0]]) if n else tree.num_decisions,
        size=(int(n), len(terminals)),
      )
    )
  return tuple(levels)


def deal(game: BlueprintGame, key: jax.Array, batch: int) -> tuple[jax.Array, jax.Array]:
  """`batch` uniform deals: (hole int32 [B, 2, 2], board int32 [B, sum(board_cards)]), distinct cards."""
  cards = 4 + sum(game.board_cards)
  order = jnp.argsort(jax.random.uniform(key, (batch, game.deck.shape[0])), axis=-1)[:, :cards]
  dealt = game.deck[order]
  return dealt[:, :4].reshape(batch, 2, 2), dealt[:, 4:]


def deal_buckets(game: BlueprintGame, hole: jax.Array, board: jax.Array) -> jax.Array:
  """Both players' buckets on every street of each deal: int32 [B, 2, S], one batched lookup."""
  boards = jnp.broadcast_to(board[:, None, :], (*hole.shape[:2], board.shape[-1]))
  return game.buckets.buckets_of(hole, boards)[..., : game.num_streets].astype(jnp.int32)


def showdown(hole: jax.Array, board: jax.Array) -> jax.Array:
  """sign(rank of player 0 - rank of player 1) of each deal on the whole board: int32 [B]."""
  cards = jnp.concatenate([hole, jnp.broadcast_to(board[:, None, :], (*hole.shape[:2], board.shape[-1]))], -1)
  ranks = hand_rank(cards)  # [B, 2]
  return jnp.sign(ranks[:, 0] - ranks[:, 1]).astype(jnp.int32)


# The history-compiled twin (exact evaluation of small games).


class _TwinGame:
  """The abstract game in jaxcfr's game protocol: one chance node deals every card (uniformly over
  ordered hole pairs and per-street board sets), then the betting tree; an infoset is
  'row:bucket'."""

  def __init__(self, tree, deals, buckets, outcomes):
    self.tree, self.deals, self.buckets, self.outcomes = tree, deals, buckets, outcomes
    self.fold, self.stake = tree_lib.utility(tree)

  def num_players(self):
    return 2

  def num_distinct_actions(self):
    return self.tree.num_actions

  def information_state_tensor_size(self):
    return 0

  def new_initial_state(self):
    return _TwinState(self, -1, 0)

  def __str__(self):
    return f'blueprint twin ({len(self.deals)} deals, {self.tree.num_nodes} nodes)'


class _TwinState:
  def __init__(self, game: _TwinGame, deal: int, node: int):
    self.game, self.deal, self.node = game, deal, node

  def current_player(self):
    if self.deal < 0:
      return CHANCE_PLAYER
    player = int(self.game.tree.player[self.node])
    return player if player >= 0 else TERMINAL_PLAYER

  def is_chance_node(self):
    return self.deal < 0

  def is_terminal(self):
    return self.deal >= 0 and self.game.tree.player[self.node] < 0

  def legal_actions(self):
    if self.deal < 0:
      return list(range(len(self.game.deals)))
    row = self.game.tree.decision[self.node]
    return [int(a) for a in np.flatnonzero(self.game.tree.legal[row])]

  def chance_outcomes(self):
    p = 1.0 / len(self.game.deals)
    return [(i, p) for i in range(len(self.game.deals))]

  def child(self, action):
    if self.deal < 0:
      return _TwinState(self.game, action, 0)
    return _TwinState(self.game, self.deal, int(self.game.tree.children[self.node, action]))

  def returns(self):
    if not self.is_terminal():
      return [0.0, 0.0]
    u = self.game.fold[self.node] + self.game.stake[self.node] * self.game.outcomes[self.deal]
    return [float(u), float(-u)]

  def information_state_string(self, player):
    tree = self.game.tree
    bucket = self.game.buckets[self.deal, player, tree.street[self.node]]
    return f'{tree.decision[self.node]}:{bucket}'


def all_deals(deck: Deck, board_cards: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
  """Every deal of a deck, equally likely: (hole int32 [M, 2, 2], board int32 [M, sum(board_cards)]);
  hole pairs are ordered between the players, each street's new board cards are a set."""
  cards = [int(c) for c in deck.cards]
  holes, boards = [], []
  for first in itertools.combinations(cards, 2):
    for second in itertools.combinations([c for c in cards if c not in first], 2):
      rest = [c for c in cards if c not in first + second]
      for board in _boards(rest, [c for c in board_cards if c]):
        holes.append((first, second))
        boards.append(board)
  return np.array(holes, np.int32), np.array(boards, np.int32)


def _boards(cards: list[int], counts: list[int]):
  if not counts:
    yield ()
    return
  for head in itertools.combinations(cards, counts[0]):
    for tail in _boards([c for c in cards if c not in head], counts[1:]):
      yield head + tail


def compile_twin(game: BlueprintGame, tree: tree_lib.BettingTree, deck: Deck, dtype=jnp.float32) -> Twin:
  """The twin of a small game (every deal enumerated), compiled, with its infosets' cells."""
  from jaxcfr.compiler import compile_game  # noqa: PLC0415

  hole, board = all_deals(deck, game.board_cards)
  buckets = np.asarray(jax.jit(deal_buckets)(game, jnp.asarray(hole), jnp.asarray(board)))
  outcomes = np.asarray(jax.jit(showdown)(jnp.asarray(hole), jnp.asarray(board)))
  compiled = compile_game(_TwinGame(tree, hole, buckets, outcomes), dtype=dtype, max_histories=None)
  cells = []
  for key in compiled.infoset_keys:
    row, bucket = (int(x) for x in key.split(':'))
    cells.append(row * game.max_buckets + bucket)
  return Twin(compiled, jnp.asarray(np.array(cells, np.int32)))
