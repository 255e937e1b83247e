"""The public-tree hold'em subgame (`jaxcfr.poker.subgame`) against independent references:
OpenSpiel's `universal_poker` (`tests/oracles/poker_oracle.py`) for trees, values, best responses and
solved values; NumPy brute force over hand pairs for showdowns, card removal and folds; and the
invariants a zero-sum subgame keeps (chip conservation, symmetry, batching)."""

import functools
import os
import shutil
import threading
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcfr
from abstractions import HOLES, hand_rank
from jaxcfr.poker.rules import cards
from jaxcfr.poker.subgame import blocked, native, showdown
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import solver as solver_module
from jaxcfr.poker.subgame.solver import decision_rows, subgame_solver
from jaxcfr.poker.subgame.tree import CHANCE, DECISION, FOLD, SHOWDOWN, TreeConfig, street_sizes

LETTERS = 'fcpa'  # the oracle's action ids 0..3: fold, check/call, pot, all-in
RIVER_DECK = cards.Deck(6, 4)  # 2..7, four suits
TURN_DECK = cards.Deck(5, 3)  # 2..6, suits c d h
RIVER_BOARD = '7c6c4c4d2h'  # a paired board with a flush out
TURN_BOARD = '6c5d3c2h'
FLOP_DECK = cards.Deck(4, 3)  # 2..5, suits c d h
FLOP_BOARD = '5c4d2h'
# A turn tree on the 6x4 deck with sizes other than fcpa (one compiled program for several tests).
SIZED_TURN = TreeConfig(2, 60, 200, (street_sizes('50%,a', '2x'),) * 3, deck_size=RIVER_DECK.size)
# street -> (deck, config): the full deck and the default sizing (60%, e, a; raises 2.5x) on the river.
INVARIANT_TREES = {3: (cards.FULL_DECK, TreeConfig(3, 100, 250)), 2: (RIVER_DECK, SIZED_TURN)}
HOLE_INDEX = {tuple(pair): index for index, pair in enumerate(HOLES.tolist())}


@pytest.fixture(scope='module')
def oracle():
  pytest.importorskip('pyspiel')
  import poker_oracle  # noqa: PLC0415

  return poker_oracle


def fcpa_config(street: int, pot: int, stack: int, deck: cards.Deck) -> TreeConfig:
  """Our tree with universal_poker's fcpa betting: pot-size bets and raises and all-in."""
  sizes = street_sizes('100%,a', '100%,a')
  return TreeConfig(street, pot, stack, (sizes,) * 3, force_all_in=0.0, deck_size=deck.size)


def no_bets_config(street: int, pot: int, deck: cards.Deck = cards.FULL_DECK) -> TreeConfig:
  sizes = street_sizes('', '')
  return TreeConfig(street, pot, 100, (sizes,) * 3, deck_size=deck.size)


def random_ranges(seed: int, keep: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
  """Two [1326] non-uniform ranges with about 1 - `keep` of the hands at zero."""
  rng = np.random.default_rng(seed)
  return tuple(rng.random(len(HOLES)) * (rng.random(len(HOLES)) < keep) for _ in range(2))


def random_policy(game: subgame.Subgame, seed: int) -> jax.Array:
  """[D, A, H] a random (Dirichlet-like) behaviour policy over each row's legal actions."""
  legal = np.asarray(game.tree.legal)
  weights = np.random.default_rng(seed).random(
    (game.tree.num_decisions, game.tree.num_actions, game.num_hands)
  )
  weights = np.where(legal, weights**3, 0)
  return jnp.asarray(weights / weights.sum(1, keepdims=True))


def uniform_policy(game: subgame.Subgame) -> jax.Array:
  legal = np.asarray(game.tree.legal, np.float64)
  policy = np.broadcast_to(legal / legal.sum(1, keepdims=True), legal.shape[:2] + (game.num_hands,))
  return jnp.asarray(policy)


@jax.jit
def _evaluation(game, policy):
  return subgame.expected_values(game, policy), subgame.best_response_values(game, policy)


def evaluation(game, policy) -> tuple[np.ndarray, np.ndarray]:
  """(expected values [2], best-response values [2]): one compiled program per tree shape, shared
  by the tests (compiling dominates their time)."""
  return tuple(np.asarray(x) for x in _evaluation(game, policy))


def values(game, policy) -> np.ndarray:
  return evaluation(game, policy)[0]


_hand_rank = jax.jit(hand_rank)


# Our tree in the oracle's terms.


def letter(config: TreeConfig, nodes, child: int) -> str:
  """The fcpa letter of the action into `child` ('/' for a deal): a bet or raise is 'p' where it
  raises to universal_poker's pot raise (also when that is exactly all-in), else 'a' (all-in)."""
  node = nodes[child]
  if node.label.startswith('deal'):
    return '/'
  if node.label == 'fold':
    return 'f'
  if node.label in ('check', 'call'):
    return 'c'
  parent = nodes[node.parent]
  actor, half = parent.player, config.pot // 2
  spent = [half + chips for chips in parent.added]
  pot_raise = 2 * max(spent) - spent[actor] + sum(spent)
  to = half + node.added[actor]
  if to == pot_raise:
    return 'p'
  assert to == half + config.stack, f'{node.label!r} is neither the pot raise ({pot_raise}) nor all-in'
  assert node.label.startswith('all-in'), node.label
  return 'a'


def bettings(tree: subgame.PublicTree) -> list[str]:
  """Per node: its betting line as the oracle writes it ('fcpa' letters, '/' for a deal)."""
  nodes, config = tree.info.nodes, tree.info.config
  out = [''] * len(nodes)
  for i in range(1, len(nodes)):  # breadth-first: parents first
    out[i] = out[nodes[i].parent] + letter(config, nodes, i)
  return out


def dealt_cards(tree: subgame.PublicTree, spot: subgame.Spot, node: int) -> tuple[int, ...]:
  remaining = np.asarray(spot.remaining)
  return tuple(sorted(int(remaining[k]) for k in tree.info.nodes[node].dealt))


def our_betting_tree(tree: subgame.PublicTree) -> dict[str, tuple[str, tuple[int, int]]]:
  """{betting: (kind, contributions)} as `poker_oracle.betting_tree` (chance nodes left out);
  the subtrees of every deal must agree, as the oracle's tree shows one deal."""
  nodes, half = tree.info.nodes, tree.info.config.pot // 2
  out = {}
  for node, betting in zip(nodes, bettings(tree), strict=True):
    if node.kind == CHANCE:
      continue
    kind = {DECISION: f'p{node.player}', FOLD: 'fold', SHOWDOWN: 'showdown'}[node.kind]
    entry = (kind, tuple(half + int(chips) for chips in node.added))
    assert out.setdefault(betting, entry) == entry, f'deals disagree at {betting!r}'
  return out


def behaviour(betting: str, dealt: tuple[int, ...], hole: int, legal: str) -> np.ndarray:
  """A fixed, far from uniform policy: weights over the fcpa ids from a hash of the betting, the
  cards dealt since the start and the hole pair (HOLES position); zero on illegal actions."""
  seed = zlib.crc32(f'{betting}|{dealt}|{hole}'.encode())
  weights = np.random.default_rng(seed).random(4) ** 3
  return np.array([weights[i] if LETTERS[i] in legal else 0.0 for i in range(4)])


def our_policy(game: subgame.Subgame, function) -> jax.Array:
  """[D, A, H] from function(betting, dealt cards, hole index, legal letters) -> [4] weights."""
  tree = game.tree
  lines = bettings(tree)
  holes = [HOLE_INDEX[tuple(pair)] for pair in np.asarray(game.spot.hands).tolist()]
  policy = np.zeros((tree.num_decisions, tree.num_actions, game.num_hands))
  for row, node in enumerate(tree.info.decisions):
    children = tree.info.nodes[node].children
    legal = ''.join(lines[c][-1] for c in children)
    dealt = dealt_cards(tree, game.spot, node)
    for h, hole in enumerate(holes):
      weights = function(lines[node], dealt, int(hole), legal)
      policy[row, : len(children), h] = [weights[LETTERS.index(x)] for x in legal]
  return jnp.asarray(policy / policy.sum(1, keepdims=True))


def oracle_legal(oracle, spot) -> dict[str, str]:
  """betting -> the legal letters there, read from the oracle's own betting tree."""
  lines = [betting for betting, kind, _ in oracle.betting_tree(spot)]
  return {
    betting: ''.join(x for x in LETTERS if any(other.startswith(betting + x) for other in lines))
    for betting, kind, _ in oracle.betting_tree(spot)
    if kind in ('p0', 'p1')
  }


def oracle_policy(oracle, spot, compiled, function) -> np.ndarray:
  legal = oracle_legal(oracle, spot)

  def row(info):
    dealt = tuple(sorted(set(info.board) - set(spot.board)))
    return function(info.betting, dealt, info.hole_index, legal[info.betting])

  return oracle.policy_array(compiled, spot, row)


def transported(game: subgame.Subgame, policy: jax.Array):
  """Our policy [D, A, H] as a function for `oracle_policy` (by betting, dealt cards, hole)."""
  policy = np.asarray(policy)
  lines = bettings(game.tree)
  rows = {}
  for row, node in enumerate(game.tree.info.decisions):
    children = game.tree.info.nodes[node].children
    rows[lines[node], dealt_cards(game.tree, game.spot, node)] = (
      row,
      ''.join(lines[c][-1] for c in children),
    )
  position = {HOLE_INDEX[tuple(pair)]: h for h, pair in enumerate(np.asarray(game.spot.hands).tolist())}

  def function(betting, dealt, hole, legal):
    row, letters = rows[betting, dealt]
    h = position[hole]
    weights = np.zeros(4)
    for a, x in enumerate(letters):
      weights[LETTERS.index(x)] = policy[row, a, h]
    return weights

  return function


@functools.cache
def oracle_spot(street: int, stack: int, seed: int):
  """(our subgame, the oracle's spot, the spot compiled) of a river spot on the 6x4 deck, a turn
  spot on the 5x3 deck or a flop spot on the 4x3 deck, pot 100, fcpa betting; built once per
  test session."""
  import poker_oracle as oracle  # noqa: PLC0415

  deck, text = {3: (RIVER_DECK, RIVER_BOARD), 2: (TURN_DECK, TURN_BOARD), 1: (FLOP_DECK, FLOP_BOARD)}[street]
  board = cards.parse_board(text, deck)
  ranges = random_ranges(seed, keep=0.5 if street == 3 else 0.6)
  game = subgame.build_subgame(fcpa_config(street, 100, stack, deck), board, ranges, deck, jnp.float64)
  spot = oracle.universal_poker_spot(deck.num_ranks, deck.num_suits, board, 100, stack, ranges)
  return game, spot, jaxcfr.compile_game(_OrderedSpot(spot) if street == 1 else spot, dtype=jnp.float64)


class _Ordered:
  """A state of a spot whose information-state string also tells the order the board cards came
  in. universal_poker writes the board sorted, so on a flop spot the turn card X then river Y and
  Y then X share infosets (a player forgets which card came on the turn: imperfect recall); the
  public tree keeps them apart, as a player who remembers the turn does. The card ids go inside
  the betting field, where `parse_information_state` reads only 'c', 'f' and 'rN'."""

  def __init__(self, state, dealt: str = ''):
    self.state, self.dealt = state, dealt

  def __getattr__(self, name):
    return getattr(self.state, name)

  def child(self, action: int):
    dealt = self.dealt
    if self.state.is_chance_node() and hasattr(self.state, 'action_to_string'):
      dealt += f' #{cards.parse_card(self.state.action_to_string(action).split("Deal ")[1])}'
    return _Ordered(self.state.child(action), dealt)

  def information_state_string(self, player: int) -> str:
    return self.state.information_state_string(player)[:-1] + self.dealt + ']'


class _OrderedSpot:
  def __init__(self, spot):
    self.spot = spot

  def __getattr__(self, name):
    if name == 'spot':  # not set yet (the compiler's pickle round trip): no endless recursion
      raise AttributeError(name)
    return getattr(self.spot, name)

  def new_initial_state(self):
    return _Ordered(self.spot.new_initial_state())


def assert_same_evaluation(oracle, game, spot, compiled, ours, theirs):
  """Our values and best responses of `ours` equal the oracle's of `theirs` (the same policy)."""
  expected = oracle.evaluate(compiled, theirs)
  value, best = evaluation(game, ours)
  np.testing.assert_allclose(value, expected['values'], rtol=0, atol=1e-6)
  np.testing.assert_allclose(best, expected['best_responses'], rtol=0, atol=1e-6)
  assert (best - value).sum() == pytest.approx(expected['nash_conv'], abs=1e-6)
  assert (best - value).sum() / 2 == pytest.approx(expected['exploitability'], abs=1e-6)
  return expected


# 1-2. The oracle: trees, values and best responses of fixed policies.


@pytest.mark.parametrize('stack', [300, 1000])
def test_river_matches_the_oracle(oracle, stack):
  game, spot, compiled = oracle_spot(3, stack, seed=1)
  theirs = oracle.betting_tree(spot)
  assert len({betting for betting, _, _ in theirs}) == len(theirs)
  assert our_betting_tree(game.tree) == {betting: (kind, spent) for betting, kind, spent in theirs}
  if stack == 1000:  # deep: a raise and a re-raise before the all-in
    assert {'pp', 'ppa', 'cppa'} <= {betting for betting, _, _ in theirs}
  ours = our_policy(game, behaviour)
  theirs = oracle_policy(oracle, spot, compiled, behaviour)
  expected = assert_same_evaluation(oracle, game, spot, compiled, ours, theirs)
  assert_same_evaluation(oracle, game, spot, compiled, uniform_policy(game), oracle.uniform_policy(compiled))
  if stack == 300:  # what `jaxcfr.train` reports
    nash_conv, profile_values = jax.jit(subgame.Subgame.evaluate_profile)(game, ours)
    assert float(nash_conv) == pytest.approx(expected['nash_conv'], abs=1e-6)
    np.testing.assert_allclose(profile_values, expected['values'], rtol=0, atol=1e-6)


@pytest.mark.parametrize('street', [2, pytest.param(1, marks=pytest.mark.slow)], ids=['turn', 'flop'])
def test_turn_and_flop_match_the_oracle(oracle, street):
  game, spot, compiled = oracle_spot(street, 300 if street == 2 else 100, seed=2)
  theirs = oracle.betting_tree(spot)
  assert our_betting_tree(game.tree) == {betting: (kind, spent) for betting, kind, spent in theirs}
  ours = our_policy(game, behaviour)
  assert_same_evaluation(oracle, game, spot, compiled, ours, oracle_policy(oracle, spot, compiled, behaviour))
  assert_same_evaluation(oracle, game, spot, compiled, uniform_policy(game), oracle.uniform_policy(compiled))


def test_a_flop_in_blocks_over_the_ranges_hands_matches_the_oracle(oracle):
  """The layout a flop spot is solved in (turn cards in blocks, river cards in blocks inside them,
  each player's edges over that player's range only): the solver's own check (`evaluate_average` of
  the state's average weights) gives OpenSpiel's values, best responses and NashConv of the same
  policy, to 1e-6, and the policy goes through the state's layout and back unchanged on each
  player's hands."""
  game, spot, compiled = oracle_spot(1, 100, seed=2)
  board = cards.parse_board(FLOP_BOARD, FLOP_DECK)
  config = fcpa_config(1, 100, 100, FLOP_DECK)
  narrow = subgame.build_subgame(
    config, board, random_ranges(2, keep=0.6), FLOP_DECK, jnp.float64, blocks=True, range_hands=True,
    per_player=True,
  )  # fmt: skip
  assert isinstance(narrow.blocks.forest, blocked.Blocks)  # nested: turn cards, then river cards
  assert 0 < narrow.num_hands < game.num_hands
  ours = our_policy(narrow, behaviour)
  weights = solver_module.rows_to_state(narrow, ours)
  # Each player's rows keep that player's hands: OOP's the first H0, IP's the last H1.
  (oop, ip), hands = narrow.spot.hand_split, narrow.num_hands
  assert oop < hands and ip < hands
  player = np.asarray(narrow.tree.decision_player)[:, None, None]
  index = np.arange(hands)[None, None]
  kept = np.asarray(narrow.tree.legal) & np.where(player == 0, index < oop, index >= hands - ip)
  np.testing.assert_allclose(
    np.where(kept, solver_module.state_to_rows(narrow, weights), 0), np.where(kept, ours, 0), atol=1e-12
  )
  expected = oracle.evaluate(compiled, oracle_policy(oracle, spot, compiled, behaviour))
  nash_conv, values = jax.jit(solver_module.evaluate_average)(weights, narrow)
  np.testing.assert_allclose(values, expected['values'], rtol=0, atol=1e-6)
  assert float(nash_conv) == pytest.approx(expected['nash_conv'], abs=1e-6)
  assert expected['nash_conv'] > 0.1  # far from an equilibrium: the check could fail


# 3. Solved values.


@functools.cache
def _solve(algorithm: str):
  solver = subgame_solver(algorithm)
  return solver, jax.jit(lambda state, game, n: jaxcfr.run(solver, state, game, n))


def solve(game: subgame.Subgame, algorithm: str, iterations: int) -> jax.Array:
  solver, run = _solve(algorithm)
  return solver.average_policy(run(solver.init(game), game, iterations), game)


@pytest.mark.parametrize('street', [3, pytest.param(2, marks=pytest.mark.slow)])
def test_solved_values_match_the_oracle(oracle, street):
  game, spot, compiled = oracle_spot(street, 300, seed=1 if street == 3 else 2)
  average = solve(game, 'dcfr', 500)
  value, best = evaluation(game, average)
  exploitability = (best - value).sum() / 2
  assert exploitability < 0.005 * spot.pot
  solved = oracle.oracle_values(spot, iterations=1000, compiled=compiled)
  assert solved['solved_exploitability'] < 0.005 * spot.pot
  assert value[0] == pytest.approx(solved['solved_value'], abs=0.01 * spot.pot)
  # Our average policy, played in OpenSpiel's tree: the same values and exploitability.
  carried = oracle_policy(oracle, spot, compiled, transported(game, average))
  assert_same_evaluation(oracle, game, spot, compiled, average, carried)


# 4. Brute force over hand pairs.


def brute_strengths(hands: np.ndarray, boards: np.ndarray) -> np.ndarray:
  """[R, H] hand_rank of each hand with each river board, -1 where they share a card."""
  seven = np.concatenate(
    [
      np.broadcast_to(hands, (len(boards),) + hands.shape),
      np.broadcast_to(boards[:, None], (len(boards), len(hands), 5)),
    ],
    axis=-1,
  )
  blocked = (hands[None, :, :, None] == boards[:, None, None, :]).any((-1, -2))
  seven = np.where(blocked[..., None], np.arange(7), seven)  # any distinct cards
  return np.where(blocked, -1, np.asarray(_hand_rank(jnp.asarray(seven, jnp.int32))))


def disjoint(hands: np.ndarray) -> np.ndarray:
  """[H, H] whether two hole pairs share no card."""
  return ~(hands[:, None, :, None] == hands[None, :, None, :]).any((-1, -2))


@pytest.fixture(params=['native', 'arrays'])
def sweep(request, monkeypatch):
  """The two forms of the showdown sweep: the native CPU kernel (which must build where a C++ compiler
  is found) and the array form (`showdown.prefix_difference`)."""
  if request.param == 'native':
    if shutil.which(os.environ.get('CXX') or 'c++') is None:
      pytest.skip('no C++ compiler: the native kernel cannot be built here')
    assert native.available(jnp.float64) and native.available(jnp.float32)
  else:
    monkeypatch.setattr(native, 'available', lambda dtype=None: False)
  return request.param


# `_prefix_rows`' two ways; 9: the kernel's whole and partial tiles
@pytest.mark.parametrize('columns', [2, 9, showdown.NARROW + 8])
@pytest.mark.parametrize('deck', [cards.FULL_DECK, RIVER_DECK], ids=['52', '6x4'])
def test_showdown_difference_and_compatible_mass_by_brute_force(deck, columns, sweep):
  rng = np.random.default_rng(deck.size)
  turn = tuple(int(c) for c in rng.choice(deck.cards, 4, replace=False))
  hands = cards.hands(deck, turn)
  rivers = rng.choice([c for c in deck.cards if c not in turn], 3, replace=False)
  boards = np.array([list(turn) + [int(r)] for r in rivers], np.int32)
  reach = rng.random((len(boards), len(hands), columns)) * (rng.random((len(boards), len(hands), 1)) < 0.7)
  blocked = (hands[None] == boards[:, None, None, 4]).any(-1)  # [R, H]: hands holding the river
  reach[blocked] = 0  # as in a tree, where the deal removes them
  strength = brute_strengths(hands, boards)
  pairs = disjoint(hands)
  sign = np.sign(strength[:, :, None] - strength[:, None, :]) * pairs  # [R, H, H]
  expected = np.einsum('rhg,rgm->rhm', sign, reach)
  tables = showdown.showdown_tables(hands, boards)
  # Fresh functions: jit's cache would otherwise serve the other form's program.
  got = np.asarray(jax.jit(lambda t, r: showdown.showdown_difference(t, r))(tables, jnp.asarray(reach)))
  np.testing.assert_allclose(got[~blocked], expected[~blocked], rtol=0, atol=1e-9)
  per_board = showdown._per_board(tables)  # the boards as a batch axis (vmap), as a turn tree's loop has
  batched = jax.jit(jax.vmap(lambda *a: showdown.board_difference(*a)))
  got = np.asarray(batched(*per_board, jnp.asarray(reach)))
  np.testing.assert_allclose(got[~blocked], expected[~blocked], rtol=0, atol=1e-9)
  single = jnp.asarray(reach, jnp.float32)  # float32, the solvers' dtype: rounding of sums of the mass
  got = np.asarray(jax.jit(lambda t, r: showdown.showdown_difference(t, r))(tables, single))
  rounding = 16 * np.finfo(np.float32).eps * reach.sum(1).max()
  np.testing.assert_allclose(got[~blocked], expected[~blocked], rtol=0, atol=rounding)
  flat = reach.transpose(0, 2, 1).reshape(-1, len(hands))  # [T, H]
  for per_card in (None, showdown.card_hands(tables)):  # the matrix products, the gathers
    mass = np.asarray(jax.jit(showdown.compatible_mass)(jnp.asarray(hands), jnp.asarray(flat), per_card))
    np.testing.assert_allclose(mass, flat @ pairs.T, rtol=0, atol=1e-9)


def test_the_native_kernel_steps_aside_when_it_cannot_serve(tmp_path, monkeypatch):
  """`JAXCFR_NO_NATIVE` turns it off; a compiler that fails leaves one warning, no library and no
  temporary file behind (the showdowns then take the array form)."""
  monkeypatch.setenv(native.OFF_ENV, '1')
  assert not native.available(jnp.float32)
  monkeypatch.delenv(native.OFF_ENV)
  folder = tmp_path / 'native'
  monkeypatch.setenv(native.DIRECTORY_ENV, str(folder))
  monkeypatch.setenv('CXX', shutil.which('false') or 'false')
  with pytest.warns(UserWarning, match='did not build'):
    assert native._library() is None
  assert os.listdir(folder) == []


def test_a_second_build_into_the_folder_waits_for_the_first(tmp_path):
  """Builds into one folder take its lock in turn (each process then finds the other's library)."""
  pytest.importorskip('fcntl')
  entered = threading.Event()

  def second():
    with native._locked(str(tmp_path)):
      entered.set()

  with native._locked(str(tmp_path)):
    waiting = threading.Thread(target=second, daemon=True)  # a lock that never frees fails, not hangs
    waiting.start()
    assert not entered.wait(0.3)
  assert entered.wait(10)
  waiting.join()
  assert os.listdir(tmp_path) == []


def test_the_native_kernel_refuses_tables_that_would_send_it_astray():
  """Hand positions out of range, or a group of equal strength that does not end after its hand
  (the walk would stand still): an error from the call, never a crash or a hang."""
  if not native.available(jnp.float64):
    pytest.skip('no native kernel here')
  hands = cards.hands(cards.FULL_DECK, (0, 5, 10, 15))
  tables = showdown.showdown_tables(hands, np.array([[0, 5, 10, 15, 20]], np.int32))
  per_board = [table[0] for table in showdown._per_board(tables)]
  reach = jnp.ones((3, len(hands)), jnp.float64)
  difference = jax.jit(lambda *a: native.board_difference(*a))
  assert np.isfinite(np.asarray(difference(*per_board[:5], reach))).all()
  broken_tables = (
    (0, per_board[0].at[3].set(len(hands)), 'out of range'),  # a hand that is not there
    (2, jnp.zeros_like(per_board[2]), 'out of range'),
    (2, jnp.ones_like(per_board[2]), 'out of order'),  # every group ending at the first hand
  )
  for position, broken, message in broken_tables:
    tables_now = list(per_board[:5])
    tables_now[position] = broken
    with pytest.raises(Exception, match=message):
      jax.block_until_ready(difference(*tables_now, reach))


def test_fold_values_by_brute_force():
  """Each fold node's counterfactual values: the folder's loss against the opponent's reach along
  the line (their actions and the dealt cards), over the hole pairs that share no card."""
  deck, config = RIVER_DECK, SIZED_TURN
  board = cards.parse_board('7c5d4c2h', deck)
  game = subgame.build_subgame(config, board, random_ranges(3), deck, jnp.float64)
  policy = random_policy(game, 4)
  tree, nodes = game.tree, game.tree.info.nodes
  hands, remaining = np.asarray(game.spot.hands), np.asarray(game.spot.remaining)
  ranges, table = np.asarray(game.spot.ranges), np.asarray(policy)
  row_of = {node: row for row, node in enumerate(tree.info.decisions)}
  depth = [0] * len(nodes)
  for i in range(1, len(nodes)):
    depth[i] = depth[nodes[i].parent] + 1
  folds = sorted((i for i, n in enumerate(nodes) if n.kind == FOLD), key=lambda i: (depth[i], i))
  pairs = disjoint(hands)
  fold_values = jax.jit(
    lambda game, policy, player: subgame.terminal_values(
      game, subgame.reach_probabilities(game, policy), player
    )[0],
    static_argnums=2,
  )
  for player in range(2):
    got = np.asarray(fold_values(game, policy, player))
    assert got.shape == (len(folds), len(hands))
    for f, i in enumerate(folds):
      opponent, own = ranges[1 - player].copy(), np.ones(len(hands))
      node = i
      while nodes[node].parent >= 0:
        parent = nodes[node].parent
        if nodes[parent].kind == DECISION and nodes[parent].player == 1 - player:
          opponent *= table[row_of[parent], nodes[node].slot]
        elif nodes[parent].kind == CHANCE:
          holds = (hands == remaining[nodes[node].dealt[-1]]).any(1)
          opponent[holds], own[holds] = 0, 0
        node = parent
      folder = nodes[i].player
      amount = config.pot / 2 + nodes[i].added[folder]
      expected = (amount if folder != player else -amount) * (pairs @ opponent) * own
      np.testing.assert_allclose(got[f], expected, rtol=0, atol=1e-9, err_msg=f'fold {tree.info.line(i)}')


# 5. Invariants.


@pytest.mark.parametrize('street', [3, 2])
def test_values_sum_to_zero(street):
  deck, config = INVARIANT_TREES[street]
  board = cards.parse_board('Td9d6hQc3s' if street == 3 else '7c5d4c2h', deck)
  game = subgame.build_subgame(config, board, random_ranges(street), deck, jnp.float64)
  for seed in range(3):
    value, best = evaluation(game, random_policy(game, seed))
    assert abs(value[0]) > 1e-3
    assert value.sum() == pytest.approx(0, abs=1e-9)
    assert (best >= value - 1e-9).all()


def one_hand(text: str) -> np.ndarray:
  weights = np.zeros(len(HOLES))
  low, high = sorted(cards.parse_cards(text))
  weights[HOLE_INDEX[low, high]] = 1
  return weights


def test_one_hand_each_river_check_down_is_the_equity():
  rng = np.random.default_rng(5)
  config = no_bets_config(3, 100)
  tree = subgame.build_tree(config, jnp.float64)
  assert [n.label for n in tree.info.nodes] == ['', 'check', 'check']
  policy = jnp.ones((tree.num_decisions, tree.num_actions, 1081))
  outcomes = set()
  for _ in range(12):
    dealt = [int(c) for c in rng.choice(52, 9, replace=False)]
    board, first, second = dealt[:5], dealt[5:7], dealt[7:]
    text = lambda pair: ''.join(cards.card_text(c) for c in pair)
    spot = subgame.make_spot(tree, board, (one_hand(text(first)), one_hand(text(second))), dtype=jnp.float64)
    strength = [int(_hand_rank(jnp.asarray(pair + board))) for pair in (first, second)]
    equity = 0.5 * (1 + np.sign(strength[0] - strength[1]))
    outcomes.add(equity)
    value = values(subgame.Subgame(tree, spot), policy)
    np.testing.assert_allclose(value, [50 * (2 * equity - 1), -50 * (2 * equity - 1)], rtol=0, atol=1e-9)
  assert outcomes >= {0.0, 1.0}


@pytest.mark.parametrize(
  'deck', [pytest.param(cards.FULL_DECK, marks=pytest.mark.slow), RIVER_DECK], ids=['52', '6x4']
)
def test_turn_check_down_is_the_equity_over_the_river_cards(deck):
  """Checked down from the turn: the range-vs-range equity over every river card, enumerated."""
  rng = np.random.default_rng(deck.size + 1)
  board = tuple(int(c) for c in rng.choice(deck.cards, 4, replace=False))
  hands = cards.hands(deck, board)
  if deck.size == 52:  # one hand each
    picks = rng.choice(len(hands), 2, replace=False)
    while not disjoint(hands[picks])[0, 1]:
      picks = rng.choice(len(hands), 2, replace=False)
    ranges = np.zeros((2, len(HOLES)))
    for p, h in enumerate(picks):
      ranges[p, HOLE_INDEX[tuple(hands[h].tolist())]] = 1
  else:
    ranges = np.stack(random_ranges(21))
  game = subgame.build_subgame(no_bets_config(2, 80, deck), board, ranges, deck, jnp.float64)
  value = values(game, uniform_policy(game))
  weights = np.asarray(game.spot.ranges)
  rivers = np.array([c for c in deck.cards if c not in board])
  strength = brute_strengths(hands, np.array([list(board) + [r] for r in rivers]))  # [C, H]
  pairs = disjoint(hands)
  total, mass = 0.0, 0.0
  for h0 in np.flatnonzero(weights[0]):
    for h1 in np.flatnonzero(weights[1] * pairs[h0]):
      free = (strength[:, h0] >= 0) & (strength[:, h1] >= 0)
      win = np.sign(strength[free, h0] - strength[free, h1]).mean()
      total += weights[0, h0] * weights[1, h1] * 40 * win
      mass += weights[0, h0] * weights[1, h1]
  assert value[0] == pytest.approx(total / mass, abs=1e-9)
  assert value.sum() == pytest.approx(0, abs=1e-9)


def test_swapping_the_ranges_negates_the_river_check_down():
  deck = cards.FULL_DECK
  tree = subgame.build_tree(no_bets_config(3, 100), jnp.float64)
  board = cards.parse_board('Ah9h6s6d2c')
  first, second = random_ranges(8)
  policy = jnp.ones((tree.num_decisions, tree.num_actions, len(cards.hands(deck, board))))
  forward = values(
    subgame.Subgame(tree, subgame.make_spot(tree, board, (first, second), deck, jnp.float64)), policy
  )
  back = values(
    subgame.Subgame(tree, subgame.make_spot(tree, board, (second, first), deck, jnp.float64)), policy
  )
  assert abs(forward[0]) > 0.1
  np.testing.assert_allclose(back, -forward, rtol=0, atol=1e-9)
  np.testing.assert_allclose(back[::-1], forward, rtol=0, atol=1e-9)


# 6. Batching.


@pytest.mark.parametrize('street', [3, 2])
def test_vmap_over_spots_equals_a_loop(street):
  deck, config = INVARIANT_TREES[street]
  tree = subgame.build_tree(config, jnp.float64)
  rng = np.random.default_rng(street)
  spots = []
  for seed in range(3):
    board = tuple(int(c) for c in rng.choice(deck.cards, 5 if street == 3 else 4, replace=False))
    spots.append(subgame.make_spot(tree, board, random_ranges(30 + seed), deck, jnp.float64))
  game = subgame.Subgame(tree, spots[0])
  policy = random_policy(game, 9)
  batch = jax.tree.map(lambda *x: jnp.stack(x), *spots)
  batched = jax.jit(
    jax.vmap(lambda spot: subgame.expected_values(subgame.Subgame(tree, spot), policy), in_axes=0)
  )(batch)
  looped = np.stack([values(subgame.Subgame(tree, spot), policy) for spot in spots])
  assert np.ptp(looped[:, 0]) > 1e-3  # the spots differ
  np.testing.assert_allclose(batched, looped, rtol=0, atol=1e-9)


@pytest.mark.slow  # the default suite's minutes; padded trees solve alike in test_poker_solver, test_search
def test_padding_to_an_envelope_keeps_every_value_and_shares_one_program():
  deck, config = INVARIANT_TREES[2]
  configs = [TreeConfig(2, 60, stack, config.sizes, deck_size=deck.size) for stack in (40, 200)]
  shape = subgame.envelope(configs)
  board = tuple(int(c) for c in deck.cards[:4])
  padded_trees = [subgame.build_tree(c, jnp.float64, shape) for c in configs]
  assert len({tree.info for tree in padded_trees}) == 1  # one shape: one compiled program
  assert len({subgame.build_tree(c, jnp.float64).info for c in configs}) == 2
  for c, padded in zip(configs, padded_trees, strict=True):
    plain = subgame.build_tree(c, jnp.float64)
    assert padded.num_decisions >= plain.num_decisions
    ranges = random_ranges(5)
    games = [
      subgame.Subgame(t, subgame.make_spot(t, board, ranges, deck, jnp.float64)) for t in (plain, padded)
    ]
    rows = [r for r, i in enumerate(padded.info.decisions) if i >= 0]
    assert [padded.info.decisions[r] for r in rows] == plain.info.decisions
    # The same behaviour policy on the real rows: the same values and best responses.
    policy = np.asarray(random_policy(games[0], 2))
    wide = np.asarray(uniform_policy(games[1])).copy()
    wide[rows, : policy.shape[1]] = policy
    np.testing.assert_allclose(
      evaluation(games[1], jnp.asarray(wide)), evaluation(games[0], jnp.asarray(policy)), atol=1e-9
    )
    # And the solver's update is the same on them (one iteration: later ones may break exact
    # ties in regret differently, as summation order differs in the last bit).
    solver, run = _solve('dcfr')
    regrets = [np.asarray(decision_rows(g.tree, run(solver.init(g), g, 1).cumulative_regret)) for g in games]
    np.testing.assert_allclose(regrets[1][rows, : regrets[0].shape[1]], regrets[0], atol=1e-9)
  with pytest.raises(ValueError, match='does not fit'):
    subgame.build_tree(TreeConfig(2, 60, 2000, config.sizes, deck_size=deck.size), jnp.float64, shape)


@pytest.mark.parametrize('street', [3, 2])
def test_the_matrix_product_and_the_sweep_give_the_same_values(street, sweep):
  """The GPU method (a masked matrix product per river board) against the CPU one (the sweep)."""
  deck, config = INVARIANT_TREES[street]
  tree = subgame.build_tree(config, jnp.float64)
  board = tuple(int(c) for c in deck.cards[-(5 if street == 3 else 4) :])
  ranges = random_ranges(11)
  games = [
    subgame.Subgame(tree, subgame.make_spot(tree, board, ranges, deck, jnp.float64, showdown_by=method))
    for method in ('sweep', 'matrix')
  ]
  assert games[0].spot.tables.matrix is None and games[1].spot.tables.matrix is not None
  policy = random_policy(games[0], 4)
  swept = jax.jit(lambda game, policy: _evaluation(game, policy))(games[0], policy)  # traced with `sweep`
  np.testing.assert_allclose(evaluation(games[1], policy), swept, rtol=0, atol=1e-9)
  with pytest.raises(ValueError, match='showdown_by'):
    subgame.make_spot(tree, board, ranges, deck, jnp.float64, showdown_by='pairs')
