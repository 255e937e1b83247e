"""The documentation cannot rot: README.md and every page of docs/ are checked here.

- Every ```python block runs. The blocks of one page run in order, in one namespace of their own
  and in a fresh temporary working directory, so a later block may use the names an earlier block
  of the same page defined (and files it wrote). A block that is only illustrative (it needs a
  file a long run writes, or runs for minutes) carries the marker `<!-- not run: REASON -->` on
  the line before its fence; it is skipped on purpose, and each such block is reported as one
  skipped test with its reason (`pytest -rs`).
- Every `jaxcfr ...` command in a bash, console, shell, untagged or indented block parses:
  `jaxcfr.cli.build_parser().parse_args(argv)` must not exit. Chains (`&&`, `||`, `;`, `|`), line
  continuations and a leading path (`.venv/bin/jaxcfr`) are handled; placeholders such as FILE are
  fine, since parsing opens no file.
- Every relative link resolves to a file that exists, and every `#anchor` to a heading of the page
  it names, by the code host's rule for heading slugs.
- The checks fail on a broken block, an unknown flag, a dangling link (the self-checks at the end),
  and the README stays a front door of at most 250 lines.
"""

import dataclasses
import functools
import os
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / 'README.md'
PAGES = [README, *sorted((ROOT / 'docs').rglob('*.md'))]
README_MAX_LINES = 250
NOT_RUN = re.compile(r'^\s*<!--\s*not run:\s*(?P<reason>\S.*?)\s*-->\s*$')
FENCE = re.compile(r'^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)')
INDENTED = 'indented'  # the language of a code block written by indentation, not fenced
SHELL_LANGUAGES = {'', 'bash', 'console', 'shell', 'sh', INDENTED}


@dataclasses.dataclass(frozen=True)
class Block:
  page: pathlib.Path
  line: int  # of the opening fence, 1-based
  lang: str
  text: str
  not_run: str | None = None  # the reason, where the block is marked as illustrative

  @property
  def name(self) -> str:
    return f'{_name(self.page)}:{self.line}'


def _name(path: pathlib.Path) -> str:
  return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def code_blocks(path: pathlib.Path, text: str | None = None) -> list[Block]:
  """The code blocks of a Markdown page: fenced ones, dedented by their fence's indentation (fences in
  list items are indented), and indented ones (language `INDENTED`). Raises ValueError on an unclosed
  fence or a `not run` marker that is not on the line right before a fence."""
  lines = (path.read_text() if text is None else text).splitlines()
  blocks, index = [], 0
  while index < len(lines):
    line = lines[index]
    opening = FENCE.match(line)
    marker = NOT_RUN.match(line)
    if marker and not (index + 1 < len(lines) and FENCE.match(lines[index + 1])):
      raise ValueError(f'{path}:{index + 1}: a "not run" marker must be on the line before a fence')
    if not opening:
      if line.startswith('    ') and line.strip() and (index == 0 or not lines[index - 1].strip()):
        end = index  # an indented code block: lines indented 4 spaces, or blank, to the next text
        while end < len(lines) and (lines[end].startswith('    ') or not lines[end].strip()):
          end += 1
        body = '\n'.join(text[4:] for text in lines[index:end]).strip('\n')
        blocks.append(Block(path, index + 1, INDENTED, body + '\n'))
        index = end
        continue
      index += 1
      continue
    indent, fence = len(opening['indent']), opening['fence']
    body, end = [], index + 1
    while end < len(lines) and not lines[end].strip().startswith(fence):
      body.append(lines[end][indent:] if lines[end][:indent].strip() == '' else lines[end])
      end += 1
    if end == len(lines):
      raise ValueError(f'{path}:{index + 1}: unclosed code fence')
    before = NOT_RUN.match(lines[index - 1]) if index else None
    reason = before['reason'] if before else None
    blocks.append(Block(path, index + 1, opening['lang'].lower(), '\n'.join(body) + '\n', reason))
    index = end + 1
  return blocks


def run_blocks(blocks: list[Block]) -> None:
  """Runs python blocks in order in one namespace (the caller chooses the working directory); the
  first failure propagates, its traceback naming `page:line` of the block."""
  namespace = {'__name__': '__docs__'}
  for block in blocks:
    exec(compile(block.text, block.name, 'exec'), namespace)  # noqa: S102 (the docs' own examples)


def _logical_lines(text: str) -> list[str]:
  """Lines with `\\` continuations joined and console prompts (`$ `) dropped."""
  joined, pending = [], ''
  for line in text.splitlines():
    line = line.rstrip()
    if line.endswith('\\'):
      pending += line[:-1] + ' '
      continue
    joined.append(pending + line)
    pending = ''
  if pending:
    joined.append(pending)
  return [line.strip().removeprefix('$ ') for line in joined]


def jaxcfr_commands(text: str) -> list[list[str]]:
  """The argument lists of every `jaxcfr` command in a shell block: each line split as a shell would
  (comments dropped), cut at `&&`, `||`, `;` and `|`, and each part whose program is `jaxcfr` (or a path
  ending in `/jaxcfr`) kept without it."""
  found = []
  for line in _logical_lines(text):
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = '#'
    try:
      tokens = list(lexer)
    except ValueError as error:  # an unclosed quote
      raise ValueError(f'{line!r}: {error}') from None
    part: list[str] = []
    for token in [*tokens, ';']:
      if token and set(token) <= set('&|;'):
        if part and os.path.basename(part[0]) == 'jaxcfr':
          found.append(part[1:])
        part = []
      else:
        part.append(token)
  return found


@functools.cache
def _parser():
  from jaxcfr import cli  # noqa: PLC0415

  return cli.build_parser()


def parse_command(argv: list[str]) -> None:
  """Raises AssertionError when `jaxcfr ARGV` does not parse (argparse exits with status 2)."""
  try:
    _parser().parse_args(argv)
  except SystemExit as exit_:
    if exit_.code not in (0, None):  # `--help` exits 0 after printing
      raise AssertionError(f'`jaxcfr {shlex.join(argv)}` does not parse (exit {exit_.code})') from None


def heading_slugs(text: str) -> set[str]:
  """The anchors a code host gives a page's headings: inline code and links reduced to their text,
  lower case, punctuation other than `-` and `_` dropped, spaces to hyphens; repeats get -1, -2, ..."""
  slugs, seen = set(), {}
  inside = None
  for line in text.splitlines():
    fence = FENCE.match(line)
    if fence:
      inside = None if inside and fence['fence'].startswith(inside) else (inside or fence['fence'])
      continue
    heading = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
    if inside or not heading:
      continue
    title = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading[1]).replace('`', '')
    slug = re.sub(r'[^\w\- ]', '', title.strip().lower()).replace(' ', '-')
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    slugs.add(slug if count == 0 else f'{slug}-{count}')
  return slugs


def _prose(text: str) -> str:
  """The page without its fenced blocks and inline code, where link syntax is only an example."""
  kept, inside = [], None
  for line in text.splitlines():
    fence = FENCE.match(line)
    if fence:
      inside = None if inside and fence['fence'].startswith(inside) else (inside or fence['fence'])
      continue
    if not inside:
      kept.append(re.sub(r'`[^`]*`', '', line))
  return '\n'.join(kept)


def broken_links(path: pathlib.Path, text: str | None = None) -> list[str]:
  """The relative links and `#anchors` of a page that lead nowhere, as `target (why)`."""
  text = path.read_text() if text is None else text
  problems = []
  for target in re.findall(r'\]\(([^)\s]+)(?:\s+"[^"]*")?\)', _prose(text)):
    if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # https:, mailto:
      continue
    file, _, anchor = target.partition('#')
    destination = (path.parent / file).resolve()
    if file and not destination.exists():
      problems.append(f'{target} (no such file)')
      continue
    if not anchor or (file and destination.suffix != '.md'):
      continue
    if anchor not in heading_slugs(destination.read_text() if file else text):
      problems.append(f'{target} (no such heading)')
  return problems


def _all_blocks() -> list[Block]:
  return [block for page in PAGES for block in code_blocks(page)]


def _python_pages() -> list[pathlib.Path]:
  return [page for page in PAGES if any(b.lang == 'python' and not b.not_run for b in code_blocks(page))]


@pytest.mark.parametrize('page', _python_pages(), ids=_name)
def test_python_blocks_run(page, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  run_blocks([block for block in code_blocks(page) if block.lang == 'python' and not block.not_run])


_NOT_RUN = [block for block in _all_blocks() if block.lang == 'python' and block.not_run]


@pytest.mark.parametrize('block', _NOT_RUN, ids=lambda block: block.name)
def test_python_block_marked_not_run(block):
  pytest.skip(f'{block.name} is marked not run: {block.not_run}')


def test_commands_parse():
  commands = [
    (block, argv)
    for block in _all_blocks()
    if block.lang in SHELL_LANGUAGES
    for argv in jaxcfr_commands(block.text)
  ]
  readme = [argv for block, argv in commands if block.page == README]
  assert len(readme) >= 7, 'the README shows the quick start and the poker pipeline'
  problems = []
  for block, argv in commands:
    try:
      parse_command(argv)
    except AssertionError as error:
      problems.append(f'{block.name}: {error}')
  assert not problems, '\n'.join(problems)


def test_links_resolve():
  problems = [f'{_name(page)}: {problem}' for page in PAGES for problem in broken_links(page)]
  assert not problems, '\n'.join(problems)


def test_readme_is_short():
  lines = len(README.read_text().splitlines())
  assert lines <= README_MAX_LINES, f'README.md has {lines} lines; keep it at most {README_MAX_LINES}'


# The checks above must be able to fail: a broken example, an unknown flag, a dangling link.


def test_a_broken_block_fails(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  page = tmp_path / 'page.md'
  text = '# A page\n\n```python\nimport jaxcfr\nx = 1\n```\n\n```python\njaxcfr.no_such_function(x)\n```\n'
  blocks = code_blocks(page, text)
  assert [block.lang for block in blocks] == ['python', 'python']
  with pytest.raises(AttributeError, match='no_such_function'):
    run_blocks(blocks)
  with pytest.raises(SyntaxError):
    run_blocks([dataclasses.replace(blocks[0], text='def broken(:\n')])


def test_the_not_run_marker_is_read(tmp_path):
  page = tmp_path / 'page.md'
  text = '<!-- not run: needs a blueprint -->\n```python\nraise RuntimeError\n```\n'
  (block,) = code_blocks(page, text)
  assert block.not_run == 'needs a blueprint'
  with pytest.raises(ValueError, match='line before a fence'):
    code_blocks(page, '<!-- not run: lost -->\n\n```python\npass\n```\n')
  (indented,) = code_blocks(
    page, 'Run:\n\n    jaxcfr solve kuhn \\\n      --iterations 10\n\nand more text\n'
  )
  assert indented.lang == INDENTED and jaxcfr_commands(indented.text) == [
    ['solve', 'kuhn', '--iterations', '10']
  ]
  with pytest.raises(ValueError, match='unclosed'):
    code_blocks(page, '```python\npass\n')


def test_an_unknown_flag_fails():
  text = (
    'python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/jaxcfr solve leduc \\\n'
    '  --iterations 10 --no-such-flag 3   # a comment\n'
    "printf 'c\\n' | jaxcfr play --bot always-call --hands 1\n"
  )
  first, second = jaxcfr_commands(text)
  assert first == ['solve', 'leduc', '--iterations', '10', '--no-such-flag', '3']
  assert second == ['play', '--bot', 'always-call', '--hands', '1']
  parse_command(second)
  parse_command(first[:-2])
  with pytest.raises(AssertionError, match='does not parse'):
    parse_command(first)
  with pytest.raises(AssertionError, match='does not parse'):
    parse_command(['blueprint', 'train', '--seconds', '5'])  # the required --out missing


def test_a_dangling_link_fails(tmp_path):
  page = tmp_path / 'page.md'
  (tmp_path / 'other.md').write_text('# Other page\n\n## The `subgame` command (CLI)\n')
  good = '[a](other.md) [b](other.md#the-subgame-command-cli) [c](#top) [d](https://example.org)\n\n# Top\n'
  assert broken_links(page, good) == []
  bad = '[a](missing.md) [b](other.md#no-such-heading) `[c](ignored.md)`\n\n```\n[d](ignored.md)\n```\n'
  assert broken_links(page, bad) == [
    'missing.md (no such file)',
    'other.md#no-such-heading (no such heading)',
  ]
