"""The package's import graph, read from the source: no module imports
itself back through others, and the core stays free of `abstractions`."""

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
