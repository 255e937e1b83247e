"""The poker layer: where jaxcfr's solvers meet `abstractions`' card and bet arithmetic.

Heads-up no-limit hold'em as a public tree (betting actions and board cards) times a vector of
private hands per player, in the one canonical order of hole-card pairs (`abstractions.HOLES`).

    from jaxcfr import poker
    spec = poker.SpotSpec('Td9d6hQc3s', pot=200, stack=900, ranges=('66+,AJo+', 'QQ-22,ATo+'))
    result = poker.solve(spec, target_pct=0.5)      # exploitability in % of the pot, EVs, policy

Modules: `cards` and `ranges` (input), `tree` (the betting tree), `subgame` (its arrays, spots,
the vector-CFR passes and exact best response), `showdown` (the O(n) sweep), `solver` (CFR-family
solvers over `[nodes, actions, hands]`), `solving` (one spot end to end), `cli` (`jaxcfr subgame`).
The real game, whole hands: `nlhe` (the batched engine and the policy protocol), `baselines`
(always-call, always-fold, always-pot, random, equity), `match` and `match_cli` (`jaxcfr match`), `lbr` and
`lbr_cli` (local best response, `jaxcfr blueprint evaluate --lbr`), `search` (the search bot: re-solving the
turn and river over a blueprint, `search_policy`; `search:FILE` in `jaxcfr match`), `play` and `play_cli`
(a person against a bot in the terminal, `jaxcfr play`, on pokerkit).
"""

import importlib

# Public name -> its module; loaded on first use, so that `jaxcfr --help` and the `subgame`
# parser do not pay for JAX and the hand evaluator.
_HOMES = {
  'Deck': 'cards',
  'PokerInputError': 'cards',
  'parse_board': 'cards',
  'parse_range': 'ranges',
  'SpotSpec': 'solving',
  'SubgameResult': 'solving',
  'load_strategy': 'solving',
  'save_strategy': 'solving',
  'solve': 'solving',
  'subgame_solver': 'solver',
  'PublicTree': 'subgame',
  'Spot': 'subgame',
  'Subgame': 'subgame',
  'TreeShape': 'subgame',
  'build_tree': 'subgame',
  'envelope': 'subgame',
  'make_spot': 'subgame',
  'build_subgame': 'subgame',
  'TreeConfig': 'tree',
  'street_sizes': 'tree',
  'MatchResult': 'match',
  'play_match': 'match',
  'resolve_policy': 'baselines',
  'SearchPolicy': 'search',
  'search_policy': 'search',
  'LBRResult': 'lbr',
  'local_best_response': 'lbr',
}


def __getattr__(name: str):
  if name not in _HOMES:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  return getattr(importlib.import_module(f'jaxcfr.poker.{_HOMES[name]}'), name)


__all__ = [
  'Deck',
  'LBRResult',
  'MatchResult',
  'PokerInputError',
  'PublicTree',
  'Spot',
  'SearchPolicy',
  'SpotSpec',
  'Subgame',
  'SubgameResult',
  'TreeConfig',
  'TreeShape',
  'build_subgame',
  'build_tree',
  'envelope',
  'load_strategy',
  'local_best_response',
  'make_spot',
  'parse_board',
  'parse_range',
  'play_match',
  'resolve_policy',
  'save_strategy',
  'search_policy',
  'solve',
  'street_sizes',
  'subgame_solver',
]
