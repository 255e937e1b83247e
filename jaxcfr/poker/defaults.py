"""Defaults of the poker layer's commands and library calls (no imports: the CLI reads them when it
builds its parser)."""

BETS = '60%,e,a'  # first bets on every street (postflop-solver's syntax)
RAISES = '2.5x'
FORCE_ALL_IN = 0.15  # a bet that leaves less than this times the pot behind becomes the all-in
TARGET_PCT = 0.5  # exploitability target, % of the starting pot
MAX_ITERATIONS = 1000  # the iteration cap when only a target is given
EVAL_EVERY = 10  # iterations between exact exploitability checks
ALGORITHM = 'dcfr'
# The subgame solver's hyper-parameters where they differ from the registry's (the papers'): DCFR
# with gamma 3 reached 0.5% of the pot in 10% fewer iterations than with 2 on 20 random river spots
# and 4 turn spots (`experiments/bench_subgame.py --gammas 2,3`), as postflop-solver's DCFR does.
SUBGAME_HYPERPARAMETERS = {'dcfr': {'gamma': 3.0}}
MAX_BYTES = 8 * 2**30  # refuse spots whose solve would need more memory than this (estimated)
MATCH_HANDS = 10_000  # `jaxcfr match` hands
PUSH_FOLD_SMALL_BLIND = 0.5  # `jaxcfr pushfold`'s small blind, in big blinds
PUSH_FOLD_CHART_MAX = 25.0  # its chart's deepest stack (bb)
PUSH_FOLD_CHART_STEP = 0.1  # and its grid (bb)
CARRY_MATCHES = 200  # `jaxcfr match --carry-stacks` matches (mirrored pairs)
CARRY_HANDS = 1000  # and its hand limit per match
SMALL_BLIND, BIG_BLIND, STACK_BB = 50, 100, 200.0  # the game of `match` (ACPC's: 50/100, 20,000 chips)
MATCH_BATCH = 2048  # hands the match engine plays at once (a duplicate deal pair takes two)
AIVAT_SAMPLES = 8192  # AIVAT's preflop Monte Carlo boards per deal (`eval.aivat`)
AIVAT_ROLLOUTS = 16  # AIVAT's playouts per node with the rollout value
LBR_HANDS = (
  2_000  # `jaxcfr blueprint evaluate --lbr` hands (local best response; every deal is played in both seats)
)
LBR_ACTIONS = 'c,c,fcpa,fcpa'  # LBR's actions per street (`eval.lbr.parse_actions`), the paper's main setting
LBR_BATCH = 512  # hands local best response plays at once (its queries cover all 1,326 hole pairs)
# `jaxcfr acpc` (an ACPC dealer's table): the seconds a decision may take, the dealer's default average
# per hand (its --t_per_hand); and the seconds of silence from the dealer that end a match, a minute
# past the dealer's own limit per response (--t_response; a slow opponent is the dealer's to judge).
ACPC_RESPONSE_SECONDS = 7.0
ACPC_STALL_SECONDS = 660.0
BASELINES = (
  'always-call',
  'always-fold',
  'always-pot',
  'random',
  'equity',
  'pushfold',
)  # = baselines.REGISTRY
# The search bot (`search_policy`, `search:` policies, `jaxcfr play --search`): by default the bot that
# beat its blueprint head to head and was less exploitable than it under paired LBR (docs/benchmarks.md,
# the depth-limited search bot): the flop and the turn searched depth-limited (the turn's leaves on 6
# of the 48 river cards), the river to the end, each with the Maxmargin-prior gadget, within the
# design's budget per decision (a flop decision takes longer: its leaf values, then 10 iterations).
THINK_SECONDS = 0.1  # the search bot's wall seconds per decision
SEARCH_STREETS = (1, 2, 3)  # the streets it re-solves: flop (depth-limited), turn, river
# Warm starts of the search bot's re-solves (flop, river): iterations of the blueprint's strategy a
# re-solve starts from; none. Measured on a 20-minute small blueprint (`experiments/warm_start.py`): on
# the river any warm start left the re-solve further from equilibrium after 10 to 80 iterations; on
# the flop one iteration's gain on 12 spots did not hold on 20 more.
WARM_START = (0, 0)
# Safe re-solving (`search.SearchConfig.gadget`: the river, the flop, a depth-limited turn): the gadgets
# that let the opponent take, hand by hand, its best-response value against the blueprint instead of
# entering the re-solved subgame.
GADGETS = ('resolve', 'maxmargin', 'maxmargin-prior')
# 'maxmargin-prior': the share of the opponent's reach at the root that is its tracked range (scaled to
# Maxmargin's units), the rest Maxmargin's pick, as a restricted Nash response holds its opponent to a
# model part of the time. Chosen on 20 river spots of the 5-minute small blueprint after 100 iterations
# (`experiments/safe_resolving.py`): of 0.1, 0.3, 0.5 and 0.7, the share at which no hand's median
# largest gain over its alternative was above 0 and the bot won most against the blueprint.
PRIOR_SHARE = 0.5
GADGET = 'maxmargin-prior'  # the search bot's gadget (None: unsafe re-solving)
NO_GADGET = 'none'  # `--search-gadget none`: unsafe re-solving
TURN_SEARCHES = ('full', 'depth-limited')  # a turn re-solve: to the end of the hand, or its round alone
TURN_SEARCH = 'depth-limited'
RIVER_CARDS = 6  # a depth-limited turn's leaves on this many river cards (None: all 48)
# `jaxcfr blueprint train --algorithm deep-cfr`: sized for a CPU of a few cores (an update on the small
# preset spends most of its time training, the rest traversing). On a GPU or TPU, DEEP_BLUEPRINT_ACCELERATOR.
DEEP_BLUEPRINT = {
  'traversals': 256,
  'advantage_layers': (128, 128),
  'advantage_steps': 32,
  'advantage_batch_size': 1024,
  'advantage_capacity': 1_000_000,
  'reinitialize': False,
  'strategy_layers': (128, 128),
  'strategy_steps': 3000,
  'strategy_batch_size': 1024,
  'strategy_capacity': 1_000_000,
  'learning_rate': 1e-3,
}
# The same on a GPU or TPU: 16x the traversals per update and 8x the minibatches (work the device
# does in about the time a CPU takes for the above), wider networks. Flags still override each entry.
DEEP_BLUEPRINT_ACCELERATOR = {
  **DEEP_BLUEPRINT,
  'traversals': 4096,
  'advantage_layers': (256, 256),
  'advantage_batch_size': 8192,
  'strategy_layers': (256, 256),
  'strategy_batch_size': 8192,
}
