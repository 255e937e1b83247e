"""The blueprint as a real-game policy (`jaxcfr.poker.blueprint.policy`) on states of the nlhe engine:
on-tree histories give the stored probabilities, off-tree bets translate pseudo-harmonically, every
answer is legal and sums to 1; and the blueprint file round trip."""

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from abstractions import HOLES, pseudo_harmonic
from jaxcfr.poker import bots
from jaxcfr.poker.blueprint import files
from jaxcfr.poker.blueprint import policy as policy_lib
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import FULL_DECK


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SumBuckets:
  """A cheap bucket function of the full deck for tests: the sum of the hole and visible board card
  ids modulo each street's count (so it changes with every visible card and no unseen one)."""

  buckets: tuple = dataclasses.field(default=(4, 5, 5, 3), metadata={'static': True})
  fingerprint: str = dataclasses.field(default='sum-buckets', metadata={'static': True})

  def buckets_of(self, hole, board):
    total = jnp.asarray(hole).sum(-1)
    board = jnp.asarray(board)
    return jnp.stack(
      [(total + board[..., :n].sum(-1)) % k for n, k in zip((0, 3, 4, 5), self.buckets, strict=True)], -1
    )

  def expected(self, hole, board, street):  # NumPy, for the tests
    return int((np.sum(hole) + np.sum(board[: (0, 3, 4, 5)[street]])) % self.buckets[street])


@functools.cache
def small_tree():
  return tree_lib.build_tree('small')


def random_probabilities(tree, buckets, seed=0):
  rng = np.random.default_rng(seed)
  values = rng.random((tree.num_decisions, max(buckets), tree.num_actions)) * tree.legal[:, None, :]
  return values / values.sum(-1, keepdims=True)


@pytest.fixture(scope='module')
def saved(tmp_path_factory):
  """A blueprint file of the small preset with random probabilities, on SumBuckets."""
  tree, buckets = small_tree(), SumBuckets()
  path = str(tmp_path_factory.mktemp('blueprint') / 'small.npz')
  metadata = files.metadata_for(
    tree, bets_name='small', deck=FULL_DECK, board_cards=(0, 3, 1, 1), buckets=buckets.buckets,
    abstraction_fingerprint=buckets.fingerprint,
  )  # fmt: skip
  files.save_blueprint(path, tree, random_probabilities(tree, buckets.buckets), metadata)
  return path


def walk_on_tree(tree, batch, seed, steps):
  """Hands dealt by nlhe and played along random abstract actions (their exact amounts) for up to
  `steps` actions: (state, abstract node [B])."""
  rng = np.random.default_rng(seed)
  state = nlhe.deal(seed, batch)
  node = np.zeros(batch, np.int64)
  stop = rng.integers(0, steps + 1, batch)
  for t in range(steps):
    row = tree.decision[node]
    go = (t < stop) & (row >= 0) & ~state.finished
    if not go.any():
      break
    # Folds and all-ins end hands early: mostly checks, calls and the other bets.
    kinds, amounts = tree.kind[np.maximum(row, 0)], tree.amount[np.maximum(row, 0)]
    weight = tree.legal[np.maximum(row, 0)] * np.where(
      (kinds == 0) | (amounts == tree.rules.stack), 0.05, 1.0
    )
    slot = np.array([rng.choice(len(w), p=w / w.sum()) for w in weight])
    kind = tree.kind[np.maximum(row, 0), slot].astype(np.int64)
    amount = tree.amount[np.maximum(row, 0), slot]
    state = nlhe.apply(state, kind, amount, go)
    node = np.where(go, tree.children[node, slot], node)
  return state, node


def test_on_tree_histories_give_the_stored_probabilities(saved):
  policy = policy_lib.load_policy(saved, tables=SumBuckets())
  tree, buckets = policy.tree, SumBuckets()
  state, node = walk_on_tree(tree, 300, seed=1, steps=9)
  live = ~state.finished
  assert live.sum() > 100 and len(set(tree.street[node[live]])) == 4  # every street is asked
  state, node = nlhe.take(state, live), node[live]
  found, on_tree = policy.abstract_nodes(state)
  np.testing.assert_array_equal(found, node)
  assert on_tree.all()
  holes = state.hole[np.arange(len(node)), state.to_act][:, None, :]
  actions, probabilities = policy.strategy(state, holes)
  rows = tree.decision[node]
  call_to = nlhe.legal(state).call_to
  for b in range(len(node)):
    bucket = buckets.expected(holes[b, 0], state.board[b], tree.street[node[b]])
    legal = tree.legal[rows[b]]
    np.testing.assert_allclose(
      probabilities[b, 0], policy.blueprint.probabilities[rows[b], bucket], atol=1e-6
    )
    np.testing.assert_array_equal(actions.valid[b], legal)
    np.testing.assert_array_equal(actions.kind[b][legal], tree.kind[rows[b]][legal])
    raises = legal & (tree.kind[rows[b]] == nlhe.RAISE)
    np.testing.assert_array_equal(actions.amount[b][raises], tree.amount[rows[b]][raises])
    np.testing.assert_array_equal(actions.amount[b][tree.kind[rows[b]] == nlhe.CALL], call_to[b])
  assert policy.off_tree == 0


def test_range_queries_are_legal_distributions(saved):
  policy = policy_lib.load_policy(saved, tables=SumBuckets())
  state, _ = walk_on_tree(policy.tree, 40, seed=2, steps=6)
  state = nlhe.take(state, ~state.finished)
  holes = np.broadcast_to(HOLES, (len(state.street), 1326, 2))
  actions, probabilities = policy.strategy(state, holes)
  assert probabilities.shape == (len(state.street), 1326, actions.kind.shape[1])
  np.testing.assert_allclose(probabilities.sum(-1), 1, atol=1e-9)
  assert np.all(probabilities[~np.broadcast_to(actions.valid[:, None, :], probabilities.shape)] == 0)
  for b in range(len(state.street)):
    valid = actions.valid[b]
    assert nlhe.is_legal(nlhe.take(state, np.full(valid.sum(), b)), actions.kind[b][valid],
                         actions.amount[b][valid]).all()  # fmt: skip


def test_range_queries_through_the_kept_boards_answer_as_hand_by_hand_queries(saved):
  """A range query (all 1,326 pairs, broadcast) reads each board's buckets once and keeps them; its
  answer, asked twice (the second from the kept boards), equals the same pairs asked as a plain
  array (the bucket function per pair), and the boards kept stay within `BOARD_BUCKETS`."""
  policy = policy_lib.load_policy(saved, tables=SumBuckets())
  state, _ = walk_on_tree(policy.tree, 40, seed=3, steps=8)
  state = nlhe.take(state, ~state.finished)
  assert len(set(state.street.tolist())) >= 3
  broadcast = np.broadcast_to(HOLES, (len(state.street), 1326, 2))
  first = policy.strategy(state, broadcast)[1]
  assert 0 < len(policy._board_buckets) <= policy_lib.BOARD_BUCKETS
  again = policy.strategy(state, broadcast)[1]
  plain = policy.strategy(state, np.array(broadcast))[1]  # a copy: not a range query
  np.testing.assert_array_equal(first, again)
  np.testing.assert_array_equal(first, plain)


def test_off_tree_opens_translate_pseudo_harmonically(saved):
  """The small blind opens to 300 (x = 1.0 pot after calling) between the abstract 2.5x open (0.75)
  and the all-in (99.5): mapped to the open exactly when the hand's noise is below
  pseudo_harmonic(1.0, 0.75, 99.5); the big blind's answer then comes from that node, at real sizes."""
  policy = policy_lib.load_policy(saved, tables=SumBuckets())
  tree = policy.tree
  batch = 200
  noise = np.zeros((batch, nlhe.max_actions()))
  noise[:, 0] = (np.arange(batch) + 0.5) / batch
  hole, board = np.broadcast_to([[0, 1], [2, 3]], (batch, 2, 2)), np.broadcast_to(np.arange(4, 9), (batch, 5))
  state = nlhe.initial(hole, board, noise=noise)
  state = nlhe.apply(state, np.full(batch, nlhe.RAISE), np.full(batch, 300))
  node, on_tree = policy.abstract_nodes(state)
  open_node, shove_node = tree.children[0, 2], tree.children[0, 3]  # fold, call, 250, all-in
  assert tree.amount[0, 2] == 250 and tree.amount[0, 3] == 20_000
  p = pseudo_harmonic(1.0, 0.75, (20_000 - 100) / 200)
  np.testing.assert_array_equal(node, np.where(noise[:, 0] < p, open_node, shove_node))
  assert on_tree.all() and 0.5 < p < 1
  actions, probabilities = policy.strategy(nlhe.take(state, [0]), state.hole[:1, 1][:, None])
  row = tree.decision[open_node]
  assert [a.kind for a in tree.actions(row)] == ['fold', 'call', 'bet', 'bet']
  # Call to 300; the 3x re-raise is 1.0 of the real pot after calling: 300 + (400 + 200) = 900.
  np.testing.assert_array_equal(actions.amount[0, 1:], [300, 900, 20_000])
  bucket = SumBuckets().expected(state.hole[0, 1], state.board[0], 0)
  np.testing.assert_allclose(probabilities[0, 0], policy.blueprint.probabilities[row, bucket], atol=1e-6)


def test_a_raise_the_real_game_forbids_becomes_the_call():
  """The abstract node offers bets but the real opponent is all-in: the bets merge into the call."""
  tree, buckets = small_tree(), SumBuckets()
  blueprint = files.Blueprint(tree, random_probabilities(tree, buckets.buckets).astype(np.float32), {
    'buckets': list(buckets.buckets), 'board_cards': [0, 3, 1, 1], 'abstraction_fingerprint': 'sum-buckets',
    'deck': [13, 4]})  # fmt: skip
  policy = policy_lib.BlueprintPolicy(blueprint, buckets)
  state = nlhe.from_actions([[(nlhe.RAISE, 20_000)]])  # the small blind shoves: no raise is left
  actions = policy._real_actions(state, np.array([0]))  # the root's row: fold, call, 250, all-in
  assert list(actions.kind[0]) == [nlhe.FOLD, nlhe.CALL, nlhe.CALL, nlhe.CALL]
  probabilities = np.array([[[0.1, 0.2, 0.3, 0.4]]])
  merged, merged_probabilities = policy_lib._merged(actions, probabilities)
  assert list(merged.valid[0]) == [True, True, False, False]
  np.testing.assert_allclose(merged_probabilities[0, 0], [0.1, 0.9, 0, 0])


def test_play_against_baselines_is_legal(saved):
  """The match engine checks every answer (legal actions, probabilities summing to 1)."""
  policy = policy_lib.load_policy(saved, tables=SumBuckets())
  for opponent in ('random', 'always-pot'):
    result = match.play_match(policy, bots.resolve_policy(opponent), hands=200, seed=3, batch=100)
    assert result.hands == 200 and np.isfinite(result.mbb_per_hand)


def test_the_blueprint_file_round_trip(saved, tmp_path):
  blueprint = files.load_blueprint(saved)
  tree = small_tree()
  assert blueprint.tree.fingerprint() == tree.fingerprint() and blueprint.metadata['bets_preset'] == 'small'
  original = random_probabilities(tree, SumBuckets().buckets)
  assert np.abs(blueprint.probabilities - original).max() < 1 / 255
  np.testing.assert_allclose(blueprint.probabilities.sum(-1), 1, atol=1e-6)
  assert np.all(blueprint.probabilities[~np.broadcast_to(tree.legal[:, None, :], original.shape)] == 0)
  assert files.read_metadata(saved)['tree_fingerprint'] == tree.fingerprint()


@pytest.mark.parametrize(
  'damage,message',
  [
    (lambda path: open(path, 'w').write('not a blueprint'), 'not a readable blueprint'),
    (
      lambda path: np.savez(
        path, metadata=np.frombuffer(b'{"format": "other"}', np.uint8), probabilities=np.zeros(3, np.uint8)
      ),
      'not a blueprint written by jaxcfr',
    ),  # fmt: skip
    (None, 'does not exist'),
  ],
)
def test_bad_blueprint_files_are_one_message(tmp_path, damage, message):
  path = str(tmp_path / 'bad.npz')
  if damage is not None:
    damage(path)
  with pytest.raises(files.BlueprintError, match=message):
    policy_lib.load_policy(path, tables=SumBuckets())


def test_mismatched_tables_and_trees_are_refused(saved, tmp_path):
  with pytest.raises(files.BlueprintError, match='trained on abstraction tables sum-buckets'):
    policy_lib.load_policy(saved, tables=dataclasses.replace(SumBuckets(), fingerprint='other'))
  with pytest.raises(files.BlueprintError, match='records no abstraction tables'):
    policy_lib.load_policy(saved)
  with pytest.raises(files.BlueprintError, match='needs its abstraction tables'):
    policy_lib.load_policy(saved, tables=str(tmp_path / 'missing'))
  # A file whose tree fingerprint does not match its bets (another tree builder, or edited).
  metadata = files.read_metadata(saved)
  metadata['bets']['raise_cap'] = [4, 3, 3, 3]
  with np.load(saved) as archive:
    probabilities = archive['probabilities']
  edited = str(tmp_path / 'edited.npz')
  np.savez(
    edited, probabilities=probabilities, metadata=np.frombuffer(json.dumps(metadata).encode(), np.uint8)
  )
  with pytest.raises(files.BlueprintError, match='does not match its fingerprint'):
    files.load_blueprint(edited)


def test_a_raise_past_the_abstract_cap_loses_the_line_and_the_policy_calls(saved):
  """The small preset caps preflop at three bets and raises: a fourth is taken as a call, the abstract
  hand moves to the flop, and the policy, asked preflop, falls back to calling."""
  policy = policy_lib.load_policy(saved, tables=SumBuckets())
  raises = [(nlhe.RAISE, 250), (nlhe.RAISE, 750), (nlhe.RAISE, 2250)]
  state = nlhe.from_actions([raises, [*raises, (nlhe.RAISE, 6750)]])
  node, on_tree = policy.abstract_nodes(state)
  assert list(on_tree) == [True, False]
  assert policy.tree.street[node[1]] == 1  # the abstract hand is on the flop
  actions, probabilities = policy.strategy(state, state.hole[[0, 1], state.to_act][:, None])
  np.testing.assert_array_equal(probabilities[1, 0], np.eye(actions.kind.shape[1])[0])
  assert actions.kind[1, 0] == nlhe.CALL and actions.amount[1, 0] == 6750 and policy.off_tree == 1


def test_walks_that_go_on_from_the_kept_ones_equal_fresh_walks(saved):
  """A policy keeps its last walks into the tree and takes a hand whose line less its last action was
  walked there one step on (`abstract_nodes`): asked line by line, as a search asks a tree depth by
  depth, with off-tree raises (translated by each hand's noise), it finds the nodes a fresh policy
  walking each line from the deal finds."""
  kept, fresh = (
    policy_lib.load_policy(saved, tables=SumBuckets()),
    policy_lib.load_policy(saved, tables=SumBuckets()),
  )
  rng = np.random.default_rng(3)
  batch, steps = 60, 8
  start = nlhe.deal(4, batch)
  kinds, amounts = np.full((batch, steps), -1), np.zeros((batch, steps), np.int64)
  state = start
  for t in range(steps):
    options = nlhe.legal(state)
    kind = np.where(options.can_raise & (rng.random(batch) < 0.4), nlhe.RAISE, nlhe.CALL)
    amount = rng.integers(options.min_raise_to, np.maximum(options.max_raise_to, options.min_raise_to) + 1)
    live = ~state.finished
    kinds[:, t] = np.where(live, kind, -1)
    amounts[:, t] = np.where(live & (kind == nlhe.RAISE), amount, 0)
    state = nlhe.replay(state, kinds[:, t : t + 1], amounts[:, t : t + 1])
  resumed = 0
  for t in range(steps + 1):
    lines = nlhe.replay(start, kinds[:, :t], amounts[:, :t])
    before = [len(found) for found, *_ in kept._walks]
    node, on_tree = kept.abstract_nodes(lines)
    fresh._walks.clear()
    expected = fresh.abstract_nodes(lines)
    np.testing.assert_array_equal(node, expected[0])
    np.testing.assert_array_equal(on_tree, expected[1])
    resumed += bool(before)
  assert resumed == steps and (kinds == nlhe.RAISE).sum() > 50  # real raises, off the tree
  # The next lines go on from the kept walk: a wrong node kept there is a wrong node found.
  kept.abstract_nodes(nlhe.replay(start, kinds[:, :3], amounts[:, :3]))
  kept._walks[-1][1][:] = 0
  lines = nlhe.replay(start, kinds[:, :4], amounts[:, :4])
  fresh._walks.clear()
  assert (kept.abstract_nodes(lines)[0] != fresh.abstract_nodes(lines)[0]).mean() > 0.5
