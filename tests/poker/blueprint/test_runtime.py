"""The runtime (`jaxcfr.poker.runtime`): the blueprint policy in NumPy only. Its card arithmetic equals
the JAX twins (suit-isomorphism index, preflop classes, the hand evaluator, the bucket tables) on
random deals; the library's blueprint policy, which now looks buckets up with it, answers as it did
with the jitted lookup; and the files `RUNTIME_MODULES` lists, copied alone into a directory, import
no JAX and answer as the library does."""

from __future__ import annotations

import ast
import functools
import json
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest
from standin import write_tables
from test_blueprint_policy import random_probabilities, small_tree, walk_on_tree

import abstractions
from abstractions import indexing, lookup, ranking
from jaxcfr.poker import runtime
from jaxcfr.poker.blueprint import files
from jaxcfr.poker.blueprint import policy as policy_lib
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import FULL_DECK

SIZES = (169, 50, 50, 50)  # stand-in tables: each class's bucket its index modulo the street's count
BOARD_CARDS = {'preflop': 0, 'flop': 3, 'turn': 4, 'river': 5}


def deals(seed: int, count: int, cards: int = 7) -> np.ndarray:
  """`count` random deals of distinct cards, int32 [count, cards]."""
  return np.argsort(np.random.default_rng(seed).random((count, 52)), axis=1)[:, :cards].astype(np.int32)


@pytest.mark.parametrize('rounds', [(2,), (2, 3), (2, 4), (2, 5), (5,), (2, 3, 1)])
def test_the_numpy_index_equals_the_jax_index(rounds):
  """Hold'em's streets and boards alone (from tables of the suits' keys in NumPy) and three rounds
  (card by card, as JAX): the same classes and class sizes."""
  cards = deals(1, 5000, sum(rounds))
  ours, theirs = indexing.HandIndexer(rounds), abstractions.HandIndexer(rounds)
  index = np.asarray(jax.jit(theirs.index)(cards))
  np.testing.assert_array_equal(ours.index(cards), index)
  np.testing.assert_array_equal(ours.weight(cards), np.asarray(jax.jit(theirs.weight)(cards)))
  # One deal without a batch axis, and a suit permutation of the deals: the same classes.
  assert ours.index(cards[0]).shape == () and ours.index(cards[0]) == index[0]
  permuted = (cards >> 2) * 4 + np.array([3, 1, 0, 2])[cards & 3]
  np.testing.assert_array_equal(ours.index(permuted), index)


def test_the_numpy_preflop_classes_equal_the_jax_ones():
  np.testing.assert_array_equal(
    indexing.preflop_class(indexing.HOLES), np.asarray(abstractions.preflop_class(indexing.HOLES))
  )
  assert sorted(set(indexing.preflop_class(indexing.HOLES).tolist())) == list(range(169))


@pytest.mark.parametrize('size', [5, 6, 7])
def test_the_numpy_hand_rank_equals_the_jax_one(size):
  cards = deals(2, 20_000, size)
  np.testing.assert_array_equal(ranking.hand_rank(cards), np.asarray(jax.jit(abstractions.hand_rank)(cards)))


@pytest.fixture(scope='module')
def tables(tmp_path_factory):
  """(directory, NumPy tables, JAX tables) of the stand-in tables, written once (about 140 MB)."""
  directory = write_tables(tmp_path_factory.mktemp('tables') / 'standin', SIZES)
  return directory, abstractions.load_tables(directory), abstractions.load(directory, verify=False)


def test_the_numpy_tables_are_the_abstraction(tables):
  _, numpy_tables, jax_tables = tables
  assert numpy_tables.buckets == jax_tables.buckets == SIZES
  assert (
    numpy_tables.fingerprint == jax_tables.fingerprint == abstractions.load_metadata(tables[0])['fingerprint']
  )
  viewed = jax_tables.as_numpy()
  assert viewed.fingerprint == numpy_tables.fingerprint and viewed.buckets == SIZES
  for street in abstractions.STREETS:
    np.testing.assert_array_equal(getattr(viewed, street), getattr(numpy_tables, street))


@functools.partial(jax.jit, static_argnums=0)
def jitted_bucket(street, tables, hole, board):
  return tables.bucket(street, hole, board)


@pytest.mark.parametrize('street', abstractions.STREETS)
def test_numpy_buckets_equal_the_abstractions_buckets(tables, street):
  _, numpy_tables, jax_tables = tables
  cards = deals(3, 4000)
  hole, board = cards[:, :2], cards[:, 2 : 2 + BOARD_CARDS[street]]
  found = numpy_tables.bucket(street, hole, board)
  assert found.dtype == np.int32 and found.shape == (4000,)
  np.testing.assert_array_equal(found, np.asarray(jitted_bucket(street, jax_tables, hole, board)))


def test_pairs_the_board_blocks_get_a_bucket_and_no_error(tables):
  """A range query asks every pair, those that share a card with the board too: they get some bucket
  of the street (what a blocked pair gets is not a class; its weight is 0 wherever it is read)."""
  _, numpy_tables, jax_tables = tables
  for street in ('flop', 'turn', 'river'):
    board = np.broadcast_to(deals(4, 1, BOARD_CARDS[street]), (len(indexing.HOLES), BOARD_CARDS[street]))
    found = numpy_tables.bucket(street, indexing.HOLES, board)
    blocked = (indexing.HOLES[:, :, None] == board[:, None, :]).any((1, 2))
    n = BOARD_CARDS[street]
    assert blocked.sum() == 51 * n - n * (n - 1) // 2
    assert ((found >= 0) & (found < SIZES[abstractions.STREETS.index(street)])).all()
    expected = np.asarray(jitted_bucket(street, jax_tables, indexing.HOLES, board))
    np.testing.assert_array_equal(found[~blocked], expected[~blocked])


# The policy.


@pytest.fixture(scope='module')
def saved(tables, tmp_path_factory):
  """A blueprint of the small preset with random probabilities, trained (so it says) on the tables."""
  tree = small_tree()
  path = str(tmp_path_factory.mktemp('blueprint') / 'small.npz')
  metadata = files.metadata_for(
    tree, bets_name='small', deck=FULL_DECK, board_cards=(0, 3, 1, 1), buckets=SIZES,
    abstraction_fingerprint=tables[1].fingerprint, abstraction_path=tables[0],
  )  # fmt: skip
  files.save_blueprint(path, tree, random_probabilities(tree, SIZES, seed=5), metadata)
  return path


class JittedLookup(policy_lib.BlueprintPolicy):
  """The library's policy as it was before the runtime: buckets from `Abstraction.bucket` under jit."""

  def _street_buckets(self, street, hole, board):
    shown = np.broadcast_to(board[:, None, :], (*hole.shape[:2], board.shape[-1]))
    return np.asarray(jitted_bucket(abstractions.STREETS[street], self.buckets, hole, shown))


@pytest.fixture(scope='module')
def states():
  """Live hands on every street, played along the small tree (with some off-tree hands after)."""
  state, _ = walk_on_tree(small_tree(), 240, seed=6, steps=9)
  state = nlhe.take(state, ~state.finished)
  assert len(set(state.street.tolist())) == 4
  return state


def own_holes(state):
  return state.hole[np.arange(len(state.street)), state.to_act][:, None]


def unblocked(state):
  """bool [B, H]: the pairs the hand's visible board leaves."""
  shown = np.where(np.arange(5) < nlhe.BOARD_SIZES[state.street][:, None], state.board, -1)
  return ~(indexing.HOLES[None, :, :, None] == shown[:, None, None, :]).any((-1, -2))


def test_the_library_policy_answers_as_with_the_jitted_lookup(saved, tables, states):
  """The library's policy on `Abstraction` tables (the runtime's NumPy lookup on their arrays) and on
  the tables read as NumPy (`load_policy`) gives what the jitted lookup gave: the same actions and
  probabilities for each hand's own pair, and for every pair the board leaves in a range query."""
  directory, _, jax_tables = tables
  blueprint = files.load_blueprint(saved)
  oracle = JittedLookup(blueprint, jax_tables)
  assert oracle.tables is not None  # the NumPy view, which JittedLookup does not read
  for policy in (policy_lib.BlueprintPolicy(blueprint, jax_tables), policy_lib.load_policy(saved)):
    assert policy.tables is not None and not isinstance(policy, JittedLookup)
    for holes in (own_holes(states), np.broadcast_to(indexing.HOLES, (len(states.street), 1326, 2))):
      actions, probabilities = policy.strategy(states, holes)
      expected_actions, expected = oracle.strategy(states, holes)
      for found, wanted in zip(actions, expected_actions, strict=True):
        np.testing.assert_array_equal(found, wanted)
      keep = np.ones(holes.shape[:2], bool) if holes.shape[1] == 1 else unblocked(states)
      np.testing.assert_allclose(probabilities[keep], expected[keep], rtol=0, atol=1e-12)
  assert isinstance(policy_lib.load_policy(saved, tables=directory).buckets, lookup.BucketTables)


# The runtime alone.


def _repository_module(name: str) -> str | None:
  """The repository path of module `name` ('a/b.py' or 'a/b/__init__.py'), None outside it."""
  root = runtime.ROOT
  for path in (f'{name.replace(".", "/")}.py', f'{name.replace(".", "/")}/__init__.py'):
    if (root / path).exists():
      return path
  return None


def _module_imports(path: str) -> set[str]:
  """The modules a file imports at its top level (what importing it runs), by dotted name."""
  found = set()
  for node in ast.parse((runtime.ROOT / path).read_text()).body:
    if isinstance(node, ast.Import):
      found.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and not node.level:
      for alias in node.names:
        submodule = f'{node.module}.{alias.name}'
        found.add(submodule if _repository_module(submodule) else node.module)
  return found


def test_the_runtime_modules_import_only_each_other_and_no_jax():
  listed = set(runtime.RUNTIME_MODULES)
  for path in runtime.RUNTIME_MODULES:
    for module in _module_imports(path):
      assert module.split('.')[0] not in ('jax', 'jaxlib'), f'{path} imports {module}'
      source = _repository_module(module)
      # An empty stand-in replaces each __init__.py not listed: importing names from it would fail.
      assert source is None or source in listed, f'{path} imports {module} ({source}), not in RUNTIME_MODULES'
  # The runtime's own room and the card arithmetic import no JAX anywhere, not even inside functions.
  for path in runtime.RUNTIME_MODULES:
    if path.startswith(('jaxcfr/poker/runtime/', 'abstractions/')):
      for node in ast.walk(ast.parse((runtime.ROOT / path).read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module or ''] if isinstance(node, ast.ImportFrom) else []
        assert not any(name.split('.')[0] in ('jax', 'jaxlib') for name in names), path


RUNTIME_ALONE = """
import importlib.abc, json, sys
sys.path.insert(0, sys.argv[1])


class NoJax(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.partition('.')[0] in ('jax', 'jaxlib'):
      raise ImportError(f'the runtime imported {name}')


sys.meta_path.insert(0, NoJax())
import numpy as np

from abstractions.indexing import HOLES
from abstractions.lookup import load_tables
from jaxcfr.poker.blueprint.files import load_blueprint
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.runtime.policy import BlueprintPolicy, check_fingerprint

blueprint, tables = load_blueprint(sys.argv[2]), load_tables(sys.argv[3])
check_fingerprint(blueprint, tables, sys.argv[2])
policy = BlueprintPolicy(blueprint, tables)
with np.load(sys.argv[4]) as arrays:
  state = nlhe.HandState(**{name: arrays[name] for name in arrays.files})
batch = len(state.street)
answers = {}
for name, holes in [('own', state.hole[np.arange(batch), state.to_act][:, None]),
                    ('range', np.broadcast_to(HOLES, (batch, len(HOLES), 2)))]:
  actions, probabilities = policy.strategy(state, holes)
  answers.update({f'{name}_{field}': value for field, value in zip(actions._fields, actions)})
  answers[f'{name}_probabilities'] = probabilities
np.savez(sys.argv[5], **answers)
ours = ('jax', 'jaxlib', 'jaxcfr', 'abstractions')
loaded = {name: getattr(module, '__file__', None) for name, module in list(sys.modules.items())
          if name.partition('.')[0] in ours}
print(json.dumps(loaded))
"""


def test_the_copied_runtime_answers_as_the_library_without_jax(saved, tables, states, tmp_path):
  """`copy_runtime` into an empty directory, that directory alone on sys.path of a fresh Python with
  `import jax` failing: the blueprint file and the tables load, and the strategy of every hand (its
  own pair, and a range query of all pairs) is the library policy's, exactly."""
  copied = tmp_path / 'bot'
  written = runtime.copy_runtime(copied)
  assert set(runtime.RUNTIME_MODULES) <= set(written)
  assert {'jaxcfr/__init__.py', 'abstractions/__init__.py'} <= set(written)
  assert (copied / 'jaxcfr/__init__.py').read_text() == ''
  np.savez(tmp_path / 'states.npz', **{k: v for k, v in states._asdict().items() if k != 'rules'})
  (tmp_path / 'alone.py').write_text(RUNTIME_ALONE)
  command = [sys.executable, '-I', str(tmp_path / 'alone.py'), str(copied), saved, tables[0]]
  command += [str(tmp_path / 'states.npz'), str(tmp_path / 'answers.npz')]
  done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
  assert done.returncode == 0, done.stderr
  loaded = json.loads(done.stdout.splitlines()[-1])
  assert not any(name.partition('.')[0] in ('jax', 'jaxlib') for name in loaded)
  for name, source in loaded.items():  # every module of ours from the copy, none from the repository
    assert source is None or pathlib.Path(source).is_relative_to(copied), (name, source)
  assert 'jaxcfr.poker.runtime.policy' in loaded and 'abstractions.lookup' in loaded

  library = policy_lib.load_policy(saved)
  with np.load(tmp_path / 'answers.npz') as answers:
    for name, holes in [
      ('own', own_holes(states)),
      ('range', np.broadcast_to(indexing.HOLES, (len(states.street), 1326, 2))),
    ]:
      actions, probabilities = library.strategy(states, holes)
      for field, value in zip(actions._fields, actions, strict=True):
        np.testing.assert_array_equal(answers[f'{name}_{field}'], value)
      np.testing.assert_array_equal(answers[f'{name}_probabilities'], probabilities)
