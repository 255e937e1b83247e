"""Hold'em information-set features (`jaxcfr.poker.blueprint.features`) against a slow per-hand
Python reference, on random real hand states (`nlhe.deal` and random legal actions) and on every
state of the abstract betting tree, with its betting history replayed action by action through
`abstractions.betting`."""

import jax
import numpy as np
import pytest

from abstractions.betting import apply_action, initial_state, legal_actions
from jaxcfr.poker.blueprint import features
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.rules import nlhe


def reference(hole, board, street, pot, own, opponent, to_call, stack) -> list[float]:
  """The 372 numbers of one hand, one Python loop per section (the layout of the module docstring)."""
  out = [0.0] * 372
  for i, card in enumerate(sorted(int(c) for c in hole)):
    out[52 * i + card] = 1.0
  shown = [int(c) for c in board[: (0, 3, 4, 5)[street]]]
  shown = sorted(shown[:3]) + shown[3:]
  for slot, card in enumerate(shown):
    out[104 + 52 * slot + card] = 1.0
  out[364 + street] = 1.0
  out[368:372] = [pot / stack, own / stack, opponent / stack, to_call / stack]
  return out


def random_states(seed: int, batch: int, steps: int) -> list[nlhe.HandState]:
  """A batch dealt and played for `steps` random legal actions; the state after each action."""
  rng = np.random.default_rng(seed)
  state, states = nlhe.deal(seed, batch), []
  for _ in range(steps):
    options = nlhe.legal(state)
    kind = rng.integers(0, 3, batch)
    kind = np.where((kind == nlhe.FOLD) & ~options.can_fold, nlhe.CALL, kind)
    kind = np.where((kind == nlhe.RAISE) & ~options.can_raise, nlhe.CALL, kind)
    kind = np.where(rng.random(batch) < 0.3, nlhe.CALL, kind)  # longer hands
    low, high = options.min_raise_to, np.maximum(options.max_raise_to, options.min_raise_to)
    amount = np.where(kind == nlhe.RAISE, low + (rng.random(batch) * (high - low + 1)).astype(np.int64), 0)
    amount = np.where(kind == nlhe.CALL, options.call_to, np.minimum(amount, high))
    state = nlhe.apply(state, kind, amount, ~state.finished)
    states.append(state)
  return states


def test_real_hand_states_match_the_reference():
  encode = jax.jit(features.encode, static_argnums=6)
  checked = set()
  for state in random_states(0, 64, 12):
    live = np.flatnonzero(~state.finished)
    if not len(live):
      continue
    player = state.to_act[live]
    hole = state.hole[live, player]
    got = np.asarray(
      encode(hole, state.board[live], nlhe.BOARD_SIZES[state.street[live]], state.street[live],
             state.committed[live], player, float(state.rules.stack))
    )  # fmt: skip
    for i, b in enumerate(live):
      p, stack = int(state.to_act[b]), state.rules.stack
      behind = [stack - int(c) for c in state.committed[b]]
      to_call = min(max(int(state.round_bet[b, 1 - p]) - int(state.round_bet[b, p]), 0), behind[p])
      pot = int(state.committed[b].sum())
      expected = reference(state.hole[b, p], state.board[b], int(state.street[b]), pot, behind[p],
                           behind[1 - p], to_call, stack)  # fmt: skip
      np.testing.assert_allclose(got[i], expected, rtol=1e-6, atol=1e-7)
      checked.add((int(state.street[b]), to_call > 0))
  assert {(s, c) for s in range(4) for c in (False, True)} <= checked  # every street, facing a bet or not


def history_reference(path) -> list[float]:
  """The 48 history numbers after the abstract actions `path` [(state before, action)], from the view
  of the player to act after them."""
  cells = {}
  depth, street = 0, 0
  for before, action in path:
    if before.street != street:
      depth, street = 0, before.street
    if action.kind == 'bet':
      size = (action.amount - max(before.round_bet)) / (before.pot + before.to_call)
      cells[(before.street, min(depth, 3))] = (size, before.to_act)
      depth += 1
  final = apply_action(path[-1][0], path[-1][1]) if path else None
  me = final.to_act if final is not None else 0
  out = [0.0] * 48
  for (s, d), (size, maker) in cells.items():
    out[12 * s + 3 * d : 12 * s + 3 * d + 3] = [1.0, size, float(maker == me)]
  return out


@pytest.mark.parametrize('preset', ['small'])
def test_abstract_tree_states_match_the_reference(preset):
  """Every decision row of the tree: the chips and history from the replayed abstract actions."""
  tree = tree_lib.build_tree(preset)
  table = features.history_table(tree)
  rng = np.random.default_rng(1)
  rows = np.arange(tree.num_decisions)
  cards = np.stack([rng.permutation(52)[:7] for _ in rows])
  street = tree.street[tree.decisions]
  committed = tree.committed[tree.decisions]
  player = tree.player[tree.decisions]
  got = np.asarray(
    features.encode(cards[:, :2], cards[:, 2:], np.array([0, 3, 4, 5])[street], street, committed, player,
                    float(tree.rules.stack), table)
  )  # fmt: skip
  assert got.shape == (tree.num_decisions, 420)
  raises_seen = 0
  for row, node in enumerate(tree.decisions):
    path, n = [], int(node)
    while tree.parent[n] >= 0:  # the actions from the root, replayed through abstractions.betting
      up = int(tree.parent[n])
      path.append(int(tree.parent_slot[n]))
      n = up
    state, steps = initial_state(tree.rules), []
    for slot in reversed(path):
      action = legal_actions(state, tree.bets)[slot]
      steps.append((state, action))
      state = apply_action(state, action)
    assert state == tree.states[node]
    p = state.to_act
    behind = [state.stack_left(0), state.stack_left(1)]
    expected = reference(cards[row, :2], cards[row, 2:], state.street, state.pot, behind[p], behind[1 - p],
                         min(state.to_call, behind[p]), tree.rules.stack)  # fmt: skip
    expected += history_reference(steps)
    np.testing.assert_allclose(got[row], expected, rtol=1e-6, atol=1e-7)
    raises_seen = max(raises_seen, sum(got[row, 372::3] > 0))
  assert raises_seen >= 4  # lines with several raises over the streets are covered
