"""The one registry of algorithms: name -> factory and the schema of its hyper-parameters.

    jaxcfr.algorithms.REGISTRY['dcfr'].hyperparameters   # (alternating, alpha, beta, gamma)
    jaxcfr.make_solver('dcfr', alpha=2.0)                 # validated, defaults filled in

The command line builds its flags, help and validation from this table, so a
new variant is one entry here (and its factory). Importing this module imports
no JAX: factories are named `'module:function'` and imported when called.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
from typing import Any

FULL_WIDTH, SAMPLED, DEEP = 'full-width', 'sampled', 'deep'


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
  """One keyword argument of a factory.

  `kind` is 'int', 'float', 'bool', 'layers' (a tuple of positive widths) or
  'batch' (a positive int, or None for "the whole reservoir"). Numbers must
  lie in `[low, high]` (`(low, high]` when `low_open`); `optional` allows
  None ("off"). `flag` is the command-line spelling; `negated` flags store
  False (`--simultaneous` sets `alternating=False`).
  """

  name: str
  kind: str
  default: Any
  help: str
  low: float = -math.inf
  high: float = math.inf
  low_open: bool = False
  optional: bool = False
  flag: str = ''
  negated: bool = False

  @property
  def cli_flag(self) -> str:
    return self.flag or '--' + self.name.replace('_', '-')

  def check(self, value: Any, algorithm: str) -> Any:
    """`value` validated and normalised (tuples for layers); ValueError naming the parameter."""
    if value is None and (self.optional or self.kind == 'batch'):
      return None
    where = f'{algorithm}: {self.name}' if algorithm else self.name
    if self.kind == 'bool':
      if not isinstance(value, bool):
        raise ValueError(f'{where} must be true or false, got {value!r}')
      return value
    if self.kind == 'layers':
      try:
        layers = tuple(value)
      except TypeError:
        raise ValueError(f'{where} must be a sequence of layer widths, got {value!r}') from None
      if not layers or not all(_is_int(n) and n >= 1 for n in layers):
        raise ValueError(f'{where} must be positive layer widths, got {value!r}')
      return tuple(int(n) for n in layers)
    if self.kind in ('int', 'batch'):
      if not _is_int(value):
        raise ValueError(f'{where} must be an integer, got {value!r}')
      value = int(value)
    elif not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
      raise ValueError(f'{where} must be a finite number, got {value!r}')
    below = value <= self.low if self.low_open else value < self.low
    if below or value > self.high:
      integers = {1: 'a positive integer', 0: 'a non-negative integer'}
      if self.kind in ('int', 'batch') and self.high == math.inf and self.low in integers:
        raise ValueError(f'{where} must be {integers[self.low]}, got {value!r}')
      if self.kind == 'float' and self.low == 0 and self.low_open and self.high == math.inf:
        raise ValueError(f'{where} must be a positive number, got {value!r}')
      raise ValueError(f'{where} must be in {self.range_text()}, got {value!r}')
    return value

  def parse(self, text: str) -> Any:
    """The value that command-line `text` stands for ('all' for a whole-reservoir batch,
    'W,W' for layers), checked; ValueError with one line."""
    if self.kind == 'batch' and text == 'all':
      return None
    if self.kind == 'layers':
      try:
        return self.check(tuple(int(part) for part in text.split(',')), '')
      except ValueError:
        raise ValueError(f'expected positive comma-separated layer widths, got {text!r}') from None
    kind = int if self.kind in ('int', 'batch') else float
    try:
      value = kind(text)
    except ValueError:
      raise ValueError(f'expected {"an integer" if kind is int else "a number"}, got {text!r}') from None
    return self.check(value, '')

  def shown(self, value: Any = None) -> str:
    """`value` (default: the default) as the help text shows it."""
    value = self.default if value is None else value
    if value is None:
      return 'off'
    if isinstance(value, tuple):
      return ','.join(map(str, value))
    return f'{value:,}' if _is_int(value) else f'{value:g}'

  def range_text(self) -> str:
    left = '(' if self.low_open or self.low == -math.inf else '['
    right = ')' if self.high == math.inf else ']'
    return f'{left}{_number(self.low)}, {_number(self.high)}{right}'


@dataclasses.dataclass(frozen=True)
class Algorithm:
  name: str
  family: str  # FULL_WIDTH, SAMPLED or DEEP
  factory: str  # 'module:function'
  summary: str
  hyperparameters: tuple[Hyperparameter, ...]

  def parameter(self, name: str) -> Hyperparameter | None:
    return next((h for h in self.hyperparameters if h.name == name), None)

  def defaults(self) -> dict[str, Any]:
    return {h.name: h.default for h in self.hyperparameters}

  def resolve(self, **values) -> dict[str, Any]:
    """Every hyper-parameter's value: `values` validated, defaults for the rest."""
    unknown = [name for name in values if self.parameter(name) is None]
    if unknown:
      accepted = ', '.join(h.name for h in self.hyperparameters) or 'none'
      raise ValueError(f'{self.name} takes no hyper-parameter {unknown[0]!r} (it takes: {accepted})')
    return {h.name: h.check(values.get(h.name, h.default), self.name) for h in self.hyperparameters}

  def function(self):
    """The factory itself (no validation: it also takes traced hyper-parameters, for `vmap`)."""
    module, name = self.factory.split(':')
    return getattr(importlib.import_module(module), name)

  def make(self, *, devices: int = 1, **values):
    """The solver, built by the factory from validated hyper-parameters."""
    config = self.resolve(**values)
    if devices != 1:
      if self.family == DEEP:
        raise ValueError(
          f'{self.name} runs on one device (sampled MCCFR splits its batches over devices, full-width '
          f'solvers the game: jaxcfr.shard_game); got {devices}'
        )
      if self.family == SAMPLED:
        config['devices'] = devices
      # Full-width solvers need nothing of their own: the game and state carry the sharding.
    return self.function()(**config)


def _is_int(value) -> bool:
  return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _number(value: float) -> str:
  return {math.inf: 'inf', -math.inf: '-inf'}.get(value, f'{value:g}')


# Shared schema pieces.

_ALTERNATING = Hyperparameter(
  'alternating',
  'bool',
  True,
  'simultaneous instead of alternating updates (default: alternate, as OpenSpiel does)',
  flag='--simultaneous',
  negated=True,
)


def _discounts(alpha: float, beta: float | None, gamma: float) -> tuple[Hyperparameter, ...]:
  items = [Hyperparameter('alpha', 'float', alpha, 'positive-regret discount exponent', low=0.0)]
  if beta is not None:
    items.append(Hyperparameter('beta', 'float', beta, 'negative-regret discount exponent'))
  items.append(Hyperparameter('gamma', 'float', gamma, 'average-strategy weight exponent', low=0.0))
  return tuple(items)


def _full_width(name: str, function: str, summary: str, *extra: Hyperparameter) -> Algorithm:
  return Algorithm(name, FULL_WIDTH, f'jaxcfr.solvers:{function}', summary, (_ALTERNATING, *extra))


_SAMPLED = (
  Hyperparameter('batch_size', 'int', 1024, 'traversals per player per iteration', low=1),
  Hyperparameter(
    'linear_until',
    'int',
    10**9,
    'linear weighting (Pluribus discounting) until iteration N; 0 turns it off (default: always)',
    low=0,
  ),
  Hyperparameter('discount_interval', 'int', 1, 'discount every N iterations', low=1),
  Hyperparameter('regret_floor', 'float', None, 'regrets never fall below this', optional=True),
)
_PRUNING = (
  Hyperparameter('prune_threshold', 'float', None, 'prune actions with regret below this', optional=True),
  Hyperparameter('prune_probability', 'float', 0.95, 'share of traversals that prune', low=0.0, high=1.0),
  Hyperparameter('prune_after', 'int', 0, 'no pruning before iteration N', low=0),
)

_DEEP = (
  Hyperparameter('traversals', 'int', 2048, 'traversals per player per iteration', low=1),
  Hyperparameter('advantage_layers', 'layers', (64, 64), 'advantage network hidden widths'),
  Hyperparameter('advantage_steps', 'int', 100, 'Adam steps per advantage training', low=1),
  Hyperparameter(
    'advantage_batch_size',
    'batch',
    None,
    "advantage minibatch size, or 'all': the whole reservoir each step",
    low=1,
  ),
  Hyperparameter(
    'advantage_capacity', 'int', 4_000_000, 'advantage reservoir per player', low=1, flag='--memory'
  ),
  Hyperparameter(
    'reinitialize', 'bool', False, 'train advantage networks from scratch each iteration, as in the paper'
  ),
)
_STRATEGY = (
  Hyperparameter('strategy_layers', 'layers', (64, 64), 'strategy network hidden widths'),
  Hyperparameter('strategy_steps', 'int', 2000, 'Adam steps per strategy training', low=1),
  Hyperparameter('strategy_batch_size', 'batch', None, "strategy minibatch size, or 'all'", low=1),
  Hyperparameter(
    'strategy_capacity', 'int', 4_000_000, 'strategy reservoir per player', low=1, flag='--strategy-memory'
  ),
)
_LEARNING_RATE = Hyperparameter('learning_rate', 'float', 1e-3, 'Adam learning rate', low=0.0, low_open=True)

_ALGORITHMS = (
  _full_width('cfr', 'cfr', 'vanilla CFR (Zinkevich et al. 2007)'),
  _full_width('cfr+', 'cfr_plus', 'CFR+: regret matching+ and linear averaging (Tammelin 2014)'),
  _full_width('lcfr', 'linear_cfr', 'Linear CFR: regrets and average weighted by t (Brown & Sandholm 2019)'),
  _full_width('dcfr', 'dcfr', 'Discounted CFR (Brown & Sandholm 2019)', *_discounts(1.5, 0.0, 2.0)),
  _full_width('pcfr+', 'pcfr_plus', 'Predictive CFR+ (Farina, Kroer & Sandholm 2021)'),
  _full_width(
    'dcfr+', 'dcfr_plus', 'DCFR+: CFR+ with discounted regrets (Xu et al. 2024)', *_discounts(1.5, None, 4.0)
  ),
  _full_width(
    'pdcfr+', 'pdcfr_plus', 'PDCFR+: predictive DCFR+ (Xu et al. 2024)', *_discounts(2.3, None, 5.0)
  ),
  Algorithm(
    'es-mccfr', SAMPLED, 'jaxcfr.mccfr:es_mccfr', 'external-sampling MCCFR, batched', (*_SAMPLED, *_PRUNING)
  ),
  Algorithm(
    'os-mccfr',
    SAMPLED,
    'jaxcfr.mccfr:os_mccfr',
    'outcome-sampling MCCFR, batched',
    (
      *_SAMPLED,
      Hyperparameter(
        'exploration',
        'float',
        0.6,
        'os-mccfr: exploration of the traverser',
        low=0.0,
        high=1.0,
        low_open=True,
      ),
    ),
  ),
  Algorithm(
    'deep-cfr',
    DEEP,
    'jaxcfr.deep_cfr:deep_cfr',
    'Deep CFR (Brown et al. 2019)',
    (*_DEEP, *_STRATEGY, _LEARNING_RATE),
  ),
  Algorithm(
    'sd-cfr', DEEP, 'jaxcfr.deep_cfr:sd_cfr', 'Single Deep CFR (Steinberger 2019)', (*_DEEP, _LEARNING_RATE)
  ),
)

REGISTRY: dict[str, Algorithm] = {algorithm.name: algorithm for algorithm in _ALGORITHMS}
DEFAULT = 'dcfr'


def names(family: str | None = None) -> list[str]:
  """Registered names, of one family if given."""
  return [name for name, entry in REGISTRY.items() if family in (None, entry.family)]


def get(name: str) -> Algorithm:
  try:
    return REGISTRY[name]
  except KeyError:
    raise ValueError(f'unknown algorithm {name!r}; choose from {", ".join(REGISTRY)}') from None


def make_solver(name: str, *, devices: int = 1, **hyperparameters):
  """The registered solver `name` with validated `hyperparameters` (defaults for the rest);
  `devices` splits sampled MCCFR's batches."""
  return get(name).make(devices=devices, **hyperparameters)


# The command line's face of the registry: one flag per hyper-parameter name.


def flags() -> dict[str, list[tuple[str, Hyperparameter]]]:
  """CLI flag -> [(algorithm, hyper-parameter)] for every algorithm that takes it."""
  table: dict[str, list] = {}
  for algorithm in REGISTRY.values():
    for parameter in algorithm.hyperparameters:
      table.setdefault(parameter.cli_flag, []).append((algorithm.name, parameter))
  return table


def argument_type(parameter: Hyperparameter):
  """An argparse `type`: command-line text parsed and checked by `parameter`."""
  import argparse  # noqa: PLC0415

  def parse(text: str):
    try:
      return parameter.parse(text)
    except ValueError as error:
      raise argparse.ArgumentTypeError(str(error)) from None

  return parse


def add_flags(parser) -> None:
  """Adds every hyper-parameter flag to an argparse parser, grouped by family; each
  help names the algorithms that take the flag and their defaults. Absent flags are
  absent from the parsed namespace (`given_flags` reads what was given)."""
  import argparse  # noqa: PLC0415

  groups = {}
  for flag, takers in flags().items():
    parameter = takers[0][1]
    names = [name for name, _ in takers]
    family = REGISTRY[names[0]].family
    if family not in groups:
      groups[family] = parser.add_argument_group(f'{family} hyper-parameters')
    defaults = {p.shown() for _, p in takers}
    if parameter.negated:
      where = f'[{", ".join(names)}]'
    elif parameter.kind == 'bool':
      where = f'[{", ".join(names)}; default {"on" if parameter.default else "off"}]'
    elif len(defaults) == 1:
      where = f'[{", ".join(names)}; default {defaults.pop()}]'
    else:
      where = '[' + '; '.join(f'{name} {p.shown()}' for name, p in takers) + ']'
    options = dict(dest=parameter.name, default=argparse.SUPPRESS, help=f'{parameter.help} {where}')
    if parameter.negated:
      groups[family].add_argument(flag, action='store_false', **options)
    elif parameter.kind == 'bool':
      groups[family].add_argument(flag, action=argparse.BooleanOptionalAction, **options)
    else:
      metavar = {'layers': 'W,W', 'batch': 'N|all', 'int': 'N'}.get(parameter.kind, 'X')
      groups[family].add_argument(flag, type=argument_type(parameter), metavar=metavar, **options)


def given_flags(namespace, algorithm: Algorithm) -> dict[str, Any]:
  """The hyper-parameters given as flags in a parsed `namespace`, checked for `algorithm`;
  a flag that `algorithm` does not take is a ValueError naming the flag."""
  given = {}
  for flag, takers in flags().items():
    name = takers[0][1].name
    if name not in vars(namespace):
      continue
    parameter = algorithm.parameter(name)
    if parameter is None or parameter.cli_flag != flag:
      names = ', '.join(taker for taker, _ in takers)
      raise ValueError(f'{flag} does not apply to {algorithm.name} (it is for {names})')
    try:
      given[name] = parameter.check(getattr(namespace, name), algorithm.name)
    except ValueError as error:
      raise ValueError(f'{flag}: {error}') from None
  return given
