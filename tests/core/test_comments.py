"""Comments and docstrings keep the decision, not one machine's timing: no measured milliseconds,
speed ratios, "on a 2-core CPU" or "this machine" in `jaxcfr/` and `abstractions/`. Such figures go
stale with the next change; they belong in docs/benchmarks.md, with the command and the machine.

Comments are read with `tokenize`, docstrings (and other bare strings) with `ast`, the native
kernel's `//` comments line by line."""

import ast
import io
import pathlib
import re
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ('jaxcfr', 'abstractions')

# A number with a time unit ("took 12.5 ms", "about 3 s", "0.73 against 0.66 ms"; a bare "s" after a
# space, as "2s" and "3s" are cards)...
DURATION = re.compile(
  r'\b\d+(?:[.,]\d+)?(?:\s*(?:ms|us|µs|secs?|seconds?|minutes?|mins?)|\s+s)\b', re.IGNORECASE
)
# ... unless it is a setting: "every 60 s", "at most 120 s", "a timeout of 600 s", "budget: 120 s".
SETTING = re.compile(
  r'\b(?:every|at most|at least|up to|timeout(?: of)?|default(?: of)?|budget(?: of)?|limit(?: of)?)'
  r'\s*:?\s*$',
  re.IGNORECASE,
)
MEASURED = [
  re.compile(r'\b\d+(?:\.\d+)?x (?:faster|slower|as long|the time|longer|quicker|as fast)\b', re.IGNORECASE),
  re.compile(r'\b\d+-core\b', re.IGNORECASE),
  re.compile(r'\bthis machine\b', re.IGNORECASE),
  re.compile(r'\b\d[\d,.]* (?:\w+ )?(?:a|per) second\b', re.IGNORECASE),  # "10 iterations a second"
]


def _prose(text: str) -> str:
  """`text` with its inline code spans blanked (same length): `--seconds 30` or `372 + 12 s` is code."""
  return re.sub(r'`[^`\n]*`', lambda m: ' ' * len(m.group(0)), text)


def _hits(text: str) -> list[tuple[int, str]]:
  """(offset, matched text) of every measured-looking figure in one comment or docstring."""
  prose = _prose(text)
  hits = [
    (m.start(), m.group(0))
    for m in DURATION.finditer(prose)
    if not SETTING.search(prose[max(0, m.start() - 20) : m.start()])
  ]
  hits += [(m.start(), m.group(0)) for pattern in MEASURED for m in pattern.finditer(prose)]
  return hits


def _texts(source: str, native: bool) -> list[tuple[int, str]]:
  """(first line, text) of every comment and docstring of a Python module, or of every `//`
  comment of a C++ one."""
  if native:
    return [(n, line.split('//', 1)[1]) for n, line in enumerate(source.splitlines(), 1) if '//' in line]
  texts = [
    (token.start[0], token.string)
    for token in tokenize.generate_tokens(io.StringIO(source).readline)
    if token.type == tokenize.COMMENT
  ]
  for node in ast.walk(ast.parse(source)):
    if (
      isinstance(node, ast.Expr)
      and isinstance(node.value, ast.Constant)
      and isinstance(node.value.value, str)
    ):
      texts.append((node.lineno, node.value.value))
  return texts


def timings(source: str, native: bool = False) -> list[tuple[int, str]]:
  """(line, matched text) of every comment or docstring of `source` that reads like a measurement."""
  return sorted(
    (line + text[:offset].count('\n'), found)
    for line, text in _texts(source, native)
    for offset, found in _hits(text)
  )


def _sources() -> list[pathlib.Path]:
  return [
    path
    for folder in FOLDERS
    for suffix in ('*.py', '*.cc')
    for path in sorted((ROOT / folder).rglob(suffix))
  ]


def test_no_comment_or_docstring_carries_a_measured_timing():
  found = [
    f'{path.relative_to(ROOT)}:{line}: {text!r}'
    for path in _sources()
    for line, text in timings(path.read_text(), native=path.suffix == '.cc')
  ]
  assert not found, 'keep the decision in the comment, the figure in docs/benchmarks.md:\n' + '\n'.join(found)


@pytest.mark.parametrize(
  'text',
  [
    'a search river tree took 0.73 against 0.66 ms on a 2-core CPU',
    'the build took 12.5 ms',
    'about 3 s a decision',
    'the native sweep is 1.18x faster',
    'a whole tree runs 1.2x slower',
    'scalar tiles took 1.35x as long',
    'measured on this machine',
    'about 10 iterations a second',
    '14-17 s each',
  ],
)
def test_the_checker_finds_a_timing(text):
  comment = f'x = 1  # {text}\n'
  docstring = f'def f():\n  """Does it.\n\n  Why: {text}."""\n'
  assert timings(comment) and {line for line, _ in timings(comment)} == {1}
  assert timings(docstring) and {line for line, _ in timings(docstring)} == {4}
  assert timings(f'int x;  // {text}\n', native=True)


@pytest.mark.parametrize(
  'text',
  [
    'evaluate every 60 s with only `seconds`',
    'the small profile (at most 120 s)',
    'a timeout of 600 s',
    'budget: 120 s on 2 CPU cores',
    'run `jaxcfr solve --seconds 30`',
    '`372 + 12 s + 3 r`: one bet slot',
    'the wall seconds per decision; the native sweep on CPUs, the matrix product on GPUs: faster there',
    'raises 2.5x or all-in; a 3x re-raise; 16x the traversals per update',
    'the deck in the order 2c 2d 2h 2s 3c; one die each: 2S bids',
  ],
)
def test_the_checker_leaves_settings_and_sizes_alone(text):
  assert timings(f'x = 1  # {text}\n') == []
  assert timings(f'"""{text}"""\n') == []
