"""The poker layer: where jaxcfr's solvers meet `abstractions`' card and bet arithmetic.

Heads-up no-limit hold'em as a public tree (betting actions and board cards) times a vector of
private hands per player, in the one canonical order of hole-card pairs (`abstractions.HOLES`).

    from jaxcfr import poker
    spec = poker.SpotSpec('Td9d6hQc3s', pot=200, stack=900, ranges=('66+,AJo+', 'QQ-22,ATo+'))
    result = poker.solve(spec, target_pct=0.5)      # exploitability in % of the pot, EVs, policy

A folder per role; imports only go down this list (`tests/core/test_layout.py` keeps the rule):

- `rules/`: cards and decks, ranges, the real game (`nlhe`: the batched engine and the policy
  protocol), ranges over hole pairs in a real hand (`hands`).
- `subgame/`: the public tree (`tree`), its arrays and spots (`game`), turn trees in blocks
  (`blocked`), showdown and fold values (`showdown`, the `native` CPU kernel), the CFR-family
  solvers over `[nodes, actions, hands]` (`solver`), safe re-solving (`resolving`), one spot end to
  end (`solving`).
- `runtime/`: a blueprint and its tables answering real states with NumPy only (`policy`), the
  code the library's blueprint policy runs and an exported bot copies (`RUNTIME_MODULES`).
- `blueprint/`: the abstract game, its trainers, the file and the policy, hold'em features.
- `search/`: the search bot (`bot`) and the flop's depth-limited solve (`depth_limited`).
- `eval/`: baseline policies, the match engine, local best response.
- `bots.py`: a policy from its spec (a baseline name, a policy file, `search:SPEC`); `play.py`: a
  person against a bot in the terminal.

The command-line front ends live in `jaxcfr.cli`. Modules that moved into the folders still import
under their old names (`from jaxcfr.poker import solving`, `jaxcfr.poker.nlhe`, ...).
"""

import importlib
import importlib.abc
import importlib.machinery
import sys

# Public name -> its module; loaded on first use, so that `jaxcfr --help` and the `subgame`
# parser do not pay for JAX and the hand evaluator.
_HOMES = {
  'Deck': 'rules.cards',
  'PokerInputError': 'rules.cards',
  'parse_board': 'rules.cards',
  'parse_range': 'rules.ranges',
  'SpotSpec': 'subgame.solving',
  'SubgameResult': 'subgame.solving',
  'load_strategy': 'subgame.solving',
  'save_strategy': 'subgame.solving',
  'solve': 'subgame.solving',
  'subgame_solver': 'subgame.solver',
  'PublicTree': 'subgame.game',
  'Spot': 'subgame.game',
  'Subgame': 'subgame.game',
  'TreeShape': 'subgame.game',
  'build_tree': 'subgame.game',
  'envelope': 'subgame.game',
  'make_spot': 'subgame.game',
  'build_subgame': 'subgame.game',
  'TreeConfig': 'subgame.tree',
  'street_sizes': 'subgame.tree',
  'MatchResult': 'eval.match',
  'play_match': 'eval.match',
  'resolve_policy': 'bots',
  'SearchPolicy': 'search.bot',
  'search_policy': 'search.bot',
  'LBRResult': 'eval.lbr',
  'local_best_response': 'eval.lbr',
}

# The modules' names before the layer was split into folders -> where they are now. `from jaxcfr.poker
# import solving` and `import jaxcfr.poker.solving` both give the module at its new place.
MOVED = {
  'cards': 'rules.cards',
  'ranges': 'rules.ranges',
  'nlhe': 'rules.nlhe',
  'tree': 'subgame.tree',
  'blocked': 'subgame.blocked',
  'showdown': 'subgame.showdown',
  'native': 'subgame.native',
  'solver': 'subgame.solver',
  'solving': 'subgame.solving',
  'features': 'blueprint.features',
  'depth_limited': 'search.depth_limited',
  'baselines': 'eval.baselines',
  'match': 'eval.match',
  'lbr': 'eval.lbr',
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Imports `jaxcfr.poker.OLD` (a name in `MOVED`) as the module at its new place, the same object."""

  def find_spec(self, fullname, path=None, target=None):
    package, _, old = fullname.rpartition('.')
    if package != __name__ or old not in MOVED:
      return None
    return importlib.machinery.ModuleSpec(fullname, self)

  def create_module(self, spec):
    module = importlib.import_module(f'{__name__}.{MOVED[spec.name.rpartition(".")[2]]}')
    spec.loader_state = module.__spec__  # the import system sets the alias's spec on it next
    return module

  def exec_module(self, module):
    module.__spec__ = module.__spec__.loader_state  # its own spec back: it is loaded already


sys.meta_path.append(_MovedFinder())


def __getattr__(name: str):
  if name in MOVED:
    return importlib.import_module(f'{__name__}.{name}')
  if name not in _HOMES:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  return getattr(importlib.import_module(f'{__name__}.{_HOMES[name]}'), name)


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
