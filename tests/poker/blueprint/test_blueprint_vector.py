"""The vector-form blueprint trainer (public chance sampling): on the short-deck game, one update over
every board, each with equal weight, is one full-width CFR iteration of the history-compiled twin (to
1e-9 in float64), and stops being one when card removal or the bucket map is broken; its per-board
tables are the subgame solver's; training drives the exact exploitability down."""

import dataclasses
import functools
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import host_devices_env, import_paths
from test_blueprint import BOARD, DECK, POT, RULES, exact_game, pure_regrets

import jaxcfr
from jaxcfr import solvers
from jaxcfr.poker.blueprint import game as game_lib
from jaxcfr.poker.blueprint import mccfr, vector
from jaxcfr.poker.rules.cards import FULL_DECK
from jaxcfr.poker.subgame import native, showdown

# Exactness on the short deck.


@functools.cache
def exact_game64():
  return game_lib.make_game(POT, game_lib.lossless_buckets(DECK, BOARD), rules=RULES, deck=DECK,
                            board_cards=BOARD, dtype=jnp.float64, exact=True)  # fmt: skip


@functools.cache
def every_board():
  """Every board of the short deck, each once, for both players: int32 [2, R, b]."""
  boards = jnp.asarray(vector.all_boards(DECK, BOARD))
  return jnp.stack([boards, boards])


def num_deals() -> int:
  return len(game_lib.all_deals(DECK, BOARD)[0])


def start(game, kind: str, rule) -> vector.VectorState:
  """A uniform start, or a state with random regrets and average weights at iteration 4."""
  shape = (game.num_decisions, game.max_buckets, game.num_actions)
  zeros = jnp.zeros(shape, game.dtype)
  if kind == 'uniform':
    return vector.VectorState(jnp.zeros((), jnp.int32), zeros, zeros, rule.init(zeros), jax.random.key(0))
  rng = np.random.default_rng(1)
  regret = jnp.asarray(rng.normal(size=shape), game.dtype)
  average = jnp.asarray(rng.random(size=shape), game.dtype)
  return vector.VectorState(jnp.asarray(4, jnp.int32), regret, average, rule.init(zeros), jax.random.key(0))


def twin_state(game, state: vector.VectorState, rule) -> solvers.CFRState:
  """The same state on the twin: its infosets' cells; the average in the twin's units (times the
  number of deals, see `vector`)."""
  cells = np.asarray(game.twin.cell)
  regret, average = (jnp.asarray(np.asarray(x).reshape(-1, game.num_actions)[cells]) for x in state[1:3])
  zeros = jnp.zeros_like(regret)
  return solvers.CFRState(state.iteration, regret, average * num_deals(), zeros, rule.init(zeros))


def one_iteration(algorithm: str, kind: str, **hyperparameters):
  """(ours, the twin's, the state before): one update over every board vs one CFR iteration."""
  game = exact_game64()
  rule, power = solvers.regret_rule(algorithm, **hyperparameters)
  before = start(game, kind, rule)
  ours = jax.jit(vector.step, static_argnums=(0, 1, 5))(rule, power, before, game, every_board(), 8)
  return ours, twin_iteration(algorithm, kind, tuple(sorted(hyperparameters.items()))), before


@functools.cache  # the broken variants below compare with the same iteration of the twin
def twin_iteration(algorithm: str, kind: str, hyperparameters: tuple) -> solvers.CFRState:
  game = exact_game64()
  rule, power = solvers.regret_rule(algorithm, **dict(hyperparameters))
  before = twin_state(game, start(game, kind, rule), rule)
  return jax.jit(solvers.cfr_family(rule, power).update)(before, game.twin.game)


def cells_of(game, table) -> np.ndarray:
  return np.asarray(table).reshape(-1, game.num_actions)[np.asarray(game.twin.cell)]


@pytest.mark.parametrize(
  'algorithm,kind,hyperparameters',
  [
    pytest.param('cfr', 'uniform', {}, marks=pytest.mark.slow),  # the suite's 10 minutes; random covers it
    pytest.param('cfr', 'random', {}, marks=pytest.mark.slow),  # the suite's 10 minutes; dcfr stays
    ('dcfr', 'random', {'alpha': 1.5, 'beta': 0.5, 'gamma': 2.0}),
    pytest.param('cfr+', 'random', {}, marks=pytest.mark.slow),  # the suite's minutes; cfr and dcfr stay
  ],
)
def test_every_board_once_is_one_full_width_cfr_iteration(algorithm, kind, hyperparameters):
  """Over every board with equal weight, the alternating update is the twin's alternating CFR
  iteration: the same cumulative regrets at every infoset, the same average (in the twin's units)."""
  game = exact_game64()
  ours, twin, before = one_iteration(algorithm, kind, **hyperparameters)
  np.testing.assert_allclose(
    cells_of(game, ours.cumulative_regret), twin.cumulative_regret, rtol=1e-9, atol=1e-9
  )
  np.testing.assert_allclose(
    cells_of(game, ours.cumulative_policy) * num_deals(), twin.cumulative_policy, rtol=1e-9, atol=1e-9
  )
  assert int(ours.iteration) == int(twin.iteration) == int(before.iteration) + 1
  moved = np.abs(np.asarray(twin.cumulative_regret) - cells_of(game, before.cumulative_regret))
  assert moved.max() > 1e-3  # the iteration changed the regrets: the comparison is not vacuous
  if algorithm == 'cfr':  # nothing lands on cells that are no infoset of the twin
    outside = np.ones(game.num_decisions * game.max_buckets, bool)
    outside[np.asarray(game.twin.cell)] = False
    change = np.asarray(ours.cumulative_regret - before.cumulative_regret).reshape(-1, game.num_actions)
    assert np.abs(change[outside]).max() == 0


@pytest.mark.slow  # the native sweep runs by default; both forms equal the brute force in tests/poker/subgame
def test_the_array_sweep_gives_the_same_iteration(monkeypatch):
  """Off the native kernel (as on accelerators), the showdowns' array form: the same iteration."""
  if not native.available(jnp.float64):
    pytest.skip('the native kernel is not built here: the other tests ran the array form')
  monkeypatch.setattr(native, 'available', lambda dtype=None: False)
  game = exact_game64()
  ours, twin, _ = one_iteration('cfr', 'random')
  np.testing.assert_allclose(
    cells_of(game, ours.cumulative_regret), twin.cumulative_regret, rtol=1e-9, atol=1e-9
  )


def no_fold_removal(hands, reach, card_lists=None):
  """The fold term without card removal: every opposing hand counts."""
  return jnp.broadcast_to(reach.sum(-1, keepdims=True), reach.shape)


def no_showdown_removal(order, weaker, not_stronger, card_order, card_weaker, card_not_stronger, reach,
                        transposed=False):  # fmt: skip
  """The showdown term without card removal: the per-card lists emptied (all padding)."""
  empty = jnp.full_like(card_order, order.shape[-1])
  tables = (order, weaker, not_stronger, empty, card_weaker, card_not_stronger)
  return showdown.prefix_difference(*tables, reach.T).T


def shifted_buckets(view_of):
  """The bucket map broken: each hand takes its neighbour's cells."""

  def broken(game, board):
    view = view_of(game, board)
    return view._replace(cells=jnp.roll(view.cells, 1, axis=1))

  return broken


@pytest.mark.parametrize(
  'broken', ['fold removal', pytest.param('showdown removal', marks=pytest.mark.slow), 'bucket map']
)  # the suite's 10 minutes
def test_a_broken_card_removal_or_bucket_map_fails_the_comparison(broken, monkeypatch):
  if broken == 'fold removal':
    monkeypatch.setattr(showdown, 'compatible_mass', no_fold_removal)
  elif broken == 'showdown removal':
    monkeypatch.setattr(showdown, 'board_difference', no_showdown_removal)
  else:
    monkeypatch.setattr(vector, 'board_view', shifted_buckets(vector.board_view))
  game = exact_game64()
  ours, twin, _ = one_iteration('cfr', 'uniform')
  mismatch = np.abs(cells_of(game, ours.cumulative_regret) - np.asarray(twin.cumulative_regret)).max()
  assert mismatch > 1e-3  # six orders of magnitude above the tolerance the correct code meets


_TWO_DEVICES = """
import json, sys
import jax
jax.config.update('jax_enable_x64', True)
import numpy as np
sys.path[:0] = {paths!r}
from jaxcfr import solvers
from jaxcfr.poker.blueprint import vector
from test_blueprint_vector import every_board, exact_game64, start
game = exact_game64()
rule, power = solvers.regret_rule('dcfr', alpha=1.5, beta=0.0, gamma=2.0)
before = start(game, 'random', rule)
step = jax.jit(vector.step, static_argnums=(0, 1, 5, 6))
one = step(rule, power, before, game, every_board(), 4, None)
split = step(rule, power, before, game, every_board(), 4, vector._mesh(2))
gap = lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max())
print(json.dumps({{
  'devices': jax.device_count(),
  'regret_vs_one_device': gap(split.cumulative_regret, one.cumulative_regret),
  'average_vs_one_device': gap(split.cumulative_policy, one.cumulative_policy),
  'regret_change': gap(split.cumulative_regret, before.cumulative_regret),
  'replicated': split.cumulative_regret.sharding.is_fully_replicated,
}}))
"""


@pytest.mark.slow  # the default suite's 10 minutes; two processes of two devices are checked by default
def test_boards_split_over_two_devices_are_the_same_iteration():
  """Two host devices, each walking half of the short deck's boards (a `psum` of the two halves):
  the update is the one-device update (one CFR iteration of the twin, tested above) to rounding; a
  half counted twice or left out would miss by the size of the change."""
  script = _TWO_DEVICES.format(paths=import_paths(__file__))
  run = subprocess.run(
    [sys.executable, '-c', script], capture_output=True, text=True, env=host_devices_env(2), timeout=600
  )
  assert run.returncode == 0, run.stderr[-3000:]
  result = json.loads(run.stdout.strip().splitlines()[-1])
  assert result['devices'] == 2 and result['replicated']
  assert result['regret_vs_one_device'] < 1e-12 and result['average_vs_one_device'] < 1e-12
  assert result['regret_change'] > 1e-3


# Sampling and training.


@pytest.mark.slow  # the default suite's minutes
def test_sampled_boards_are_distinct_cards_of_the_deck_and_updates_repeat():
  game = game_lib.make_game(
    POT, game_lib.lossless_buckets(DECK, BOARD), rules=RULES, deck=DECK, board_cards=BOARD
  )
  boards = np.asarray(vector.sample_boards(game, jax.random.key(2), 500))
  assert all(len(set(row)) == 3 for row in boards.tolist())
  assert set(boards.ravel()) == set(DECK.cards.tolist())
  solver = vector.vector_solver(batch_size=4, boards_per_step=2)
  update = jax.jit(solver.update)
  state = solver.init(game, jax.random.key(3))
  first, again = update(state, game), update(state, game)
  np.testing.assert_array_equal(first.cumulative_regret, again.cumulative_regret)
  one_at_a_time = jax.jit(vector.vector_solver(batch_size=4, boards_per_step=1).update)(state, game)
  np.testing.assert_allclose(first.cumulative_regret, one_at_a_time.cumulative_regret, rtol=1e-5, atol=1e-6)
  assert np.abs(np.asarray(first.cumulative_regret)).max() > 0


@pytest.mark.slow  # the exactness tests hold each update to a CFR iteration by default
def test_training_drives_the_exact_exploitability_down():
  result = jaxcfr.train(exact_game(), vector.vector_solver(batch_size=8), iterations=60, eval_at=[1, 10, 60])
  curve = [point['exploitability'] for point in result.curve]
  assert curve[0] > curve[1] > curve[2] and curve[2] < 0.3 * curve[0]
  policy = np.asarray(result.policy)
  np.testing.assert_allclose(policy.sum(-1), 1, atol=1e-5)
  assert np.all(policy[~np.broadcast_to(np.asarray(exact_game().legal_mask)[:, None, :], policy.shape)] == 0)


def test_bad_settings_are_refused():
  with pytest.raises(ValueError, match='algorithm'):
    vector.vector_solver(algorithm='pcfr+')
  with pytest.raises(ValueError, match='multiple'):
    vector.vector_solver(batch_size=6, boards_per_step=4)
  with pytest.raises(ValueError, match='batch_size'):
    vector.vector_solver(batch_size=0)
  with pytest.raises(ValueError, match='key'):
    vector.vector_solver().init(exact_game())


# The full deck.


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SumBuckets:
  """A toy bucket function of the full deck: card ids' sum modulo each street's count."""

  buckets: tuple = dataclasses.field(default=(7, 5, 5, 5), metadata={'static': True})
  fingerprint: str = dataclasses.field(default='sum-mod', metadata={'static': True})

  def buckets_of(self, hole, board):
    total = jnp.asarray(hole).sum(-1)
    shown = [0, 3, 4, 5]
    return jnp.stack(
      [(total + jnp.asarray(board)[..., :k].sum(-1)) % b for k, b in zip(shown, self.buckets, strict=True)],
      -1,
    )


@functools.cache
def full_deck_game():
  return game_lib.make_game(POT, SumBuckets(), rules=RULES, deck=FULL_DECK)


def test_the_board_tables_are_the_subgame_solvers():
  """On a full-deck river board, the device-built tables are `showdown.showdown_tables`' rows for the
  hands the board leaves, and the cells follow the bucket function."""
  game = full_deck_game()
  board = jnp.asarray([0, 13, 26, 39, 51], jnp.int32)
  view = jax.jit(vector.board_view)(game, board)
  hands = np.asarray(view.hands)
  assert hands.shape == (1081, 2) and not np.isin(hands, np.asarray(board)).any()
  assert len({tuple(sorted(h)) for h in hands.tolist()}) == 1081
  reference = showdown.showdown_tables(hands, np.asarray(board)[None])
  for name in ('order', 'weaker', 'not_stronger', 'card_order', 'card_weaker', 'card_not_stronger'):
    np.testing.assert_array_equal(np.asarray(getattr(view, name)), np.asarray(getattr(reference, name))[0])
  buckets = np.asarray(game.buckets.buckets_of(hands, np.broadcast_to(np.asarray(board), (1081, 5))))
  street = np.asarray(game.street)
  np.testing.assert_array_equal(
    np.asarray(view.cells), np.arange(game.num_decisions)[:, None] * game.max_buckets + buckets[:, street].T
  )


@pytest.mark.parametrize('player', [pytest.param(0, marks=pytest.mark.slow), 1])  # 1: the fold sign flips
def test_a_full_deck_board_against_every_deal_on_it(player):
  """A river game of the 52-card deck (one betting round, the whole board dealt up front): one board's
  vector pass, against a pure opponent, equals external-sampling traversals of every deal on that
  board (1,081 x 990 hole pairs, the opponent's samples deterministic), divided by their number."""
  game = game_lib.make_game(
    POT, SumBuckets(), rules=RULES, deck=FULL_DECK, board_cards=(5,), dtype=jnp.float64
  )
  regret = pure_regrets(game, 11 + player).astype(jnp.float64)
  board = jnp.asarray([2, 17, 30, 44, 49], jnp.int32)
  policy = mccfr.current_policy(mccfr.BlueprintState(0, regret, regret, None), game)
  ours = jax.jit(vector.board_increments, static_argnums=3)(game, policy, board, player)[0]
  hands = np.asarray(jax.jit(vector.board_view)(game, board).hands)
  first, second = np.nonzero(showdown.disjoint_pairs(hands))
  hole = np.stack([hands[first], hands[second]], axis=1)  # [1081 * 990, 2, 2]
  assert len(hole) == 1081 * 990
  walk = jax.jit(
    lambda hole: mccfr.traverse(game, regret, *deal_of(game, hole, board), jax.random.key(0), player)[0]
  )
  theirs = sum(walk(jnp.asarray(part)) for part in np.array_split(hole, 4))
  np.testing.assert_allclose(np.asarray(ours) * len(hole), np.asarray(theirs), rtol=1e-9, atol=1e-9)
  assert np.abs(np.asarray(theirs)).max() > 1


def deal_of(game, hole, board):
  """(buckets [M, 2, S], showdown signs [M]) of deals `hole` [M, 2, 2] on one `board` [b]."""
  boards = jnp.broadcast_to(board, (hole.shape[0], board.shape[0]))
  return game_lib.deal_buckets(game, hole, boards), game_lib.showdown(hole, boards)
