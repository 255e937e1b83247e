"""jaxcfr against OpenSpiel's CFR solvers, side by side in one process.

Implementations: jaxcfr (the registry's full-width solvers), OpenSpiel's C++ `CFRSolver` /
`CFRPlusSolver` (through pyspiel) and OpenSpiel's own JAX CFR (`JaxCFR`).
Per (game, implementation, algorithm) it measures

  (a) milliseconds per iteration: median over `--repeats` timed chunks;
  (b) solve seconds to reach each `--targets` exploitability: the solver
      runs in chunks ending at geometrically spaced iteration counts, only the
      update calls are timed and exploitability is checked between chunks;
      a run stops at `--budget` solve seconds ('>budget') or once every
      target is reached. jaxcfr's run is `jaxcfr.train` for the budget,
      evaluating at those counts (its solve seconds also count producing each
      average policy); it does not stop at the last target, so its final
      exploitability is the budget's;
  (c) seconds per exact exploitability of the average policy: OpenSpiel's
      `pyspiel.exploitability(game, solver.average_policy())` vs the jitted
      `jaxcfr` exploitability (median over `--repeats`).

Prints a Markdown table whose ratio columns are OpenSpiel time / jaxcfr time
for the same algorithm, and writes it with a JSON of raw numbers to `--out`.

    python experiments/bench_openspiel.py --quick
    python experiments/bench_openspiel.py --games leduc,kuhn --budget 60
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import math
import os
import statistics
import sys
import time
import traceback

import jax
import jax.numpy as jnp

# Submodules rather than `import jaxcfr`: these also resolve under a stale editable install
# that maps `jaxcfr` as a namespace package.
from jaxcfr import algorithms as registry
from jaxcfr import backend, compiler, evaluation, protocol, training

OPENSPIEL_NAMES = {'kuhn': 'kuhn_poker', 'leduc': 'leduc_poker', 'liars_dice': 'liars_dice'}
JAXCFR_ALGORITHMS = tuple(
  name for name, entry in registry.REGISTRY.items() if entry.family == registry.FULL_WIDTH
)
CPP_SOLVERS = {'cfr': 'CFRSolver', 'cfr+': 'CFRPlusSolver'}
# JaxCFR's constructor flags: its default is CFR+; with both off it is vanilla CFR.
OPENSPIEL_JAX_CONFIGS = {
  'cfr+': dict(regret_matching_plus=True, alternating_updates=True, linear_averaging=True),
  'cfr': dict(regret_matching_plus=False, alternating_updates=True, linear_averaging=False),
}
IMPLEMENTATIONS = ('jaxcfr', 'openspiel-cpp', 'openspiel-jax')
DEFAULT_TARGETS = (1e-3, 1e-4, 1e-5)


def log(message: str) -> None:
  print(message, file=sys.stderr, flush=True)


def timed(fn, *args) -> float:
  start = time.perf_counter()
  fn(*args)
  return time.perf_counter() - start


def short_error(error: BaseException) -> str:
  text = f'{type(error).__name__}: {error}'.replace('\n', ' ').replace('|', '/')
  return text if len(text) <= 160 else text[:157] + '...'


# Runners: one solver behind reset / advance(n) (blocking) / exploitability().


class JaxcfrRunner:
  """A registry solver: `advance` runs chunks of one compiled `jaxcfr.run` (for the
  ms/iteration micro-measurement, which times chunks rather than a training run);
  `solve_to_targets` is a `jaxcfr.train` run."""

  implementation = 'jaxcfr'

  def __init__(self, game, algorithm: str):
    self.game, self.algorithm = game, algorithm
    self.solver = solver = registry.make_solver(algorithm)
    start = time.perf_counter()
    state = solver.init(game)
    # Solver closed over, iteration count traced: one program for every chunk size.
    run = backend.jit(lambda s, g, n: protocol.run(solver, s, g, n))
    self._run = run.lower(state, game, jnp.int32(1)).compile()
    jax.block_until_ready(self._run(state, game, jnp.int32(0)))  # warm-up
    self.setup_seconds = time.perf_counter() - start
    start = time.perf_counter()

    def exploitability(s, g):  # one program: the average policy and its exploitability
      return evaluation.exploitability(g, solver.average_policy(s, g))

    self._evaluate = backend.jit(exploitability).lower(state, game).compile()
    self.evaluation_jit_seconds = time.perf_counter() - start
    self.reset()

  def reset(self) -> None:
    self.state = jax.block_until_ready(self.solver.init(self.game))

  def advance(self, n: int) -> None:
    self.state = jax.block_until_ready(self._run(self.state, self.game, jnp.int32(n)))

  def exploitability(self) -> float:
    return float(self._evaluate(self.state, self.game))

  def average_policy(self):
    return self.solver.average_policy(self.state, self.game)

  def solve_to_targets(self, targets: list[float], budget: float, growth: float) -> dict:
    """`solve_to_targets`'s measurement as a `jaxcfr.train` run: `budget` solve seconds,
    evaluated at the same iteration counts; the final state is kept for what follows."""
    result = training.train(self.game, self.solver, seconds=budget, eval_at=evaluation_points(growth))
    self.state = result.state
    trace = [(point['iteration'], point['seconds'], point['exploitability']) for point in result.curve]
    reached = {}
    for done, seconds, value in trace:
      for target in targets:
        if target not in reached and value <= target:
          reached[target] = dict(iteration=done, seconds=seconds)
    return dict(
      reached={str(t): reached.get(t) for t in targets},
      trace=trace,
      final=trace[-1],
      jit_seconds=result.jit_seconds,
    )


class OpenSpielCppRunner:
  implementation = 'openspiel-cpp'

  def __init__(self, game, algorithm: str):
    import pyspiel  # noqa: PLC0415

    self._pyspiel, self.game, self.algorithm = pyspiel, game, algorithm
    self._cls = getattr(pyspiel, CPP_SOLVERS[algorithm])
    self.setup_seconds = timed(self.reset)

  def reset(self) -> None:
    self.solver = self._cls(self.game)

  def advance(self, n: int) -> None:
    for _ in range(n):
      self.solver.evaluate_and_update_policy()

  def exploitability(self) -> float:
    return self._pyspiel.exploitability(self.game, self.solver.average_policy())


class OpenSpielJaxRunner:
  """OpenSpiel's `JaxCFR`; its average policy is a Python `TabularPolicy`,
  converted to a C++ one for `pyspiel.exploitability`."""

  implementation = 'openspiel-jax'

  def __init__(self, game, algorithm: str):
    import pyspiel  # noqa: PLC0415
    from open_spiel.python import policy as policy_lib  # noqa: PLC0415
    from open_spiel.python.jax.cfr.jax_cfr import JaxCFR  # noqa: PLC0415

    self._pyspiel, self._policy_lib, self.game, self.algorithm = pyspiel, policy_lib, game, algorithm
    start = time.perf_counter()
    self.solver = JaxCFR(game, **OPENSPIEL_JAX_CONFIGS[algorithm])
    self.init_seconds = time.perf_counter() - start
    # `jit_step` is jitted per instance, so warm up this one and then restore its zero state.
    self._initial = (list(self.solver.regrets), list(self.solver.averages))
    self.advance(1)
    self.setup_seconds = time.perf_counter() - start
    self.reset()

  def reset(self) -> None:
    self.solver.regrets, self.solver.averages = (list(x) for x in self._initial)
    self.solver.timestep = 1

  def advance(self, n: int) -> None:
    self.solver.multiple_steps(n)
    jax.block_until_ready((self.solver.regrets, self.solver.averages))

  def exploitability(self) -> float:
    tabular = self.solver.average_policy()
    return self._pyspiel.exploitability(self.game, self._policy_lib.python_policy_to_pyspiel_policy(tabular))


# Measurements.


def ms_per_iteration(runner, repeats: int, chunk_seconds: float, max_chunk: int) -> dict:
  """Median ms per iteration over `repeats` chunks sized to about `chunk_seconds`."""
  runner.reset()
  chunk = 1
  while chunk < max_chunk and timed(runner.advance, chunk) < chunk_seconds:  # like timeit's autorange
    chunk = min(2 * chunk, max_chunk)
  samples = [1e3 * timed(runner.advance, chunk) / chunk for _ in range(repeats)]
  return dict(median=statistics.median(samples), chunk=chunk, samples=samples)


def evaluation_points(growth: float, limit: int = 10**9) -> list[int]:
  """The iteration counts `solve_to_targets` checks at: 1, then x `growth` each time."""
  points, point = [], 1
  while point <= limit:
    points.append(point)
    point = max(point + 1, math.ceil(point * growth))
  return points


def solve_to_targets(runner, targets: list[float], budget: float, growth: float) -> dict:
  """Solve seconds (update calls only) and iterations until exploitability <= each target.

  Checks at iteration counts 1, then x `growth` each time; the chunk that would
  overrun the budget is cut to fit it and is the last.
  """
  runner.reset()
  trace, reached = [], {}
  done, seconds, point = 0, 0.0, 1
  while True:
    n, last = point - done, False
    if done and n * seconds / done > budget - seconds:
      n, last = max(1, int((budget - seconds) * done / seconds)), True
    seconds += timed(runner.advance, n)
    done += n
    value = runner.exploitability()
    trace.append((done, seconds, value))
    for target in targets:
      if target not in reached and value <= target:
        reached[target] = dict(iteration=done, seconds=seconds)
    if last or len(reached) == len(targets) or seconds >= budget:
      break
    point = max(done + 1, math.ceil(done * growth))
  return dict(reached={str(t): reached.get(t) for t in targets}, trace=trace, final=trace[-1])


def exploitability_seconds(runner, repeats: int) -> dict:
  samples = [timed(runner.exploitability) for _ in range(repeats)]
  return dict(median=statistics.median(samples), samples=samples)


def measure(runner, args) -> dict:
  label = f'{runner.implementation} {runner.algorithm}'
  log(f'  {label}: setup {runner.setup_seconds:.2f} s; timing iterations')
  result = dict(setup_seconds=runner.setup_seconds)
  if hasattr(runner, 'init_seconds'):
    result['init_seconds'] = runner.init_seconds
  result['ms_per_iteration'] = ms_per_iteration(runner, args.repeats, args.chunk_seconds, args.max_chunk)
  log(f'  {label}: {result["ms_per_iteration"]["median"]:.3f} ms/iteration; solving to targets')
  if hasattr(runner, 'solve_to_targets'):  # jaxcfr: a training run
    result['solve'] = runner.solve_to_targets(args.targets, args.budget, args.growth)
  else:
    result['solve'] = solve_to_targets(runner, args.targets, args.budget, args.growth)
  iteration, seconds, value = result['solve']['final']
  log(f'  {label}: {iteration} iterations in {seconds:.2f} s, exploitability {value:.3e}')
  result['exploitability_seconds'] = exploitability_seconds(runner, args.repeats)
  return result


def openspiel_check(compiled, runner, os_game) -> float:
  """Exploitability of a jaxcfr runner's average policy as OpenSpiel computes it (float64)."""
  import pyspiel  # noqa: PLC0415
  from open_spiel.python import policy as policy_lib  # noqa: PLC0415

  from jaxcfr.games import openspiel as bridge  # noqa: PLC0415

  tabular = bridge.to_tabular_policy(compiled, runner.average_policy(), os_game)
  return pyspiel.exploitability(os_game, policy_lib.python_policy_to_pyspiel_policy(tabular))


def bench_game(name: str, args) -> tuple[dict, list[dict]]:
  """Runs every selected (implementation, algorithm) on one game."""
  import pyspiel  # noqa: PLC0415

  os_game = pyspiel.load_game(OPENSPIEL_NAMES.get(name, name))
  start = time.perf_counter()
  compiled = jax.block_until_ready(compiler.compile_game(name, dtype=args.dtype))
  info = dict(
    game=name,
    openspiel_game=str(os_game),
    histories=compiled.num_histories,
    infosets=compiled.num_infosets,
    jaxcfr_compile_game_seconds=time.perf_counter() - start,
  )
  log(
    f'{name}: {compiled.num_histories:,} histories, {compiled.num_infosets:,} infosets, '
    f'compile_game {info["jaxcfr_compile_game_seconds"]:.1f} s'
  )
  plan = []
  if 'jaxcfr' in args.implementations:
    plan += [('jaxcfr', a, lambda a=a: JaxcfrRunner(compiled, a)) for a in args.algorithms]
  if 'openspiel-cpp' in args.implementations:
    plan += [
      ('openspiel-cpp', a, lambda a=a: OpenSpielCppRunner(os_game, a))
      for a in CPP_SOLVERS
      if a in args.algorithms
    ]
  if 'openspiel-jax' in args.implementations:
    plan += [
      ('openspiel-jax', a, lambda a=a: OpenSpielJaxRunner(os_game, a)) for a in args.openspiel_jax_algorithms
    ]

  rows, evaluation_jit = [], []
  for implementation, algorithm, make in plan:
    row = dict(game=name, implementation=implementation, algorithm=algorithm)
    try:
      runner = make()
    except Exception as error:  # report and carry on
      row['unavailable'] = short_error(error)
      log(f'  {implementation} {algorithm}: unavailable: {row["unavailable"]}')
      log(traceback.format_exc())
      rows.append(row)
      continue
    if implementation == 'jaxcfr':
      evaluation_jit.append(runner.evaluation_jit_seconds)
    try:
      row.update(measure(runner, args))
      if implementation == 'jaxcfr' and args.check:
        row['final_exploitability_openspiel'] = openspiel_check(compiled, runner, os_game)
        log(
          f'  jaxcfr {algorithm}: OpenSpiel recomputes exploitability '
          f'{row["final_exploitability_openspiel"]:.3e}'
        )
    except Exception as error:
      row['unavailable'] = short_error(error)
      log(f'  {implementation} {algorithm}: failed: {row["unavailable"]}')
      log(traceback.format_exc())
    rows.append(row)
    del runner
  if evaluation_jit:  # each algorithm's state differs, so each has its own program
    info['jaxcfr_exploitability_jit_seconds'] = statistics.median(evaluation_jit)
  return info, rows


# Report.


def fmt_seconds(seconds: float) -> str:
  if seconds >= 100:
    return f'{seconds:.0f}'
  if seconds >= 1:
    return f'{seconds:.2f}'
  return f'{seconds:.3g}'


def fmt_ratio(value: float, bound: str = '') -> str:
  return f'{bound}{value:.3g}×' if value >= 10 else f'{bound}{value:.2f}×'


def ratio_cell(other: float | None, ours: float | None, budget: float) -> str:
  """OpenSpiel / jaxcfr, where None means the budget ran out."""
  if other is not None and ours is not None:
    return fmt_ratio(other / ours)
  if other is None and ours is not None:
    return fmt_ratio(budget / ours, '>')
  if other is not None and ours is None:
    return fmt_ratio(other / budget, '<')
  return '–'


def markdown(infos: list[dict], rows: list[dict], args) -> str:
  targets = [str(t) for t in args.targets]
  lines = [
    f'# jaxcfr vs OpenSpiel ({datetime.datetime.now().isoformat(timespec="seconds")})',
    '',
    f'jax {jax.__version__} ({jax.devices()[0].platform}, {os.cpu_count()} CPUs visible; JAX may use '
    f'several threads, OpenSpiel C++ uses one), open_spiel {openspiel_version()}, '
    f'jaxcfr dtype {args.dtype}, OpenSpiel C++ float64. Budget {args.budget:g} s per run, '
    f'{args.repeats} repeats, exploitability checked every x{args.growth:g} iterations (excluded from '
    'solve time). × = OpenSpiel time / jaxcfr time for the same algorithm (> 1: jaxcfr faster).',
    '',
  ]
  for info in infos:
    extra = ''
    if 'jaxcfr_exploitability_jit_seconds' in info:
      extra = f', exploitability jit {info["jaxcfr_exploitability_jit_seconds"]:.1f} s'
    lines.append(
      f'- {info["game"]} ({info["openspiel_game"]}): {info["histories"]:,} histories, '
      f'{info["infosets"]:,} infosets; jaxcfr compile_game '
      f'{info["jaxcfr_compile_game_seconds"]:.1f} s{extra}'
    )
  lines.append('')
  header = ['game', 'implementation', 'algorithm', 'setup s', 'ms/iter', '×']
  for target in targets:
    header += [f's to {target}', '×']
  header += ['s/exploitability', '×', 'final exploitability (iters)']
  lines.append('| ' + ' | '.join(header) + ' |')
  lines.append('|' + '|'.join('---' for _ in header) + '|')
  reference = {
    (r['game'], r['algorithm']): r for r in rows if r['implementation'] == 'jaxcfr' and 'unavailable' not in r
  }
  for r in rows:
    cells = [r['game'], r['implementation'], r['algorithm']]
    if 'unavailable' in r:
      lines.append(
        '| ' + ' | '.join(cells + [f'unavailable: {r["unavailable"]}'] + [''] * (len(header) - 4)) + ' |'
      )
      continue
    ours = reference.get((r['game'], r['algorithm'])) if r['implementation'] != 'jaxcfr' else None
    cells += [fmt_seconds(r['setup_seconds']), f'{r["ms_per_iteration"]["median"]:.4g}']
    per_iteration = r['ms_per_iteration']['median']
    cells.append(fmt_ratio(per_iteration / ours['ms_per_iteration']['median']) if ours else '')
    for target in targets:
      hit = r['solve']['reached'][target]
      cells.append(f'{fmt_seconds(hit["seconds"])} ({hit["iteration"]} it)' if hit else f'>{args.budget:g}')
      if ours:
        mine = ours['solve']['reached'][target]
        cells.append(ratio_cell(hit and hit['seconds'], mine and mine['seconds'], args.budget))
      else:
        cells.append('')
    cells.append(fmt_seconds(r['exploitability_seconds']['median']))
    cells.append(
      fmt_ratio(r['exploitability_seconds']['median'] / ours['exploitability_seconds']['median'])
      if ours
      else ''
    )
    iteration, _, value = r['solve']['final']
    cells.append(f'{value:.3e} ({iteration})')
    lines.append('| ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines) + '\n'


def openspiel_version() -> str:
  try:
    return importlib.metadata.version('open_spiel')
  except importlib.metadata.PackageNotFoundError:
    return 'unknown'


def parse_list(text: str) -> list[str]:
  return [item.strip() for item in text.split(',') if item.strip()]


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument(
    '--games', default=None, help='comma-separated: leduc, kuhn, liars_dice (default leduc)'
  )
  parser.add_argument(
    '--algorithms',
    default=None,
    help=f'jaxcfr algorithms (default {",".join(JAXCFR_ALGORITHMS)}); OpenSpiel C++ runs '
    'those of cfr, cfr+ that are listed',
  )
  parser.add_argument(
    '--openspiel-jax-algorithms',
    default='cfr+',
    help=f'JaxCFR configurations, from {",".join(OPENSPIEL_JAX_CONFIGS)} (default cfr+, its default)',
  )
  parser.add_argument('--implementations', default=','.join(IMPLEMENTATIONS))
  parser.add_argument('--targets', default=','.join(f'{t:g}' for t in DEFAULT_TARGETS))
  parser.add_argument('--budget', type=float, default=None, help='solve seconds per run (default 60)')
  parser.add_argument('--repeats', type=int, default=None, help='timed chunks / evaluations (default 5)')
  parser.add_argument(
    '--chunk-seconds',
    type=float,
    default=None,
    help='length of one timed chunk for ms/iteration (default 0.5)',
  )
  parser.add_argument('--max-chunk', type=int, default=100_000)
  parser.add_argument('--growth', type=float, default=2.0, help='checkpoint spacing factor (default 2)')
  parser.add_argument(
    '--dtype',
    default='float32',
    choices=('float32', 'float64'),
    help="jaxcfr's dtype; float64 also makes JaxCFR use float64",
  )
  parser.add_argument(
    '--no-check',
    dest='check',
    action='store_false',
    help="skip recomputing jaxcfr's final exploitability with OpenSpiel",
  )
  parser.add_argument(
    '--quick',
    action='store_true',
    help='smoke test: kuhn, cfr and cfr+, budget 1 s, 2 repeats of short chunks',
  )
  parser.add_argument('--out', default=os.path.join('experiments', 'results'))
  args = parser.parse_args(argv)

  if args.quick:
    defaults = dict(games='kuhn', algorithms='cfr,cfr+', budget=1.0, repeats=2, chunk_seconds=0.05)
  else:
    defaults = dict(
      games='leduc', algorithms=','.join(JAXCFR_ALGORITHMS), budget=60.0, repeats=5, chunk_seconds=0.5
    )
  for key, value in defaults.items():
    if getattr(args, key) is None:
      setattr(args, key, value)
  args.games = parse_list(args.games)
  args.algorithms = parse_list(args.algorithms)
  args.openspiel_jax_algorithms = parse_list(args.openspiel_jax_algorithms)
  args.implementations = parse_list(args.implementations)
  args.targets = sorted((float(t) for t in parse_list(args.targets)), reverse=True)
  for value, known, flag in (
    (args.algorithms, JAXCFR_ALGORITHMS, '--algorithms'),
    (args.openspiel_jax_algorithms, tuple(OPENSPIEL_JAX_CONFIGS), '--openspiel-jax-algorithms'),
    (args.implementations, IMPLEMENTATIONS, '--implementations'),
  ):
    unknown = [v for v in value if v not in known]
    if unknown:
      parser.error(f'{flag}: unknown {unknown}; choose from {list(known)}')
  if args.growth <= 1:
    parser.error('--growth must be > 1')
  if args.dtype == 'float64':
    jax.config.update('jax_enable_x64', True)
  os.makedirs(args.out, exist_ok=True)

  infos, rows = [], []
  for name in args.games:
    info, game_rows = bench_game(name, args)
    infos.append(info)
    rows += game_rows

  table = markdown(infos, rows, args)
  print(table)
  stem = os.path.join(args.out, 'bench_openspiel')
  with open(stem + '.md', 'w') as handle:
    handle.write(table)
  with open(stem + '.json', 'w') as handle:
    json.dump(
      dict(
        settings=vars(args),
        jax=jax.__version__,
        backend=jax.devices()[0].platform,
        open_spiel=openspiel_version(),
        cpus=os.cpu_count(),
        games=infos,
        results=rows,
      ),
      handle,
      indent=1,
    )
  log(f'wrote {stem}.md and {stem}.json')


if __name__ == '__main__':
  main()
