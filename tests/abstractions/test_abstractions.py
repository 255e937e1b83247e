"""Hold'em card abstraction: the hand evaluator against phevaluator, suit
isomorphism against brute force over suit permutations, equities against direct
enumeration, EMD and k-means invariants."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import abstractions
from abstractions.isomorphism import HandIndexer

phevaluator = pytest.importorskip('phevaluator')

# Distinct 5-card hands per category, high card ... straight flush (of 2,598,960).
CATEGORY_COUNTS = (1_302_540, 1_098_240, 123_552, 54_912, 10_200, 5_108, 3_744, 624, 40)


def card(text: str) -> int:
  return 4 * '23456789TJQKA'.index(text[0]) + 'cdhs'.index(text[1])


def hand(text: str) -> list[int]:
  return [card(c) for c in text.split()]


def random_hands(rng, count, size):
  return np.argsort(rng.random((count, 52)), axis=1)[:, :size].astype(np.int32)


@pytest.mark.parametrize('size', [5, 6, 7])
def test_hand_rank_matches_phevaluator_on_random_hands(size):
  # 3 x 400,000 = 1.2 million hands; phevaluator: lower is stronger, 7,462 classes.
  hands = random_hands(np.random.default_rng(size), 400_000, size)
  ours = np.asarray(jax.jit(abstractions.hand_rank)(hands))
  theirs = np.array([phevaluator.evaluate_cards(*h) for h in hands.tolist()])
  np.testing.assert_array_equal(ours, 7462 - theirs)
  assert len(np.unique(ours)) < len(ours)  # ties occur and agree
  # Straight flushes are rare in random 5-card hands; the exhaustive test below covers them.
  assert set(np.asarray(abstractions.hand_category(ours)).tolist()) >= set(range(8 if size == 5 else 9))


HANDS_BY_CATEGORY = [
  ('Ah Kh Qh Jh Th 2c 3d', 8, 'royal flush'),
  ('5d 4d 3d 2d Ad Kc Ks', 8, 'steel wheel'),
  ('9s 9h 9d 9c 2h 3h 4h', 7, 'quads'),
  ('Kc Kd Ks 2h 2d 2c 7s', 6, 'full house from two trips'),
  ('Ac 9c 7c 4c 2c Ad Ah', 5, 'flush beside trips'),
  ('Ac 2d 3h 4s 5c Kd Kh', 4, 'wheel straight beside a pair'),
  ('Tc Jd Qh Ks Ac 2d 3h', 4, 'broadway'),
  ('7c 7d 7h Ks 2c 4d 9h', 3, 'trips'),
  ('7c 7d 5h 5s 2c 2d 9h', 2, 'three pairs make two pair'),
  ('7c 7d 5h Ks 2c 4d 9h', 1, 'pair'),
  ('Ac Qd 9h 7s 5c 3d 2h', 0, 'high card'),
]


@pytest.mark.parametrize('text,category,_name', HANDS_BY_CATEGORY)
def test_every_category_including_wheels(text, category, _name):
  cards = np.array(hand(text))
  ours = int(abstractions.hand_rank(cards))
  assert ours == 7462 - phevaluator.evaluate_cards(*cards.tolist())
  assert int(abstractions.hand_category(ours)) == category


def test_wheel_is_the_lowest_straight_and_ties_are_equal():
  rank = lambda text: int(abstractions.hand_rank(jnp.array(hand(text))))
  assert rank('Ac 2d 3h 4s 5c') < rank('2c 3d 4h 5s 6c') < rank('Tc Jd Qh Ks Ac')
  assert rank('Ac 2c 3c 4c 5c') < rank('2d 3d 4d 5d 6d')
  assert rank('Ac Kd Qh Js 9c 2d 3h') == rank('As Kh Qd Jc 9h 2s 4c')  # the kickers beyond five do not count
  assert rank('Ac Kd Qh Js 9c') > rank('Ac Kd Qh Js 8c')


def test_all_five_card_hands_by_category():
  hands = np.array(list(itertools.combinations(range(52), 5)), np.int32)
  ranks = np.asarray(jax.jit(abstractions.hand_rank)(hands))
  assert len(np.unique(ranks)) == abstractions.NUM_HAND_VALUES
  counts = np.bincount(np.asarray(abstractions.hand_category(ranks)), minlength=9)
  assert tuple(counts) == CATEGORY_COUNTS


def test_hand_rank_under_jit_and_vmap():
  hands = random_hands(np.random.default_rng(0), 64, 7).reshape(8, 8, 7)
  rank = jax.jit(abstractions.hand_rank)  # eager calls: test_every_category_including_wheels
  plain = rank(hands)
  assert plain.shape == (8, 8) and plain.dtype == jnp.int32
  np.testing.assert_array_equal(jax.jit(jax.vmap(abstractions.hand_rank))(hands), plain)
  # The best five of seven equals the maximum over the 21 five-card subsets.
  subsets = hands[..., list(itertools.combinations(range(7), 5))]  # [8, 8, 21, 5]
  np.testing.assert_array_equal(rank(subsets).max(-1), plain)


def test_hand_rank_rejects_wrong_sizes():
  with pytest.raises(ValueError, match='5, 6 or 7'):
    abstractions.hand_rank(jnp.zeros((3, 4), jnp.int32))


def test_preflop_classes():
  preflop_class = jax.jit(abstractions.preflop_class)
  classes = np.asarray(preflop_class(abstractions.HOLES))
  sizes = np.bincount(classes, minlength=169)
  assert len(np.unique(classes)) == 169
  suited = (abstractions.HOLES[:, 0] & 3) == (abstractions.HOLES[:, 1] & 3)
  pair = (abstractions.HOLES[:, 0] >> 2) == (abstractions.HOLES[:, 1] >> 2)
  assert set(sizes[classes[pair]]) == {6} and len(np.unique(classes[pair])) == 13
  assert set(sizes[classes[suited]]) == {4} and len(np.unique(classes[suited])) == 78
  assert set(sizes[classes[~suited & ~pair]]) == {12} and len(np.unique(classes[~suited & ~pair])) == 78
  offsuit, suited = np.asarray(preflop_class(np.array([hand('Ah Ks'), hand('Kh Ah')])))
  assert offsuit == 13 * 11 + 12  # offsuit: (low, high)
  assert suited == 13 * 12 + 11  # suited: (high, low)
  # The lossless indexer finds the same 169 classes.
  iso = np.asarray(jax.jit(lambda h: abstractions.canonical_index(h, 'preflop'))(abstractions.HOLES))
  assert len({(a, b) for a, b in zip(classes, iso, strict=True)}) == 169


@pytest.mark.parametrize(
  'street,size', [('preflop', 169), ('flop', 1_286_792), ('turn', 13_960_050), ('river', 123_156_254)]
)
def test_class_counts(street, size):
  assert abstractions.hand_indexer(street).size == size


def brute_force_classes(rounds, hands):
  """Canonical key of each hand: the least encoding over the 24 suit permutations."""
  best = None
  for permutation in itertools.permutations(range(4)):
    mapped = (hands >> 2) * 4 + np.array(permutation)[hands & 3]
    key, start = np.zeros(len(hands), np.int64), 0
    for n in rounds:
      for column in np.sort(mapped[:, start : start + n], axis=1).T:
        key = key * 52 + column
      start += n
    best = key if best is None else np.minimum(best, key)
  return best


def all_hands(rounds):
  """Every deal of distinct cards in rounds, each round sorted: int32 [N, sum(rounds)]."""
  deals = np.zeros((1, 0), np.int32)
  for n in rounds:
    combos = np.array(list(itertools.combinations(range(52), n)), np.int32)
    joined = np.concatenate([np.repeat(deals, len(combos), 0), np.tile(combos, (len(deals), 1))], 1)
    distinct = (np.sort(joined, 1)[:, 1:] != np.sort(joined, 1)[:, :-1]).all(1)
    deals = joined[distinct]
  return deals


@pytest.mark.parametrize('rounds', [(2,), (1, 1), (2, 1), (1, 2), (1, 1, 1), (3,)])
def test_index_is_a_bijection_on_isomorphism_classes(rounds):
  hands = all_hands(rounds)
  indexer = HandIndexer(rounds)
  index = np.asarray(jax.jit(indexer.index)(hands))
  weight = np.asarray(jax.jit(indexer.weight)(hands))
  keys, classes, counts = np.unique(
    brute_force_classes(rounds, hands), return_inverse=True, return_counts=True
  )
  assert len(keys) == indexer.size
  assert index.min() == 0 and index.max() == indexer.size - 1
  # Same class <=> same index, and the weight is the class size.
  assert len(np.unique(np.stack([classes.ravel(), index]), axis=1).T) == indexer.size
  np.testing.assert_array_equal(weight, counts[classes.ravel()])


@pytest.mark.parametrize('street', ['flop', 'turn', 'river'])
def test_index_is_invariant_to_suit_permutation_and_board_order(street):
  rng = np.random.default_rng(1)
  n = {'flop': 5, 'turn': 6, 'river': 7}[street]
  deals = random_hands(rng, 20_000, n)
  permutation = np.array([rng.permutation(4) for _ in range(len(deals))])
  permuted = ((deals >> 2) * 4 + np.take_along_axis(permutation, deals & 3, axis=1)).astype(np.int32)
  permuted[:, 2:] = rng.permuted(permuted[:, 2:], axis=1)
  permuted[:, :2] = permuted[:, 1::-1]
  index = jax.jit(lambda d: abstractions.canonical_index(d, street))
  ours = np.asarray(index(deals))
  np.testing.assert_array_equal(ours, np.asarray(index(permuted)))
  assert ours.min() >= 0 and ours.max() < abstractions.hand_indexer(street).size
  # Hole and board are separate rounds: swapping a hole card with a board card changes the class.
  swapped = deals.copy()
  swapped[:, [0, 2]] = swapped[:, [2, 0]]
  same_ranks_and_suits = (deals[:, 0] >> 2 == deals[:, 2] >> 2) | (deals[:, 0] & 3 == deals[:, 2] & 3)
  differs = np.asarray(index(swapped)) != ours
  assert differs[~same_ranks_and_suits].all()


@pytest.mark.slow
def test_flop_classes_exhaustively():
  indexer = abstractions.hand_indexer('flop')
  flops = np.array(list(itertools.combinations(range(52), 3)), np.int32)
  seen = np.zeros(indexer.size, bool)
  index = jax.jit(indexer.index)
  for hole in abstractions.HOLES:
    boards = flops[~np.isin(flops, hole).any(1)]
    seen[np.asarray(index(np.concatenate([np.broadcast_to(hole, (len(boards), 2)), boards], 1)))] = True
  assert seen.all()


def test_board_equities_equal_direct_enumeration():
  rng = np.random.default_rng(2)
  boards = random_hands(rng, 3, 5)
  fast, valid = (np.asarray(x) for x in jax.jit(abstractions.board_equities)(boards))
  assert valid.sum(1).tolist() == [1081] * 3
  direct = np.asarray(
    jax.jit(abstractions.equity)(
      np.broadcast_to(abstractions.HOLES, (3, 1326, 2)), np.broadcast_to(boards[:, None], (3, 1326, 5))
    )
  )
  np.testing.assert_allclose(fast[valid], direct[valid], atol=1e-6)
  # And a pure-Python count with phevaluator for a few pairs.
  for b, h in [(0, 5), (1, 700), (2, 1300)]:
    if not valid[b, h]:
      continue
    hole = abstractions.HOLES[h].tolist()
    ours = phevaluator.evaluate_cards(*hole, *boards[b].tolist())
    rest = [c for c in range(52) if c not in hole and c not in boards[b]]
    score = [
      1.0
      if (theirs := phevaluator.evaluate_cards(a, c, *boards[b].tolist())) > ours
      else 0.5 * (theirs == ours)
      for a, c in itertools.combinations(rest, 2)
    ]
    assert len(score) == 990
    assert fast[b, h] == pytest.approx(sum(score) / 990, abs=1e-6)


def test_equity_known_values():
  board = jnp.array(hand('Ah Kh Qh Jh Th'))
  assert (
    float(abstractions.equity(jnp.array(hand('2c 3d')), board)) == 0.5
  )  # everyone plays the royal flush: all tie
  assert float(abstractions.equity(jnp.array(hand('As Ad')), jnp.array(hand('Ac Ah 2d 7s 9c')))) == 1.0
  # A low flush on four hearts loses exactly to the 324 pairs holding one of the 8 higher free hearts.
  hole, board = jnp.array(hand('2h 3c')), jnp.array(hand('Ah Kh 9h 5h 7d'))
  assert float(abstractions.equity(hole, board)) == pytest.approx((990 - 324) / 990)


def test_emd_equals_the_cdf_formula():
  rng = np.random.default_rng(3)
  p, q = rng.random((2, 100, 50))
  p /= p.sum(-1, keepdims=True)
  q /= q.sum(-1, keepdims=True)
  expected = np.abs(np.cumsum(p, -1) - np.cumsum(q, -1)).sum(-1) / 50
  np.testing.assert_allclose(np.asarray(abstractions.emd(p, q)), expected, rtol=1e-6)
  # All mass moved across three of four bins of width 1/4.
  assert float(abstractions.emd(jnp.array([1.0, 0, 0, 0]), jnp.array([0, 0, 0, 1.0]))) == pytest.approx(0.75)
  scipy_stats = pytest.importorskip('scipy.stats')
  centres = (np.arange(50) + 0.5) / 50
  for i in range(5):
    assert float(abstractions.emd(p[i], q[i])) == pytest.approx(
      scipy_stats.wasserstein_distance(centres, centres, p[i], q[i]), rel=1e-6
    )


def clustered_histograms(rng, n=3000, bins=20):
  means = rng.random(6)
  values = np.clip(means[rng.integers(0, 6, n)][:, None] + 0.1 * rng.standard_normal((n, 40)), 0, 0.999)
  return np.stack([np.bincount((v * bins).astype(int), minlength=bins) for v in values]).astype(np.float32)


def test_kmeans_objective_never_increases_and_beats_random():
  rng = np.random.default_rng(4)
  histograms = clustered_histograms(rng)
  weights = rng.integers(1, 25, len(histograms)).astype(np.float32)
  fit = jax.jit(abstractions.kmeans, static_argnums=(2, 3))
  result = fit(jax.random.key(0), histograms, 8, 15, weights)
  objectives = np.asarray(result.objectives)
  assert np.all(np.diff(objectives) <= 1e-7)
  assert objectives[-1] < objectives[0]
  cdfs = np.asarray(abstractions.cdf(histograms))
  mine = np.abs(cdfs - np.asarray(result.centres)[np.asarray(result.assignment)]).mean(-1)
  assert np.sum(weights * mine) / weights.sum() == pytest.approx(objectives[-1], rel=1e-5)
  # Every point sits at its nearest centre.
  distances = np.abs(cdfs[:, None] - np.asarray(result.centres)[None]).mean(-1)
  chosen = np.take_along_axis(distances, np.asarray(result.assignment)[:, None], 1)[:, 0]
  np.testing.assert_allclose(chosen, distances.min(1), atol=1e-6)
  # A random assignment, even with its own best (median) centres, is worse.
  labels = rng.integers(0, 8, len(histograms))
  centres = np.stack([np.median(cdfs[labels == k], axis=0) for k in range(8)])
  random_objective = np.sum(weights * np.abs(cdfs - centres[labels]).mean(-1)) / weights.sum()
  assert objectives[-1] < 0.5 * random_objective


def test_kmeans_is_deterministic_given_the_key():
  histograms = clustered_histograms(np.random.default_rng(5), n=1000)
  fit = jax.jit(abstractions.kmeans, static_argnums=(2, 3))
  a, b = fit(jax.random.key(7), histograms, 6, 5), fit(jax.random.key(7), histograms, 6, 5)
  np.testing.assert_array_equal(np.asarray(a.assignment), np.asarray(b.assignment))
  np.testing.assert_array_equal(np.asarray(a.centres), np.asarray(b.centres))
  other = fit(jax.random.key(8), histograms, 6, 5)
  assert not np.array_equal(np.asarray(a.centres), np.asarray(other.centres))  # the key is what seeds


def test_percentile_buckets_have_equal_mass():
  rng = np.random.default_rng(6)
  values = rng.random(100_000)
  thresholds = abstractions.percentile_thresholds(values, None, 8)
  counts = np.bincount(np.asarray(abstractions.percentile_buckets(values, thresholds)), minlength=8)
  assert counts.min() > 12_000 and counts.max() < 13_000
  weights = np.where(values < 0.5, 3.0, 1.0)  # the lower half carries 3/4 of the mass
  thresholds = abstractions.percentile_thresholds(values, weights, 4)
  assert thresholds[2] == pytest.approx(0.5, abs=0.01)
  assert np.all(np.diff(np.asarray(abstractions.percentile_buckets(np.sort(values), thresholds))) >= 0)


def test_percentile_buckets_with_heavy_ties_are_all_non_empty_and_monotone():
  """Equity codes k / 1980 where single values hold several buckets' worth of mass (as on
  the river): every bucket gets a distinct value, and a higher value never a lower bucket."""
  rng = np.random.default_rng(7)
  codes = np.arange(1981)
  mass = rng.random(1981) * (rng.random(1981) < 0.3)  # most codes never occur
  mass[[0, 990, 1980, 1500]] = [40.0, 25.0, 30.0, 18.0]  # ties far heavier than 1 / k of the total
  k = 200
  assert mass.max() > 5 * mass.sum() / k and (mass > 0).sum() >= k
  thresholds = abstractions.percentile_thresholds(codes, mass, k)
  assert thresholds.shape == (k - 1,) and np.all(np.diff(thresholds) > 0)
  present = codes[mass > 0]
  buckets = np.asarray(abstractions.percentile_buckets(present, thresholds))
  assert np.all(np.diff(buckets) >= 0) and buckets[0] == 0 and buckets[-1] == k - 1
  assert np.array_equal(np.unique(buckets), np.arange(k))  # none empty
  # Away from the ties the buckets keep about equal mass.
  per_bucket = np.bincount(buckets, weights=mass[mass > 0], minlength=k)
  assert np.median(per_bucket) == pytest.approx(mass.sum() / k, rel=0.5)
  # Deterministic, and the old collision case: fewer distinct values than buckets fills the lowest.
  np.testing.assert_array_equal(abstractions.percentile_thresholds(codes, mass, k), thresholds)
  few = abstractions.percentile_thresholds(np.array([0.1, 0.5, 0.9]), np.array([1.0, 100.0, 1.0]), 3)
  np.testing.assert_array_equal(few, [0.1, 0.5])
