"""abstractions: hold'em card and bet abstraction for jaxcfr.

Cards are ids 0..51, `4 * rank + suit` (rank 0 = deuce ... 12 = ace).

    import abstractions
    abstractions.hand_rank(cards)               # [..., 5|6|7] -> int32 [...], higher is stronger
    abstractions.preflop_class(hole)            # [..., 2] -> 0..168
    abstractions.canonical_index(cards, 'flop') # suit-isomorphism class of (hole, board)
    tables = abstractions.load('tables/')       # built by `jaxcfr abstract --out tables/`
    tables.buckets_of(hole, board)              # [..., 4] buckets per street, jittable
    abstractions.load_tables('tables/')         # the same tables as NumPy arrays (`lookup.BucketTables`)

Depends on jaxcfr's environment (JAX, NumPy, tqdm); jaxcfr never imports it. The modules `arrays`,
`indexing`, `ranking`, `lookup` and `betting` import no JAX: the card arithmetic is written once against
an array module (`arrays`), NumPy there and JAX in `isomorphism` and `evaluator`, so that the runtime
(`jaxcfr.poker.runtime`) runs it without JAX.
"""

from abstractions.betting import (
  Action,
  BetAbstraction,
  BettingState,
  NoLimitRules,
  apply_action,
  initial_state,
  is_legal,
  legal_actions,
  min_raise_to,
  pseudo_harmonic,
  rules_dict,
  translate,
)
from abstractions.clustering import (
  KMeansResult,
  assign,
  cdf,
  emd,
  kmeans,
  kmeans_plus_plus,
  percentile_buckets,
  percentile_thresholds,
)
from abstractions.evaluator import hand_category, hand_rank
from abstractions.features import board_equities, equity, hole_index
from abstractions.indexing import HOLES, STREETS
from abstractions.isomorphism import HandIndexer, canonical_index, hand_indexer, preflop_class
from abstractions.lookup import (
  AbstractionError,
  BucketTables,
  fingerprint,
  is_table_directory,
  load_metadata,
  load_tables,
)
from abstractions.ranking import CATEGORIES, NUM_HAND_VALUES
from abstractions.tables import (
  PROFILES,
  Abstraction,
  BuildSettings,
  board_classes,
  build_tables,
  check_output,
  load,
  save,
)

__all__ = [
  'CATEGORIES',
  'HOLES',
  'NUM_HAND_VALUES',
  'PROFILES',
  'STREETS',
  'Abstraction',
  'AbstractionError',
  'Action',
  'BetAbstraction',
  'BettingState',
  'BucketTables',
  'BuildSettings',
  'HandIndexer',
  'KMeansResult',
  'NoLimitRules',
  'apply_action',
  'assign',
  'board_classes',
  'board_equities',
  'build_tables',
  'canonical_index',
  'cdf',
  'check_output',
  'emd',
  'equity',
  'fingerprint',
  'hand_category',
  'hand_indexer',
  'hand_rank',
  'hole_index',
  'initial_state',
  'is_legal',
  'is_table_directory',
  'kmeans',
  'kmeans_plus_plus',
  'legal_actions',
  'load',
  'load_metadata',
  'load_tables',
  'min_raise_to',
  'percentile_buckets',
  'percentile_thresholds',
  'preflop_class',
  'pseudo_harmonic',
  'rules_dict',
  'save',
  'translate',
]
