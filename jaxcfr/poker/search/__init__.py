"""Real-time search: the search bot (`bot`: re-solving the flop, turn and river over a blueprint) and
the depth-limited solve of a flop or turn round (`depth_limited`).

    from jaxcfr.poker.search import search_policy
    bot = search_policy(blueprint_policy)   # depth-limited flop and turn, river, Maxmargin-prior
"""

import importlib

_HOMES = {'SearchPolicy': 'bot', 'search_policy': 'bot'}


def __getattr__(name: str):
  if name not in _HOMES:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  return getattr(importlib.import_module(f'{__name__}.{_HOMES[name]}'), name)


__all__ = ['SearchPolicy', 'search_policy']
