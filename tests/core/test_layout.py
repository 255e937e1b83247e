"""The package's import graph, read from the source: no module imports itself back through others;
the core stays free of `abstractions`, of the poker layer and of the command line; the poker layer's
rooms (rules -> pushfold -> subgame -> runtime -> blueprint -> search -> eval -> bots -> play) import only
downwards, so the search bot never depends on the evaluation code."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'jaxcfr'
ALLOWED_TO_IMPORT_ABSTRACTIONS = {'jaxcfr.cli'}  # the command-line package (`jaxcfr abstract`)
POKER_LAYER = 'jaxcfr.poker'  # where the core and abstractions meet


def _modules() -> dict[str, pathlib.Path]:
  """Dotted module name -> source file, for every module of the package."""
  modules = {}
  for path in sorted(PACKAGE.rglob('*.py')):
    parts = path.relative_to(ROOT).with_suffix('').parts
    if parts[-1] == '__init__':
      parts = parts[:-1]
    modules['.'.join(parts)] = path
  return modules


def _imports(name: str, path: pathlib.Path, modules) -> set[str]:
  """Every module `name` imports anywhere in its file (top level, inside
  functions, under `TYPE_CHECKING`), by dotted name; `from package import
  module` counts as importing the module, `from module import name` the module."""
  package = name if path.name == '__init__.py' else name.rpartition('.')[0]
  found = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      found.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:  # relative: from . import x, from ..games import y
        anchor = package.split('.')[: len(package.split('.')) - node.level + 1]
        base = '.'.join(anchor + ([base] if base else []))
      for alias in node.names:
        submodule = f'{base}.{alias.name}'
        found.add(submodule if submodule in modules else base)
  return found


def _graph() -> dict[str, set[str]]:
  modules = _modules()
  return {name: _imports(name, path, modules) for name, path in modules.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
  """One cycle among the package's modules, as a path that returns to its start."""
  state = {}  # module -> 'open' while on the stack, 'done' after
  stack = []

  def visit(module):
    state[module] = 'open'
    stack.append(module)
    for target in sorted(graph[module] & graph.keys()):
      if state.get(target) == 'open':
        return stack[stack.index(target) :] + [target]
      if target not in state and (cycle := visit(target)):
        return cycle
    stack.pop()
    state[module] = 'done'
    return None

  for module in sorted(graph):
    if module not in state and (cycle := visit(module)):
      return cycle
  return None


def test_the_graph_sees_every_kind_of_import():
  graph = _graph()
  assert {'jaxcfr.compiled', 'jaxcfr.sequence_form', 'jaxcfr.games'} <= graph['jaxcfr.compiler']
  assert 'jaxcfr.games.openspiel' in graph['jaxcfr.compiler']  # imported inside a function
  assert 'jaxcfr.games.base' in graph['jaxcfr.games.kuhn']  # from package import module
  assert 'jaxcfr.compiled' in graph['jaxcfr.tree']


def test_finds_a_cycle_when_there_is_one():
  graph = {'a': {'b'}, 'b': {'c', 'numpy'}, 'c': {'a'}, 'd': {'a'}}
  assert _find_cycle(graph) == ['a', 'b', 'c', 'a']
  assert _find_cycle({'a': {'b'}, 'b': set()}) is None


def test_no_import_cycle_among_package_modules():
  cycle = _find_cycle(_graph())
  assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_only_the_cli_and_the_poker_layer_import_abstractions():
  offenders = sorted(
    name
    for name, imported in _graph().items()
    if not any(
      name == allowed or name.startswith(allowed + '.') for allowed in ALLOWED_TO_IMPORT_ABSTRACTIONS
    )
    and not (name == POKER_LAYER or name.startswith(POKER_LAYER + '.'))
    and any(module == 'abstractions' or module.startswith('abstractions.') for module in imported)
  )
  assert not offenders, (
    f'{offenders} import abstractions; only {sorted(ALLOWED_TO_IMPORT_ABSTRACTIONS)} and {POKER_LAYER} may'
  )


# The poker layer's rooms, bottom up: a module may import its own room and the rooms below it, never
# one above (`rules` are what everything stands on; `pushfold`, the short-stack game solved exactly,
# on them; `runtime`, the blueprint policy in NumPy that an
# exported bot copies, stands on `rules` alone and the blueprint builds on it; `tables`, the clients of
# real tables, seat any policy and give `bots` its table-bot specs; `play` is a person's front end).
POKER_ROOMS = (
  'defaults',
  'rules',
  'pushfold',
  'subgame',
  'runtime',
  'blueprint',
  'search',
  'eval',
  'tables',
  'bots',
  'play',
)


def _poker_room(module: str) -> str | None:
  """The room of a module of the poker layer (its first name under jaxcfr.poker), None elsewhere."""
  prefix = POKER_LAYER + '.'
  return module[len(prefix) :].split('.')[0] if module.startswith(prefix) else None


def _uphill(graph: dict[str, set[str]]) -> list[str]:
  """Every import of the poker layer that runs from a room to one above it, as 'a -> b'."""
  found = []
  for name, imported in sorted(graph.items()):
    room = _poker_room(name)
    if room is None:
      continue
    for target in sorted(imported):
      other = _poker_room(target)
      if other is not None and POKER_ROOMS.index(other) > POKER_ROOMS.index(room):
        found.append(f'{name} -> {target}')
  return found


def test_every_poker_module_sits_in_a_known_room():
  rooms = {_poker_room(name) for name in _graph()} - {None, ''}
  assert rooms == set(POKER_ROOMS), f'rooms without a place in POKER_ROOMS: {rooms - set(POKER_ROOMS)}'


def test_poker_imports_only_go_down():
  assert _uphill(_graph()) == []


def test_an_import_up_is_found():
  graph = {'jaxcfr.poker.search.bot': {'jaxcfr.poker.eval.lbr', 'jaxcfr.poker.rules.nlhe', 'numpy'}}
  assert _uphill(graph) == ['jaxcfr.poker.search.bot -> jaxcfr.poker.eval.lbr']


def test_the_search_bot_does_not_import_the_evaluation_code():
  graph = _graph()
  offenders = {
    (name, target)
    for name, imported in graph.items()
    if _poker_room(name) == 'search'
    for target in imported
    if _poker_room(target) == 'eval'
  }
  assert not offenders


def test_the_library_never_imports_the_command_line():
  offenders = sorted(
    f'{name} -> {target}'
    for name, imported in _graph().items()
    if not (name == 'jaxcfr.cli' or name.startswith('jaxcfr.cli.'))
    for target in imported
    if target == 'jaxcfr.cli' or target.startswith('jaxcfr.cli.')
  )
  assert not offenders


def test_the_core_never_imports_the_poker_layer():
  offenders = sorted(
    f'{name} -> {target}'
    for name, imported in _graph().items()
    if name.startswith('jaxcfr.') and _poker_room(name) is None and name != POKER_LAYER
    if not (name == 'jaxcfr.cli' or name.startswith('jaxcfr.cli.'))
    for target in imported
    if target == POKER_LAYER or _poker_room(target) is not None
  )
  assert not offenders
