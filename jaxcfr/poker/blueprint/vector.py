"""Public chance sampling in vector form: every hand at once on each sampled board (the blueprint's
second trainer).

Where `mccfr` samples whole deals (two hole pairs and a board) and walks the tree once per deal, this
trainer samples only the public cards (Johanson, Bard, Lanctot, Gibson and Bowling, AAMAS 2012) and
walks the tree once per board with vectors over the H hole pairs the board leaves, for both players
at once:

- per board (`board_view`): the hands the board leaves, each hand's cell (decision row, its bucket on
  the row's street) at every row, and the showdown sweep's tables (the hands by strength, each card's
  hands by strength: `jaxcfr.poker.subgame.showdown`'s layout, built here on the device since the
  board is sampled inside the program);
- top down (`reaches`), depth by depth: both players' reach `[nodes, H, 2]`, each hand's strategy at
  a row its cell's (regret matching of the `[D, K, A]` table; each edge's probability one gather);
- bottom up (`bottom_up`), depth by depth: the updating player's counterfactual values `[nodes, H]`;
  at a fold the chips times the opponent's weight on the hands that share no card with the hand
  (`showdown.compatible_mass`), at a showdown the stake times the weight it beats minus the weight
  that beats it (`showdown.board_difference`: the native sweep on CPUs, the array form elsewhere),
  card removal included in both; at the player's rows the strategy-weighted sum of the children, at
  the opponent's their plain sum (its reach already weighs its actions); at the player's rows of each
  depth, the instantaneous regrets v(child) - v(row) and the reach-weighted strategies of its hands,
  summed over the hands of each bucket by one deterministic segment sum (`jaxcfr.tree.segment_sum`)
  into the depth's `[rows, K, 2A]`.

Both are weighted by the chance of the hands given the board (each hand 1 / H, each opponent hand
that shares no card with it 1 / H', H' = C(n - b - 2, 2) for n cards in the deck and b on the board)
and averaged over the batch's boards: an update's regret increment is an unbiased estimate of a
full-width CFR iteration's counterfactual regret, and over every board with equal weight it is that
regret exactly (the tests hold it to the history-compiled twin to 1e-9 in float64; the average
increment is the twin's divided by the number of deals).

Updates alternate: player 0's batch of boards under the current regrets, then player 1's (its own
boards) under the regrets player 0's batch left, as `jaxcfr.solvers`' full-width family does (the
cost is the same as updating both at once: each player's values need their own bottom-up pass; only
the top-down pass repeats). The regret rule is one of that family's (`jaxcfr.solvers.regret_rule`),
an update being an iteration; DCFR (alpha 1.5, beta 0, gamma 2) by default: on the short-deck game
of the tests, at 2, 8 and 32 boards per update, it reached the lowest exact exploitability of CFR,
CFR+, linear CFR and DCFR after the same number of updates.

Memory per board: the reaches `[N, H, 2]` over the tree's N nodes, the cells `[D, H]`, and one
depth's `[rows, H, A]` arrays and `[terminals, H]` values at a time; the tables `[D, K, A]` and their
increments come on top (the compiled update's `memory_analysis()` gives the peak). A batch's boards
go `boards_per_step` at a time (vmapped) through a scan that sums their increments, so the live
arrays are those of `boards_per_step` boards. Glossary: D decision rows, K buckets (the largest
street's count), A actions, N nodes, H hands a board leaves, B boards.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from abstractions import hand_rank
from jaxcfr import distributed, solvers, tree
from jaxcfr.poker.blueprint.game import BlueprintGame
from jaxcfr.poker.rules.cards import Deck
from jaxcfr.poker.subgame import showdown
from jaxcfr.protocol import Solver

NAME = 'blueprint-pcs'
RULES = ('cfr', 'cfr+', 'lcfr', 'dcfr')  # the regret rules this trainer takes (jaxcfr.solvers')
DEFAULT_RULE = 'dcfr'


class VectorState(NamedTuple):
  """The trainer's state: `[D, K, A]` tables (as `mccfr.BlueprintState`'s), the regret rule's own
  state and the key the next update consumes."""

  iteration: jax.Array  # [] int32: updates completed (each: B boards per player)
  cumulative_regret: jax.Array  # [D, K, A]
  cumulative_policy: jax.Array  # [D, K, A]: the weighted sum of reach-weighted strategies
  rule_state: Any  # the regret rule's state (leaves [D, K, A]; `()`-like for the rules of RULES)
  key: jax.Array  # [] PRNG key


class Board(NamedTuple):
  """One board as the passes take it: the hands it leaves, their cells and the sweep's tables (one
  board's rows of `showdown.ShowdownTables`, int16)."""

  hands: jax.Array  # int32 [H, 2]: the hole pairs of the deck's cards the board leaves
  cells: jax.Array  # int32 [D, H]: row * K + each hand's bucket on the row's street
  order: jax.Array  # int16 [H]: the hands by increasing strength
  weaker: jax.Array  # int16 [H]: how many hands are strictly weaker than each
  not_stronger: jax.Array  # int16 [H]: how many are not stronger
  card_order: jax.Array  # int16 [52 * K']: each card's K' hands by strength, H pads (K' = n - b - 1)
  card_weaker: jax.Array  # int16 [2 * H]: per hand and card, card * (K' + 1) + its weaker holders
  card_not_stronger: jax.Array  # int16 [2 * H]: the same, + its holders not stronger

  @property
  def tables(self) -> tuple[jax.Array, ...]:
    """The sweep's tables in `showdown.board_difference`'s order."""
    return (self.order, self.weaker, self.not_stronger, self.card_order, self.card_weaker,
            self.card_not_stronger)  # fmt: skip


def legal_cells(game: BlueprintGame) -> jax.Array:
  return game.legal_mask[:, None, :]  # [D, 1, A]


def average_policy(state: VectorState, game: BlueprintGame) -> jax.Array:
  """`[D, K, A]` average strategy (the blueprint); uniform at cells never visited."""
  return solvers.normalize_policy(state.cumulative_policy, legal_cells(game))


def vector_solver(
  batch_size: int | None = None,
  algorithm: str = DEFAULT_RULE,
  boards_per_step: int = 1,
  alpha: float = 1.5,
  beta: float = 0.0,
  gamma: float = 2.0,
  devices: int = 1,
) -> Solver:
  """Public chance sampling in vector form (a `jaxcfr.protocol.Solver` whose game is a
  `BlueprintGame`): `batch_size` boards per player per update (default `boards_per_step` x
  `devices`, one board a device at a time, which trained less exploitable blueprints than 16 at
  every budget measured: docs/benchmarks.md, "The trainer for the budget"), under the regret rule of
  `algorithm` (one of `RULES`; `alpha`, `beta`, `gamma` are DCFR's), `boards_per_step` boards at a
  time on each of `devices` devices (over every process's, `jaxcfr.distributed`).

  The boards come from the state's key whatever the device count; each device sums the increments
  of its share of them and the shares are summed across devices (`psum`), so a different device
  count changes only the order of those sums (the last bits), and the same count gives the same bits
  however many processes hold the devices."""
  if algorithm not in RULES:
    raise ValueError(f'algorithm must be one of {", ".join(RULES)}, got {algorithm!r}')

  def positive(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'{name} must be a positive integer, got {value!r}')

  positive('boards_per_step', boards_per_step)
  positive('devices', devices)
  batch_size = boards_per_step * devices if batch_size is None else batch_size
  positive('batch_size', batch_size)
  if batch_size % (boards_per_step * devices):
    raise ValueError(
      f'batch size {batch_size} must be a multiple of boards_per_step x devices '
      f'({boards_per_step} x {devices})'
    )
  if devices > jax.device_count():
    raise ValueError(f'{devices} devices requested; {jax.device_count()} available ({jax.default_backend()})')
  extra = {'alpha': alpha, 'beta': beta, 'gamma': gamma} if algorithm == 'dcfr' else {}
  rule, power = solvers.regret_rule(algorithm, **extra)
  hyperparameters = dict(batch_size=batch_size, algorithm=algorithm, boards_per_step=boards_per_step, **extra)
  mesh = _mesh(devices) if devices > 1 else None

  def init(game: BlueprintGame, key: jax.Array | None = None) -> VectorState:
    if key is None:
      raise ValueError('the vector trainer draws boards from a key: init(game, jax.random.key(seed))')
    zeros = jnp.zeros((game.num_decisions, game.max_buckets, game.num_actions), game.dtype)
    state = VectorState(jnp.zeros((), jnp.int32), zeros, zeros, rule.init(zeros), key)
    return state if mesh is None else distributed.replicate(state, mesh)  # over every process's devices

  def current_policy(state: VectorState, game: BlueprintGame) -> jax.Array:
    """`[D, K, A]` regret matching of what the rule matches (uniform where none is positive)."""
    matched = rule.matched_regret(state.cumulative_regret, state.rule_state)
    return solvers.regret_matching(matched, legal_cells(game))

  def update(state: VectorState, game: BlueprintGame) -> VectorState:
    key, board_key = jax.random.split(state.key)
    boards = sample_boards(game, board_key, 2 * batch_size).reshape(2, batch_size, -1)
    return step(rule, power, state._replace(key=key), game, boards, boards_per_step, mesh)

  return Solver(init, update, current_policy, average_policy, NAME, hyperparameters)


def step(
  rule, power, state: VectorState, game: BlueprintGame, boards: jax.Array, boards_per_step: int = 1,
  mesh: jax.sharding.Mesh | None = None,
):  # fmt: skip
  """One alternating update on given boards (`[2, B, b]`: player 0's, then player 1's), under the
  regret rule `rule` with averaging power `power` (`jaxcfr.solvers.regret_rule`), the boards split
  over `mesh`'s devices if given; the key is kept.

  Player 0's regrets change first (on its rows only, as the full-width family's alternating update);
  player 1's boards see player 0's new strategy. The average grows by both players' increments,
  after the running discount ((t - 1) / t) ** power.
  """
  t = state.iteration + 1
  dtype = state.cumulative_policy.dtype
  keep = jnp.power((t - 1).astype(dtype) / t.astype(dtype), jnp.asarray(power, dtype))
  legal = legal_cells(game)

  def one_player(player, carry):
    regret, rule_state, average = carry
    policy = solvers.regret_matching(rule.matched_regret(regret, rule_state), legal)
    regret_increment, average_increment = batch_increments(
      game, policy, boards[player], player, boards_per_step, mesh
    )
    new_regret, _, new_rule_state = rule.update(regret, regret_increment, rule_state, t)
    rows = (game.player == player)[:, None, None]  # [D, 1, 1]: the updating player's rows
    regret = jnp.where(rows, new_regret, regret)
    rule_state = jax.tree.map(lambda new, old: jnp.where(rows, new, old), new_rule_state, rule_state)
    return regret, rule_state, average + average_increment

  zeros = jnp.zeros_like(state.cumulative_policy)
  regret, rule_state, increment = jax.lax.fori_loop(
    0, 2, one_player, (state.cumulative_regret, state.rule_state, zeros)
  )
  average = state.cumulative_policy * keep + increment
  return state._replace(
    iteration=t, cumulative_regret=regret, cumulative_policy=average, rule_state=rule_state
  )


def batch_increments(
  game: BlueprintGame, policy: jax.Array, boards: jax.Array, player, boards_per_step: int = 1,
  mesh: jax.sharding.Mesh | None = None,
):  # fmt: skip
  """`(regret increment, average increment)`, `[D, K, A]` each, of `player` under `policy` [D, K, A],
  averaged over `boards` [B, b]: on each of `mesh`'s devices (one device without), a scan over its
  share in groups of `boards_per_step` boards (vmapped within a group), so that what is live is one
  group's arrays; the devices' sums are summed (`psum`). The sums' order is fixed (deterministic)."""
  count = boards.shape[0]
  if mesh is None:
    regret, average = board_sums(game, policy, boards, player, boards_per_step)
  else:
    spec = jax.sharding.PartitionSpec

    def per_device(boards, game, policy, player):
      sums = board_sums(game, policy, boards, player, boards_per_step)
      return jax.tree.map(lambda x: jax.lax.psum(x, 'boards'), sums)

    regret, average = jax.shard_map(
      per_device, mesh=mesh, in_specs=(spec('boards'), spec(), spec(), spec()), out_specs=spec(),
      check_vma=False,
    )(boards, game, policy, player)  # fmt: skip
  return regret / count, average / count


def board_sums(game: BlueprintGame, policy: jax.Array, boards: jax.Array, player, boards_per_step: int):
  """The sums over `boards` [B, b] of `board_increments`, in groups of `boards_per_step` (a scan)."""
  count = boards.shape[0]
  groups = boards.reshape(count // boards_per_step, boards_per_step, boards.shape[-1])

  def group(total, some):
    if boards_per_step == 1:  # unbatched: vmap's batched gathers cost several times the plain ones
      # (so on a CPU one board at a time is the fastest; larger groups are for accelerators)
      regret, average = board_increments(game, policy, some[0], player)
    else:
      regret, average = jax.vmap(lambda board: board_increments(game, policy, board, player))(some)
      regret, average = regret.sum(0), average.sum(0)
    return (total[0] + regret, total[1] + average), None

  zeros = jnp.zeros_like(policy)
  sums, _ = jax.lax.scan(group, (zeros, zeros), groups)
  return sums


def board_increments(game: BlueprintGame, policy: jax.Array, board: jax.Array, player) -> tuple:
  """`(regret increment, average increment)`, `[D, K, A]` each, of `player` (0 or 1, may be traced)
  on one board [b] under `policy` [D, K, A]: per (row, bucket), the sum over the bucket's hands of
  the chance-weighted instantaneous counterfactual regrets, and of the hand's own reach times its
  strategy (times 1 / H, the hand's chance given the board). Zero at the opponent's rows."""
  view = board_view(game, board)
  sums = bottom_up(game, view, policy, reaches(game, policy, view.cells), player)  # [D * K, 2A]
  num_actions = game.num_actions
  return sums[:, :num_actions].reshape(policy.shape), sums[:, num_actions:].reshape(policy.shape)


def _strategies(policy: jax.Array, cells: jax.Array) -> jax.Array:
  """`[n, H, A]`: each hand's strategy at each of n rows, its cell's (`cells` [n, H]) row of `policy`
  [D, K, A]."""
  return tree.gather(policy.reshape(-1, policy.shape[-1]), cells)


def reaches(game: BlueprintGame, policy: jax.Array, cells: jax.Array) -> list[jax.Array]:
  """Top down: per depth, both players' reach `[n + t, H, 2]` of each node (decisions, then
  terminals) and hand, each hand playing its cell's (`cells` [D, H]) strategy of `policy` [D, K, A]
  (chance excluded). Each node takes its parent's reach times, in the acting player's column, the
  probability of its edge, gathered from the table (no `[n, H, A]` array)."""
  num_actions = policy.shape[-1]
  flat = policy.reshape(-1)  # [D * K * A]
  reach = [jnp.ones((1, cells.shape[1], 2), policy.dtype)]
  for level, below in zip(game.levels, game.levels[1:], strict=False):
    n, width = level.size[0], sum(below.size)
    # Each node of the next depth, by its parent's edge (parent * A + slot); absent edges fall off.
    edge = (
      jnp.zeros(width, jnp.int32)
      .at[level.children.reshape(-1)]
      .set(jnp.arange(n * num_actions, dtype=jnp.int32), mode='drop')
    )
    parent, slot = edge // num_actions, edge % num_actions  # [w]
    probability = tree.gather(flat, cells[level.offset + parent] * num_actions + slot[:, None])  # [w, H]
    acting = game.player[level.offset + parent][:, None, None] == jnp.arange(2)  # [w, 1, 2]
    reach.append(tree.gather(reach[-1], parent) * jnp.where(acting, probability[..., None], 1))
  return reach


def bottom_up(game: BlueprintGame, view: Board, policy: jax.Array, reach: list, player) -> jax.Array:
  """Bottom up, depth by depth: `player`'s counterfactual values of every node and hand (the
  opponent's reach of `reach` at the terminals), and at `player`'s rows the chance-weighted
  instantaneous regrets v(child) - v(row) and the reach-weighted strategies, summed per (row,
  bucket) depth by depth (so that no `[D, H, A]` array is live): `[D * K, 2A]` (regrets, then
  strategies)."""
  dtype = policy.dtype
  num_hands, num_actions, num_buckets = view.hands.shape[0], game.num_actions, game.max_buckets
  opponents = math.comb(_remaining(game) - 2, 2)  # H': the opponent's hands that share no card with one
  weight = jnp.asarray([1 / (num_hands * opponents)] * num_actions + [1 / num_hands] * num_actions, dtype)
  sign = jnp.asarray(1 - 2 * player).astype(dtype)  # player 1's fold payoffs are player 0's negated
  values, sums = None, []
  for level, here in zip(reversed(game.levels), reversed(reach), strict=True):
    n, t = level.size
    terminal = jnp.zeros((0, num_hands), dtype)
    if t:  # fold values and showdown values (both players' showdowns alike: stake * (win - lose))
      opponent = jnp.take(here[n:], 1 - player, axis=-1)  # [t, H]
      # By matrix products on every backend: at a depth's thousands of terminals the per-card lists
      # (the subgame solver's choice on CPUs, for a few terminals) cost more in their transposes.
      mass = showdown.compatible_mass(view.hands, opponent)  # [t, H]
      difference = showdown.board_difference(*view.tables, opponent, transposed=True)  # [t, H]
      terminal = sign * level.fold[:, None] * mass + level.stake[:, None] * difference
    if n:
      cells = view.cells[level.offset : level.offset + n]  # [n, H]
      rows = _strategies(policy, cells)  # [n, H, A]
      padded = jnp.concatenate([values, jnp.zeros((1, num_hands), dtype)])
      below = jnp.moveaxis(tree.gather(padded, level.children), 1, 2)  # [n, H, A]
      mine = (game.player[level.offset : level.offset + n] == player)[:, None]  # [n, 1]
      value = jnp.where(mine, (rows * below).sum(-1), below.sum(-1))  # [n, H]
      legal = game.legal_mask[level.offset : level.offset + n, None, :]  # [n, 1, A]
      instant = jnp.where(legal, below - value[..., None], 0)  # [n, H, A]
      own = jnp.take(here[:n], player, axis=-1)[..., None] * rows  # [n, H, A]
      increments = jnp.concatenate([instant, own], -1) * weight  # [n, H, 2A]
      # The depth's cells, counted from its first row; the opponent's rows drop out.
      local = jnp.where(mine, cells - level.offset * num_buckets, n * num_buckets).reshape(-1)
      sums.append(tree.segment_sum(increments.reshape(-1, 2 * num_actions), local, n * num_buckets))
      terminal = jnp.concatenate([value, terminal])
    values = terminal
  return jnp.concatenate(sums[::-1])


def _mesh(devices: int) -> jax.sharding.Mesh:
  return jax.make_mesh(
    (devices,), ('boards',), devices=distributed.mesh_devices(devices),
    axis_types=(jax.sharding.AxisType.Auto,),
  )  # fmt: skip


# Boards.


def _remaining(game: BlueprintGame) -> int:
  """Cards left once a board is dealt: n - b."""
  return game.deck.shape[0] - sum(game.board_cards)


@functools.cache
def hand_layout(remaining: int) -> tuple[np.ndarray, np.ndarray]:
  """The hands of a board by position among the cards it leaves: (pairs int32 [H, 2], i < j in
  lexicographic order; holders int32 [remaining, remaining - 1], each position's hands in order)."""
  pairs = np.array(list(itertools.combinations(range(remaining), 2)), np.int32).reshape(-1, 2)
  holders = np.stack([np.flatnonzero((pairs == i).any(1)) for i in range(remaining)]).astype(np.int32)
  return pairs, holders


def sample_boards(game: BlueprintGame, key: jax.Array, count: int) -> jax.Array:
  """`count` uniform boards: int32 [B, b], distinct cards of the deck (each street's in any order); the
  same boards from the same key whether or not 64-bit types are enabled (float32 draws)."""
  cards = sum(game.board_cards)
  draws = jax.random.uniform(key, (count, game.deck.shape[0]), jnp.float32)
  order = jnp.argsort(draws, axis=-1)[:, :cards]
  return game.deck[order].astype(jnp.int32)


def all_boards(deck: Deck, board_cards: tuple[int, ...]) -> np.ndarray:
  """Every board of a deck, each once: int32 [R, b], each street's new cards a set (small decks)."""
  counts = [c for c in board_cards if c]

  def boards(cards, counts):
    if not counts:
      yield ()
      return
    for head in itertools.combinations(cards, counts[0]):
      yield from (head + tail for tail in boards([c for c in cards if c not in head], counts[1:]))

  return np.array(list(boards([int(c) for c in deck.cards], counts)), np.int32)


def board_view(game: BlueprintGame, board: jax.Array) -> Board:
  """The hands `board` [b] leaves, their cells and the sweep's tables, on the device (jittable)."""
  remaining = _remaining(game)
  pairs, holders = hand_layout(remaining)
  left = game.deck[jnp.flatnonzero(~jnp.isin(game.deck, board), size=remaining)].astype(jnp.int32)  # [n - b]
  hands = left[pairs]  # [H, 2]
  boards = jnp.broadcast_to(board, (hands.shape[0], board.shape[0]))
  buckets = game.buckets.buckets_of(hands, boards)[:, : game.num_streets].astype(jnp.int32)  # [H, S]
  cells = jnp.arange(game.num_decisions, dtype=jnp.int32)[:, None] * game.max_buckets + buckets.T[game.street]
  strength = hand_rank(jnp.concatenate([hands, boards], axis=-1))  # [H]
  return Board(hands, cells, *sweep_tables(hands, strength, left, holders))


def sweep_tables(hands: jax.Array, strength: jax.Array, left: jax.Array, holders: np.ndarray) -> tuple:
  """`showdown.showdown_tables`' rows for one board, as array code: the hands [H, 2] (every one of
  them left by the board), their strengths [H], the cards left [n - b] and each one's hands
  (`hand_layout`)."""
  num_hands, width = hands.shape[0], holders.shape[1]
  order = jnp.argsort(strength, stable=True)
  ranked = strength[order]
  weaker = jnp.searchsorted(ranked, strength, side='left')
  not_stronger = jnp.searchsorted(ranked, strength, side='right')
  # Each card's hands (none for the board's cards and those not in the deck), by strength.
  card_hands = jnp.full((52, width), num_hands, jnp.int32).at[left].set(jnp.asarray(holders))
  padded = jnp.concatenate([strength, jnp.full((1,), jnp.iinfo(jnp.int32).max, strength.dtype)])
  card_strength = padded[card_hands]  # [52, K']: padding sorts last
  by_strength = jnp.argsort(card_strength, axis=1, stable=True)
  card_order = jnp.take_along_axis(card_hands, by_strength, axis=1)
  sorted_card = jnp.take_along_axis(card_strength, by_strength, axis=1)
  own = sorted_card[hands]  # [H, 2, K']: the sorted strengths of each of the hand's cards' hands
  base = hands * (width + 1)
  card_weaker = base + (own < strength[:, None, None]).sum(-1)
  card_not_stronger = base + (own <= strength[:, None, None]).sum(-1)
  index = showdown.INDEX
  return (order.astype(index), weaker.astype(index), not_stronger.astype(index),
          card_order.reshape(-1).astype(index), card_weaker.reshape(-1).astype(index),
          card_not_stronger.reshape(-1).astype(index))  # fmt: skip
