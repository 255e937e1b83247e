"""Built-in games and the registry that parses game specs.

A spec is a registered name with optional parameters in OpenSpiel's syntax:
`leduc`, `kuhn(players=3)`, `leduc(suit_isomorphism=True)`,
`liars_dice(dice_sides=4)`, `matrix(payoffs=[[0,-1],[-1,0]])`.
`openspiel:GAME_STRING` is reserved for the OpenSpiel bridge.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
from collections.abc import Callable

from jaxcfr.games import base, kuhn, leduc, liars_dice, matrix
from jaxcfr.games.base import CHANCE_PLAYER, TERMINAL_PLAYER, Game, GameError, State

__all__ = [
  'CHANCE_PLAYER',
  'TERMINAL_PLAYER',
  'Game',
  'GameError',
  'State',
  'REGISTRY',
  'load_game',
  'parameters',
  'parse_spec',
]


@dataclasses.dataclass(frozen=True)
class Entry:
  # Its positional-or-keyword parameters are the spec's; keyword-only ones are for Python callers.
  factory: Callable[..., Game]
  description: str
  sizes: tuple[int, int]  # (histories, infosets) with default parameters; tests check them
  aliases: tuple[str, ...] = ()


REGISTRY: dict[str, Entry] = {
  'kuhn': Entry(
    kuhn.KuhnPoker, "Kuhn poker (OpenSpiel's kuhn_poker); players=2..10", (58, 12), ('kuhn_poker',)
  ),
  'leduc': Entry(
    leduc.LeducPoker,
    "Leduc poker (OpenSpiel's leduc_poker); players=2..10, suit_isomorphism=false",
    (9_457, 936),
    ('leduc_poker',),
  ),
  'liars_dice': Entry(
    liars_dice.LiarsDice,
    "Liar's Dice (OpenSpiel's liars_dice); numdice=1..5, dice_sides=2..12",
    (294_883, 24_576),
  ),
  'matrix': Entry(
    matrix.MatrixGame,
    "two-player matrix game; payoffs=[[...]] (player 0's), column_payoffs=-payoffs",
    (13, 2),
  ),
  'rps': Entry(matrix.rock_paper_scissors, 'rock-paper-scissors', (13, 2), ('rock_paper_scissors',)),
  'matching_pennies': Entry(matrix.matching_pennies, 'matching pennies', (7, 2)),
}
_ALIASES = {alias: name for name, entry in REGISTRY.items() for alias in (name, *entry.aliases)}
_CONSTANTS = {'true': True, 'false': False, 'True': True, 'False': False}


def parse_spec(spec: str) -> tuple[str, dict]:
  """Splits `name(key=value, ...)` into the name and a dict of parameters."""
  text = spec.strip()
  try:
    tree = ast.parse(text, mode='eval').body
  except SyntaxError:
    raise GameError(f'malformed game spec {spec!r}: expected NAME or NAME(key=value, ...)') from None
  if isinstance(tree, ast.Name):
    return tree.id, {}
  if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)) or tree.args:
    raise GameError(f'malformed game spec {spec!r}: expected NAME or NAME(key=value, ...)')
  params = {}
  for keyword in tree.keywords:
    if keyword.arg is None or keyword.arg in params:
      raise GameError(f'malformed game spec {spec!r}: parameters must be distinct key=value pairs')
    params[keyword.arg] = _literal(keyword.value, spec)
  return tree.func.id, params


def _literal(node: ast.AST, spec: str):
  if isinstance(node, ast.Name) and node.id in _CONSTANTS:
    return _CONSTANTS[node.id]
  if isinstance(node, (ast.List, ast.Tuple)):
    return [_literal(element, spec) for element in node.elts]
  try:
    return ast.literal_eval(node)
  except ValueError:
    raise GameError(f'malformed game spec {spec!r}: {ast.unparse(node)!r} is not a value') from None


def load_game(spec: str | Game) -> Game:
  """A game from a spec string (see the module docstring), or `spec` itself."""
  if not isinstance(spec, str):
    return spec
  if spec.strip().startswith('openspiel:'):
    from jaxcfr.games import openspiel  # noqa: PLC0415 (optional dependency)

    return openspiel.load(spec.strip()[len('openspiel:') :])
  name, params = parse_spec(spec)
  if name not in _ALIASES:
    known = ', '.join(sorted(REGISTRY))
    raise GameError(f'unknown game {name!r}; built-in games: {known} (or openspiel:NAME)')
  _check_parameters(name, params)
  return REGISTRY[_ALIASES[name]].factory(**params)


def parameters(name: str) -> dict[str, object]:
  """The parameters a spec of the registered game `name` (or an alias) may set,
  each with its default (`inspect.Parameter.empty` where it has none)."""
  signature = inspect.signature(REGISTRY[_ALIASES[name]].factory)
  return {
    key: parameter.default
    for key, parameter in signature.parameters.items()
    if parameter.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
  }


def _check_parameters(name: str, params: dict) -> None:
  """A `GameError` naming the first parameter `name` does not take, with the ones it does."""
  known = parameters(name)
  for key in params:
    if key in known:
      continue
    close = difflib.get_close_matches(key, known, n=1)
    guess = f", did you mean '{close[0]}'?" if close else ''
    listing = ', '.join(_describe_parameter(k, v) for k, v in known.items())
    accepted = f'parameters: {listing}' if known else f'{name} takes no parameters'
    raise GameError(f"{name}: unknown parameter '{key}'{guess} ({accepted})")


def _describe_parameter(key: str, default) -> str:
  if default is inspect.Parameter.empty or default is None:
    return key
  if isinstance(default, bool):
    return f'{key}={str(default).lower()}'
  return f'{key}={base.format_value(default)}'
