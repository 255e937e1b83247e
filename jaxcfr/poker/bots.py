"""A policy of the real game from its spec, as `jaxcfr match`, `jaxcfr play`, LBR and the experiments
name them: a baseline (`eval.baselines.REGISTRY`), a policy file (`blueprint.load_policy`), or
`search:` and either of those (the search bot over it, `search.bot.search_policy`), or a Chipzen bot
(`chipzen:MODULE:CLASS`, `chipzen:FILE.py`, the SDK's examples `chipzen:call` ...:
`tables.chipzen.chipzen_policy`), or a bot directory `jaxcfr bot export` wrote (what runs at the
table: its packed blueprint and push or fold at short stacks, `tables.bundle.load_bot`), or `depth:` and
any of those (the depth-aware bot: the push-or-fold equilibrium at short stacks, `depth.DepthAware`).

    bot = resolve_policy('search:bp.npz')         # the search bot over a blueprint
    bot = resolve_policy('depth:bp.npz')          # pushes or folds below its depth, else the blueprint
    policy = resolve_policy('equity')

It sits above the blueprint, search and evaluation folders because a spec can name any of them.
"""

from __future__ import annotations

import os

from jaxcfr.poker import blueprint, defaults
from jaxcfr.poker.eval import baselines, depth
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.tables import bundle, chipzen, export

SEARCH_PREFIX = 'search:'
DEPTH_PREFIX = 'depth:'


def resolve_policy(
  spec: str,
  think_seconds: float | None = None,
  streets: tuple[int, ...] | None = None,
  iterations: int | None = None,
  warm_start: int | tuple[int, int] | None = None,
  gadget: str | None = None,
  turn_depth_limited: bool | None = None,
  *,
  seed: int = 0,
  tables=None,
  river_cards: int | None = None,
  flop_seconds: float | None = None,
):
  """A baseline by name (`baselines.REGISTRY`), a policy file loaded by `blueprint.load_policy`, a
  Chipzen bot (`chipzen:...`, `tables.chipzen.chipzen_policy`), an exported bot directory
  (`tables.bundle.load_bot`; under `search:` its blueprint), or `search:`
  and either of those: the search bot over it (`jaxcfr.poker.search.search_policy`, with its defaults
  unless `think_seconds`, the re-solved `streets`, a fixed count of `iterations` per re-solve (with no
  time limit and no target), `warm_start` iterations of the blueprint, a `gadget` (`defaults.NO_GADGET`:
  none, unsafe re-solving), `turn_depth_limited`, `river_cards` (a depth-limited turn's sampled river
  cards) or `flop_seconds` (a flop decision's seconds) are given; its sampling `seed`). `tables`: a
  policy file's abstraction tables (default: the directory it recorded). Raises ValueError with one line
  naming the problem. `depth:` and any of those, or several comma-separated (blueprints of different
  depths): the depth-aware bot over them (`depth.DepthAware`: push or fold at short stacks, else the
  policy built nearest the effective stack)."""
  if spec.startswith(DEPTH_PREFIX):
    inner = spec[len(DEPTH_PREFIX) :]
    if not inner or inner.startswith(DEPTH_PREFIX):
      raise ValueError(f'{spec!r}: depth: takes a policy spec, e.g. depth:bp.npz or depth:search:bp.npz')
    options = dict(think_seconds=think_seconds, streets=streets, iterations=iterations, warm_start=warm_start)
    options.update(gadget=gadget, turn_depth_limited=turn_depth_limited, river_cards=river_cards)
    options.update(flop_seconds=flop_seconds, seed=seed, tables=tables)
    return depth.DepthAware([resolve_policy(part, **options) for part in inner.split(',')])
  if spec.startswith(SEARCH_PREFIX):
    inner = spec[len(SEARCH_PREFIX) :]
    if not inner or inner.startswith(SEARCH_PREFIX):
      raise ValueError(f'{spec!r}: search: takes a blueprint file or a baseline name, e.g. search:bp.npz')
    options = {} if think_seconds is None else {'think_seconds': think_seconds}
    if iterations is not None:
      options = {'think_seconds': None, 'iterations': iterations, 'target_pct': None}
    options['seed'] = seed
    if streets is not None:
      options['streets'] = streets
    if warm_start is not None:
      options['warm_start'] = warm_start
    if gadget is not None:
      options['gadget'] = None if gadget == defaults.NO_GADGET else gadget
    if turn_depth_limited is not None:
      options['turn_depth_limited'] = turn_depth_limited
    if river_cards is not None:
      options['river_cards'] = river_cards
    if flop_seconds is not None:
      options['flop_seconds'] = flop_seconds
    over = resolve_policy(inner, tables=tables)
    if isinstance(over, depth.DepthAware):  # an exported bot: the search runs over its blueprint
      if len(over.policies) > 1:
        raise ValueError(f'{spec!r}: search: runs over one blueprint; write depth:search:A,search:B')
      over = over.deep
    return search.search_policy(over, name=spec, **options)
  if spec in baselines.REGISTRY:
    return baselines.REGISTRY[spec]()
  if spec.startswith(chipzen.PREFIX):
    return chipzen.chipzen_policy(spec)
  if export.is_bot_directory(spec):  # a bot directory `jaxcfr bot export` wrote: its packed blueprint
    return bundle.load_bot(os.path.join(spec, 'data'), name=f'exported:{spec}')
  if not os.path.exists(spec):
    raise ValueError(
      f'{spec!r} is neither a baseline ({", ".join(baselines.REGISTRY)}) nor an existing policy file'
    )
  try:
    return blueprint.load_policy(spec, tables)
  except (OSError, KeyError) as error:
    raise ValueError(f'{spec!r}: cannot load a policy: {error}') from None
