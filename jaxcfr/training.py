"""The library training loop: any solver, a budget, evaluations, checkpoints, exact resume.

    result = jaxcfr.train(game, jaxcfr.make_solver('dcfr'), seconds=30,
                          checkpoint_dir='leduc-run', checkpoint_every=5000)
    result.curve            # [{iteration, seconds, exploitability}, ...]
    result.policy           # [I, A] average policy

Iterations run in jitted chunks between the points where something is due (an
evaluation, a checkpoint, the end of the budget, a progress report at least
every `report_seconds`). `seconds` counts solving only: producing the average
policy counts (Deep CFR trains its strategy networks there), JIT compilation
and judging the policy (best responses) do not.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import backend, checkpoints, distributed, evaluation, memory, protocol, sharding
from jaxcfr.version import __version__

NEVER = 2**62  # an iteration count no run reaches
FIRST_CHUNK = 10  # the most iterations run before the speed is known, in runs without a clock


class TrainingError(ValueError):
  """A request the loop cannot honour (one line, meant for the user)."""


class MemoryLimitError(TrainingError):
  """A run's compiled iteration needs more memory than its `max_bytes`."""


class Progress(NamedTuple):
  """What `on_progress` receives after every chunk."""

  iteration: int  # iterations completed, earlier runs included
  start: int  # the iteration this call started from (a resumed run's checkpoint)
  total: int | None  # the iteration total, if one was given
  seconds: float  # solve seconds so far
  curve: list[dict]  # evaluations so far
  state: Any  # the solver state


class Result(NamedTuple):
  state: Any  # the final solver state
  policy: jax.Array  # [I, A] average policy
  iterations: int
  seconds: float  # solving seconds, earlier runs included
  jit_seconds: float  # compiling the update, policy and evaluation programs
  evaluation_seconds: float  # one exact evaluation (median of three)
  policy_seconds: float  # producing average policies (included in `seconds`)
  nash_conv: float
  exploitability: float  # NashConv / number of players
  values: list[float]  # each player's expected value under `policy`
  curve: list[dict]  # {iteration, seconds, exploitability}
  resumed_from: int | None  # the checkpoint's iteration, when resumed
  checkpoint_seconds: tuple[float, ...] = ()  # wall seconds of each checkpoint this call saved
  check_seconds: float = 0.0  # wall seconds of the exact evaluations during the run (not in `seconds`)


def open_checkpoints(
  directory: str, keep: int = 3, resume: bool = False
) -> tuple[checkpoints.Checkpointer, list]:
  """The checkpointer of `directory` and its steps, checked before any work: writable,
  and holding no earlier run unless `resume`."""
  checkpointer = checkpoints.Checkpointer(directory, keep=keep)
  checkpointer.check_writable()
  existing = checkpointer.steps()
  if existing and not resume:
    raise TrainingError(
      f'{directory!r} already holds checkpoints (newest: iteration {existing[-1]:,}); '
      'resume it (--resume; resume=True) or choose another directory'
    )
  return checkpointer, existing


def train(
  game,
  solver,
  *,
  key: int | jax.Array = 0,
  iterations: int | None = None,
  seconds: float | None = None,
  eval_every: int | None = None,
  eval_every_seconds: float | None = None,
  eval_at: Sequence[int] | None = None,
  target: float | None = None,
  checkpoint_dir: str | None = None,
  checkpoint_every: int | None = None,
  checkpoint_seconds: float | None = None,
  keep_checkpoints: int = 3,
  resume: bool = False,
  identity: dict | None = None,
  on_progress: Callable[[Progress], None] | None = None,
  log: Callable[[str], None] | None = None,
  report_seconds: float = 10.0,
  evaluate: bool = True,
  warm_up: bool = False,
  max_bytes: int | None = None,
  policy: bool = True,
  programs: dict | None = None,
) -> Result:
  """Runs `solver` on the compiled `game` until `iterations` (a total) or `seconds` of
  solving, whichever comes first, evaluating exact exploitability along the way.

  A solver with `evaluate_average` (the subgame solvers) on a game of small arrays (a river
  subgame) runs each check due by iterations in the call of the chunk before it; the check's share
  of that call (measured before the run: the program with and without a check, no iterations,
  medians of three) is counted in `check_seconds`, the rest in `seconds`.

  Args:
    key: a seed or a `jax.random.key` for sampled solvers (full-width ones ignore it).
    eval_every / eval_every_seconds: evaluate every K iterations or S solve seconds;
      by default about ten log-spaced points per decade (every tenth of the budget for
      solvers whose policy is costly, i.e. Deep CFR).
    eval_at: evaluate at these iteration counts instead (and at the end).
    target: stop at the first evaluation whose exploitability is at most this (the budget
      still bounds the run).
    checkpoint_dir: save the state there (orbax) every `checkpoint_every` iterations
      (default: a tenth of `iterations`, or every 60 s with only `seconds`) and/or every
      `checkpoint_seconds`, at the end, and on Ctrl-C, keeping `keep_checkpoints`.
    resume: continue from the newest checkpoint; totals count the earlier runs, and the
      result is bit-identical to an uninterrupted run.
    identity: extra fields a checkpoint must match to be resumed (e.g. the device count).
    on_progress: called with a `Progress` after every chunk.
    log: called with one-line messages (resumed from, checkpoint saved on interrupt).
      Over several processes (`jaxcfr.distributed`), `on_progress` and `log` are called in process 0
      only; every process must call `train` alike (each takes part in the collectives and the saves).
    evaluate: False for a game too large to evaluate exactly (a hold'em blueprint): no
      evaluations, no curve; the result's exploitability, NashConv and values are NaN.
    warm_up: run the compiled program twice for one iteration before the clock starts (the
      results discarded), so that `jit_seconds` counts XLA's first executions of it, which are
      slower than later ones, and `seconds` the solving alone; for solvers whose iteration is
      cheap (the subgame solvers), where those first executions are a visible share of a solve.
    policy: False: no average policy is laid out (the result's `policy` is None; the solver's own
      checks read the state, `Solver.evaluate_average`), for games whose laid-out policy is large
      beside the state (a flop subgame); the caller makes it from `Result.state` if it wants it.
    max_bytes: a run whose compiled iteration needs more memory (XLA's account,
      `memory.program_bytes`) stops with `MemoryLimitError` once compiled, before any iteration or
      save (None: no limit).
    programs: a dict kept across runs of one solver (its algorithm and hyper-parameters) on games
      of one shape, such as many spots of one tree: the second and later runs take the first's
      compiled programs (and their timings) from it instead of tracing and compiling again.
  """
  _check_request(
    iterations, seconds, eval_every, eval_every_seconds, eval_at, target, evaluate,
    checkpoint_dir, checkpoint_every, checkpoint_seconds, resume,
  )  # fmt: skip
  if not distributed.is_main():  # over several processes, process 0 alone reports
    log = on_progress = None
  say = log or (lambda message: None)
  seed = key if isinstance(key, int) else None
  key = jax.random.key(key) if isinstance(key, int) else key
  checkpointer, existing = None, []
  if checkpoint_dir is not None:
    checkpointer, existing = open_checkpoints(checkpoint_dir, keep_checkpoints, resume)
  if not policy and evaluate and solver.evaluate_average is None:
    raise ValueError('policy=False needs a solver whose checks read its state (Solver.evaluate_average)')
  programs = _compile(game, solver, key, evaluate, warm_up, policy, programs)
  if max_bytes is not None:
    _check_memory(programs, max_bytes)
  identity = _identity(game, solver, key, seed, checkpointer is not None, identity)
  run = _Run(game, solver, programs, _Budget(iterations, seconds, target, report_seconds), programs.state)
  if existing:
    _restore(run, checkpointer, identity, checkpoint_dir, say)
  elif resume:
    say(f'no checkpoint in {checkpoint_dir} yet; starting from iteration 0')
  checks = _checks(run, eval_every, eval_every_seconds, eval_at)
  saver = _saver(run, checkpointer, identity, checkpoint_every, checkpoint_seconds)
  # A costly final policy (Deep CFR trains networks) must fit in the budget: keep room for it.
  run.reserve = programs.policy_seconds_once if solver.costly_policy else 0.0
  try:
    run.loop(checks, saver, on_progress)
    saver.at_end(run)
  except KeyboardInterrupt:
    saver.on_interrupt(run, say)
    raise
  finally:
    if checkpointer is not None:
      checkpointer.close()
  return run.result(saver.seconds_each)


def _check_request(
  iterations, seconds, eval_every, eval_every_seconds, eval_at, target, evaluate,
  checkpoint_dir, checkpoint_every, checkpoint_seconds, resume,
) -> None:  # fmt: skip
  """Refuses, before any work, what `train` cannot honour (`TrainingError`)."""
  _check_budget(iterations, seconds, eval_every, eval_every_seconds, eval_at, target)
  if not evaluate and any(x is not None for x in (eval_every, eval_every_seconds, eval_at, target)):
    raise TrainingError('eval_every, eval_every_seconds, eval_at and target need evaluate=True')
  if checkpoint_dir is None and (checkpoint_every or checkpoint_seconds or resume):
    raise TrainingError('checkpoint_every, checkpoint_seconds and resume need a checkpoint directory')


class _Programs(NamedTuple):
  """A run's compiled programs, and what timing them before the run found."""

  state: Any  # the solver's initial state, sharded like the game
  run_chunk: Callable  # (state, game, n) -> state after n iterations
  make_policy: Callable | None  # (state, game) -> the average policy; None: none made (`policy`)
  evaluate: Callable | None  # (state, or the average policy, game) -> [1 + P] NashConv and values
  step: Callable | None  # in-chunk checks (`_with_check`): (state, game, n, check) -> (state, [1 + P])
  exact: bool  # the run checks exploitability (`evaluate=True`)
  from_state: bool  # the checks read the state (`Solver.evaluate_average`), not a laid-out policy
  in_chunk: bool  # the checks due by iterations run in the chunk's call (`step`)
  jit_seconds: float  # compiling the programs (and the warm-up)
  policy_seconds_once: float  # one average policy
  evaluation_seconds: float  # one check (median of three)
  check_cost: float  # a check's share of a chunk's call (in-chunk checks; else 0)


def shape_signature(tree) -> tuple:
  """(pytree structure, each leaf's shape and type) of `tree`: games with equal signatures run the
  same compiled programs."""
  leaves, structure = jax.tree.flatten(tree)
  return structure, tuple((np.shape(x), np.dtype(getattr(x, 'dtype', type(x)))) for x in leaves)


def _compile(game, solver, key, exact: bool, warm_up: bool, policy: bool = True, cache=None) -> _Programs:
  """Compiles the run's programs (see `train`: the chunk, the average policy, the check) and times one
  average policy and one check; with `cache` (a dict), takes them from there for a game of the same
  structure, shapes and types as an earlier run's, else keeps them there."""
  jit_start = time.perf_counter()
  # On a sharded game (`sharding.shard_game`) the state is split like the game and stays so.
  make_state = lambda: sharding.shard_state(solver.init(game, key), game)  # noqa: E731
  # A game whose state goes in donated (a subgame's: on a flop, gigabytes) compiles its programs
  # against the state's shapes and makes the state afterwards: XLA's compiler holds hundreds of
  # megabytes while it works, which then go back to the system (`memory.release_freed`) before the
  # state exists, instead of adding to its peak.
  late = bool(getattr(game, 'donate_state', False)) and sharding.game_mesh(game) is None
  signature = None
  if cache is not None:
    signature = (*shape_signature(game), exact, warm_up, policy)
    if signature in cache:  # compiled and warmed up already
      hit, box = cache[signature], [make_state()]  # `_placed` frees each leaf as it moves
      return hit._replace(state=_placed(box, hit.run_chunk), jit_seconds=time.perf_counter() - jit_start)
  state = jax.eval_shape(make_state) if late else make_state()
  placed = {} if sharding.game_mesh(game) is None else {'out_shardings': jax.tree.map(_sharding_of, state)}
  # A solver that evaluates its average from its own state: its checks need no laid-out policy. On a
  # game of small arrays they run in the chunk's program, after its iterations (`_with_check`); a
  # turn subgame's (`large_blocks`) iterations run slower in that program.
  from_state = exact and solver.evaluate_average is not None
  in_chunk = from_state and not placed and not getattr(game, 'large_blocks', False)
  step = None
  if in_chunk:
    step = backend.jit(_with_check(solver), game).lower(state, game, np.int32(1), np.bool_(False)).compile()
    run_chunk = lambda state, game, steps: step(state, game, steps, np.bool_(False))[0]  # noqa: E731
  else:
    # A game that asks for it (a subgame: on a flop its state is gigabytes) has its state go in and the
    # next come out in the same buffers (donated): one state in memory, not two. The loop never reads
    # a state it has passed on.
    donated = bool(getattr(game, 'donate_state', False)) and not placed
    compiled = (
      backend.jit(
        lambda s, g, n: protocol.run(solver, s, g, n), game, donate_argnums=0 if donated else (), **placed
      )
      .lower(state, game, jnp.asarray(1, jnp.int32))
      .compile()
    )
    run_chunk = functools.partial(_donated, compiled) if donated else compiled
  make_policy = backend.jit(solver.average_policy, game).lower(state, game).compile() if policy else None
  evaluate = None
  if exact and from_state and not in_chunk:
    evaluate = backend.jit(_packed(solver.evaluate_average), game).lower(state, game).compile()
  if late:
    memory.release_freed()
    state = make_state()
  if not in_chunk:
    box = [state]
    del state  # handed over: `_placed` frees each leaf as it moves
    state = _placed(box, run_chunk)
  # Two calls: the second is still slower than later ones. Not where the program takes its state
  # donated and the state is large (a flop's): a copy to donate would hold it twice, for a warm-up
  # that is nothing beside such a solve.
  donating = isinstance(run_chunk, functools.partial)
  if warm_up and not (donating and memory.nbytes(state) > WARM_UP_COPY_BYTES):
    for _ in range(2):
      copy = jax.tree.map(jnp.copy, state) if donating else state
      jax.block_until_ready(run_chunk(copy, game, np.int32(1)))
  jit_seconds = time.perf_counter() - jit_start
  start = time.perf_counter()
  policy = jax.block_until_ready(make_policy(state, game)) if policy else None
  policy_seconds_once = time.perf_counter() - start
  evaluation_seconds, check_cost = 0.0, 0.0
  if in_chunk:
    # A check's share of a chunk's call: the program with and without it, no iterations. Measured
    # back to back, so a little less than in a run, where the check follows the iterations' work.
    evaluate = lambda state, game: step(state, game, np.int32(0), np.bool_(True))[1]  # noqa: E731
    evaluation_seconds = median_seconds(evaluate, state, game)
    check_cost = max(evaluation_seconds - median_seconds(run_chunk, state, game, np.int32(0)), 0.0)
  elif exact:
    if not from_state:
      jit_start = time.perf_counter()
      evaluate = backend.jit(_packed(evaluate_profile), game).lower(policy, game).compile()
      jit_seconds += time.perf_counter() - jit_start
    evaluation_seconds = median_seconds(evaluate, state if from_state else policy, game)
  programs = _Programs(
    state, run_chunk, make_policy, evaluate, step, exact, from_state, in_chunk, jit_seconds,
    policy_seconds_once, evaluation_seconds, check_cost,
  )  # fmt: skip
  if cache is not None:
    cache[signature] = programs._replace(state=None)
  return programs


# The largest state copied for `train(warm_up=True)`'s calls when the chunk's program takes it donated.
WARM_UP_COPY_BYTES = 2**28


def _placed(box: list, run_chunk):
  """The state in `box` (a list that holds the only reference to it, which it empties) on the devices
  and shardings the chunk's program takes it in (a subgame whose river cards are split over devices
  takes its blocks' state split), moved a leaf at a time, each leaf's old buffer freed as its new one
  comes: otherwise the first call would copy the whole state across, holding it twice."""
  program = run_chunk.args[0] if isinstance(run_chunk, functools.partial) else run_chunk
  shardings = getattr(program, 'input_shardings', None)
  if shardings is None:
    return box.pop()
  leaves, structure = jax.tree.flatten(box.pop())  # the tree itself goes here: its leaves are in `leaves`
  for i, target in enumerate(jax.tree.leaves(shardings[0][0])):
    if not leaves[i].sharding.is_equivalent_to(target, leaves[i].ndim):
      leaves[i] = jax.device_put(leaves[i], target)
  return jax.tree.unflatten(structure, leaves)


def _donated(compiled, state, game, steps):
  """The chunk's program `compiled`, which takes `state` donated."""
  return compiled(_distinct(state), game, steps)


def _distinct(state):
  """`state` with no buffer in two places, which a program that takes it donated refuses: a solver's
  `init` may use one array of zeros twice, and moving that array onto several devices may keep its
  buffer as one device's copy of both."""
  seen = set()

  def one(x):
    buffers = {(s.device, s.data.unsafe_buffer_pointer()) for s in x.addressable_shards}
    if buffers & seen:
      x = jnp.copy(x)
      buffers = {(s.device, s.data.unsafe_buffer_pointer()) for s in x.addressable_shards}
    seen.update(buffers)
    return x

  return jax.tree.map(one, state)


def _check_memory(programs: _Programs, limit: int) -> None:
  chunk = programs.run_chunk
  chunk = chunk.args[0] if isinstance(chunk, functools.partial) else chunk  # `_donated`'s program
  needed = memory.program_bytes(programs.step or chunk)
  if needed is not None and needed > limit:
    raise MemoryLimitError(
      f'an iteration needs about {memory.format_bytes(needed)} of memory, more than the limit of '
      f'{memory.format_bytes(limit)}'
    )


def _identity(game, solver, key, seed: int | None, checkpointed: bool, extra: dict | None) -> dict:
  """What a checkpoint must match to be resumed: the game, the solver, the dtype, the seed, `extra`."""
  return {
    'game': game.name,
    'game_fingerprint': game.info.fingerprint,
    'game_digest': checkpoints.game_digest(game) if checkpointed else None,
    'algorithm': solver.name,
    'hyperparameters': jsonable(solver.hyperparameters),
    'dtype': jnp.dtype(game.dtype).name,
    'seed': seed if seed is not None else jax.random.key_data(key).tolist(),
    **(extra or {}),
  }


def _restore(run: _Run, checkpointer, identity: dict, directory: str, say: Callable[[str], None]) -> None:
  """Continues `run` from the newest checkpoint in `directory`: its state, iterations, seconds, curve."""
  state, saved = checkpointer.restore(run.state, identity)
  run.state = sharding.shard_state(state, run.game)
  run.done, run.solve_seconds, run.curve = saved['iteration'], saved['seconds'], saved['curve']
  iterations = run.budget.iterations
  if iterations is not None and run.done > iterations:
    raise TrainingError(
      f'the checkpoint in {directory!r} is at iteration {run.done:,}, past the total of '
      f'{iterations:,} asked for; totals count the earlier runs: ask for at least {run.done:,}'
    )
  run.resumed_from = run.done
  say(f'resumed from {directory} at iteration {run.done:,} ({run.solve_seconds:.2f} solve seconds)')


class _Budget(NamedTuple):
  iterations: int | None  # the iteration total, earlier runs included
  seconds: float | None  # solve seconds, earlier runs included
  target: float | None  # stop at an exploitability at most this
  report_seconds: float  # the longest chunk, in solve seconds


@dataclasses.dataclass
class _Checks:
  """When the next exact evaluation is due: at iteration `next_eval` (the next of `schedule`), or,
  every `every_seconds` solve seconds, at `next_time` (then `next_eval` is None)."""

  schedule: Iterator[int]
  every_seconds: float | None
  next_eval: int | None
  next_time: float | None

  def due(self, run: _Run) -> bool:
    """Whether a check is due after the chunk that just ran."""
    if self.next_time is not None:
      return run.solve_seconds >= self.next_time - 0.5 * run.per_iteration
    return run.done >= self.next_eval

  def advance(self, run: _Run) -> None:
    """The next check after the one just run."""
    if self.next_time is not None:
      self.next_time = (run.solve_seconds // self.every_seconds + 1) * self.every_seconds
    else:
      while self.next_eval <= run.done:
        self.next_eval = next(self.schedule)


def _checks(run: _Run, eval_every, eval_every_seconds, eval_at) -> _Checks:
  """`run`'s checks: `eval_at`, every `eval_every` iterations or `eval_every_seconds` (see `train`),
  the next one after what a resumed run has done."""
  budget, exact = run.budget, run.programs.exact
  # A costly policy (Deep CFR trains networks for it) is produced mid-run only to be evaluated.
  costly = exact and run.solver.costly_policy
  if costly and eval_every is None and eval_every_seconds is None and eval_at is None:
    if budget.seconds is not None:
      eval_every_seconds = budget.seconds / 10
    else:
      eval_every = max(1, math.ceil(budget.iterations / 10))
  if not exact:
    schedule = iter([NEVER])
  elif eval_at is not None:
    schedule = iter([*sorted(set(eval_at)), NEVER])
  else:
    schedule = _eval_schedule(eval_every)
  next_eval = next(schedule)
  while next_eval <= run.done:
    next_eval = next(schedule)
  next_time = None
  if eval_every_seconds is not None:
    next_eval, next_time = None, (run.solve_seconds // eval_every_seconds + 1) * eval_every_seconds
  return _Checks(schedule, eval_every_seconds, next_eval, next_time)


@dataclasses.dataclass
class _Saver:
  """A run's checkpoints: every `every` iterations (the next at `next_save`) and/or every `seconds` of
  wall time, at the end, and on Ctrl-C; none without a checkpointer."""

  checkpointer: checkpoints.Checkpointer | None
  identity: dict
  every: int | None
  seconds: float | None
  next_save: int | None
  last_time: float  # perf_counter of the latest save (or of the start)
  saved_at: int  # the iteration of the latest save (or of the start)
  seconds_each: list[float]  # wall seconds of each save (not counted as solving)

  def save(self, run: _Run) -> None:
    started = time.perf_counter()
    progress = {'iteration': run.done, 'seconds': run.solve_seconds, 'curve': run.curve}
    self.checkpointer.save(run.done, run.state, self.identity, progress, __version__)
    self.seconds_each.append(time.perf_counter() - started)

  def after_chunk(self, run: _Run) -> None:
    due = self.next_save is not None and run.done >= self.next_save
    overdue = self.seconds is not None and time.perf_counter() - self.last_time >= self.seconds
    if self.checkpointer is not None and (due or overdue):
      self.save(run)
      self.last_time, self.saved_at = time.perf_counter(), run.done
      if self.every:
        self.next_save = (run.done // self.every + 1) * self.every

  def at_end(self, run: _Run) -> None:
    if self.checkpointer is not None and (run.done > self.saved_at or not self.checkpointer.steps()):
      self.save(run)

  def on_interrupt(self, run: _Run, say: Callable[[str], None]) -> None:
    if self.checkpointer is not None and run.done > self.saved_at:
      self.save(run)
      say(f'interrupted; checkpoint saved at iteration {run.done:,}')


def _saver(run: _Run, checkpointer, identity: dict, every: int | None, seconds: float | None) -> _Saver:
  """`run`'s checkpoints; by default every tenth of `iterations`, or every 60 s with only `seconds`."""
  if checkpointer is not None and every is None and seconds is None:
    if run.budget.iterations is not None:
      every = max(1, math.ceil(run.budget.iterations / 10))
    else:
      seconds = 60.0
  next_save = (run.done // every + 1) * every if checkpointer is not None and every else None
  return _Saver(checkpointer, identity, every, seconds, next_save, time.perf_counter(), run.done, [])


@dataclasses.dataclass
class _Run:
  """The loop's state: the solver's and what the run has counted so far."""

  game: Any
  solver: Any
  programs: _Programs
  budget: _Budget
  state: Any  # the solver state
  done: int = 0  # iterations completed, earlier runs included
  solve_seconds: float = 0.0  # earlier runs included
  curve: list[dict] = dataclasses.field(default_factory=list)
  resumed_from: int | None = None
  per_iteration: float | None = None  # solve seconds per iteration in the latest chunk
  evaluated: tuple | None = None  # the latest check's (NashConv, values)
  policy: Any = None  # the latest average policy (None where the checks read the state)
  policy_seconds: float = 0.0  # producing average policies (in `solve_seconds`)
  check_seconds: float = 0.0  # the exact evaluations (not in `solve_seconds`)
  reserve: float = 0.0  # solve seconds kept for a costly final policy

  def loop(self, checks: _Checks, saver: _Saver, on_progress) -> None:
    """Chunks of iterations until the budget or the target is reached: after each, the check that is
    due, the progress report and the checkpoint that is due."""
    while not self.finished():
      steps = self.chunk_size(checks, saver)
      # A check due after this chunk (by iterations) runs in its call where it can.
      done = self.done + steps
      checked = (
        self.programs.in_chunk
        and checks.next_time is None
        and (done >= checks.next_eval or done == self.budget.iterations)
      )
      if checked:
        self.state, self.evaluated, elapsed = self.chunk_and_check(steps)
      else:
        elapsed = self.chunk(steps)
      self.done += steps
      self.per_iteration = elapsed / steps
      due_eval = checks.due(self)
      if checked:
        self.policy = None
      elif due_eval or self.finished():
        self.policy, self.evaluated = self.produce_and_evaluate()  # the last one is the final result
      if checked or due_eval or self.finished():
        if self.programs.exact:
          self.record(self.evaluated[0])
        checks.advance(self)
      if on_progress is not None:
        progress = Progress(
          self.done,
          self.resumed_from or 0,
          self.budget.iterations,
          self.solve_seconds,
          self.curve,
          self.state,
        )
        on_progress(progress)
      saver.after_chunk(self)

  def finished(self) -> bool:
    budget, spent = self.budget, self.solve_seconds + self.reserve
    if budget.iterations is not None and self.done >= budget.iterations:
      return True
    if (
      budget.target is not None
      and self.curve
      and self.curve[-1]['iteration'] == self.done
      and self.curve[-1]['exploitability'] <= budget.target
    ):
      return True
    margin = 0.5 * self.per_iteration if self.per_iteration is not None else 0.0
    return budget.seconds is not None and spent >= budget.seconds - margin

  def chunk_size(self, checks: _Checks, saver: _Saver) -> int:
    """The next chunk's iterations: up to the next stop (a check, the total, a checkpoint), bounded by
    the time left and the report interval."""
    budget = self.budget
    limits = [t - self.done for t in (checks.next_eval, budget.iterations, saver.next_save) if t is not None]
    steps = min(limits) if limits else NEVER
    if self.per_iteration is None:  # the first chunk measures the speed
      # One iteration where a clock needs the speed; else up to the first stop, if it is near (a
      # check every 10 iterations then needs no extra chunk, whose call costs as much as an
      # iteration on a small game).
      clocked = budget.seconds is not None or checks.next_time is not None
      return 1 if clocked else min(steps, FIRST_CHUNK)
    room = [budget.report_seconds]
    if budget.seconds is not None:
      room.append(budget.seconds - self.solve_seconds - self.reserve)
    if checks.next_time is not None:
      room.append(checks.next_time - self.solve_seconds)
    return max(1, min(steps, int(min(room) / max(self.per_iteration, 1e-9)), 2**30))

  def chunk(self, steps: int) -> float:
    """`steps` iterations; returns their seconds."""
    start = time.perf_counter()
    # A NumPy count: `jnp.asarray` would put it on the device first, at a cost on every chunk.
    self.state = jax.block_until_ready(self.programs.run_chunk(self.state, self.game, np.int32(steps)))
    elapsed = time.perf_counter() - start
    self.solve_seconds += elapsed
    return elapsed

  def chunk_and_check(self, steps: int):
    """`steps` iterations and the check after them in one call: (state, (NashConv, values), the
    iterations' seconds)."""
    start = time.perf_counter()
    state, packed = self.programs.step(self.state, self.game, np.int32(steps), np.bool_(True))
    packed = np.asarray(packed)
    elapsed = time.perf_counter() - start
    check = min(self.programs.check_cost, elapsed)
    self.solve_seconds += elapsed - check
    self.check_seconds += check
    return state, (packed[0], packed[1:]), elapsed - check

  def produce_policy(self):
    start = time.perf_counter()
    policy = jax.block_until_ready(self.programs.make_policy(self.state, self.game))
    elapsed = time.perf_counter() - start
    self.solve_seconds += elapsed
    self.policy_seconds += elapsed
    if self.solver.costly_policy:
      self.reserve = elapsed
    return policy

  def produce_and_evaluate(self):
    """(the average policy, or None where the check reads the state; its (NashConv, values))."""
    programs = self.programs
    policy = None if programs.from_state or programs.make_policy is None else self.produce_policy()
    start = time.perf_counter()
    if not programs.exact:
      evaluated = (math.nan, [math.nan] * self.game.num_players)
    else:
      packed = np.asarray(programs.evaluate(self.state if programs.from_state else policy, self.game))
      evaluated = packed[0], packed[1:]
    self.check_seconds += time.perf_counter() - start
    return policy, evaluated

  def record(self, nash_conv) -> None:
    self.curve.append(
      {
        'iteration': self.done,
        'seconds': self.solve_seconds,
        'exploitability': float(nash_conv) / self.game.num_players,
      }
    )

  def result(self, save_seconds: list[float]) -> Result:
    if self.evaluated is None:  # resumed at the total: nothing ran, evaluate what was restored
      self.policy, self.evaluated = self.produce_and_evaluate()
      if self.programs.exact and (not self.curve or self.curve[-1]['iteration'] != self.done):
        self.record(self.evaluated[0])
    if self.policy is None and self.programs.make_policy is not None:  # the checks read the state
      self.policy = self.produce_policy()
    nash_conv, values = self.evaluated
    return Result(
      state=self.state,
      policy=_readable(self.policy),
      iterations=self.done,
      seconds=self.solve_seconds,
      jit_seconds=self.programs.jit_seconds,
      evaluation_seconds=self.programs.evaluation_seconds,
      policy_seconds=self.policy_seconds,
      nash_conv=float(nash_conv),
      exploitability=float(nash_conv) / self.game.num_players,
      values=[float(v) for v in values],
      curve=self.curve,
      resumed_from=self.resumed_from,
      checkpoint_seconds=tuple(save_seconds),
      check_seconds=self.check_seconds,
    )


def _readable(policy):
  """`policy` as every process can read it: a policy split over several processes' devices (a
  sharded full-width solve) replicated on them (a collective: every process calls it)."""
  sharding = getattr(policy, 'sharding', None)
  if not isinstance(sharding, jax.sharding.NamedSharding) or policy.is_fully_addressable:
    return policy
  replicated = jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())
  return jax.jit(lambda x: x, out_shardings=replicated)(policy)


def result_fields(game, nash_conv, values) -> dict:
  """Exploitability, NashConv, values and the game's size, as JSON holds them."""
  return {
    'exploitability': float(nash_conv) / game.num_players,
    'nash_conv': float(nash_conv),
    'game_value': float(values[0]),
    'values': [float(v) for v in values],
    'num_players': game.num_players,
    'num_histories': game.num_histories,
    'num_infosets': game.num_infosets,
  }


def evaluate_policy(game, policy) -> dict:
  """`result_fields` of `policy` on `game` plus `evaluation_seconds` (the median of three
  exact evaluations by one compiled program)."""
  policy = jnp.asarray(policy, game.dtype)
  evaluate = backend.jit(evaluate_profile, game).lower(policy, game).compile()
  nash_conv, values = jax.device_get(evaluate(policy, game))
  return {
    **result_fields(game, nash_conv, values),
    'evaluation_seconds': median_seconds(evaluate, policy, game),
  }


def summary(game, solver, result: Result) -> dict:
  """`result` as one JSON-ready dict (what `jaxcfr solve --json` writes, less the run's
  settings): timings, evaluation, the curve, and each family's own statistics (traversals
  for sampled solvers; reservoirs and losses for Deep CFR)."""
  report = {
    'game': game.name,
    'algorithm': solver.name,
    'hyperparameters': jsonable(solver.hyperparameters),
    'iterations': result.iterations,
    'seconds': result.seconds,
    'jit_seconds': result.jit_seconds,
    'evaluation_seconds': result.evaluation_seconds,
    **result_fields(game, result.nash_conv, result.values),
    'version': __version__,
    'curve': result.curve,
  }
  state = result.state
  if hasattr(state, 'advantage_buffers'):  # Deep CFR
    from jaxcfr import deep_cfr  # noqa: PLC0415

    buffers = state.advantage_buffers
    loss, size, seen = jax.device_get(
      (state.advantage_loss, [deep_cfr.reservoir_size(b) for b in buffers], [b.seen for b in buffers])
    )
    report.update(
      policy_seconds=result.policy_seconds,
      advantage_loss=[float(x) for x in loss],
      memory_size=[int(x) for x in size],
      memory_seen=[int(x) for x in seen],
    )
  per_player = solver.hyperparameters.get('batch_size', solver.hyperparameters.get('traversals'))
  if per_player is not None:  # sampled: traversals per player per iteration
    report['batch_size'] = per_player
    report['trajectories'] = result.iterations * per_player * game.num_players
  return report


def jsonable(hyperparameters) -> dict:
  """Hyper-parameters as JSON stores them (tuples as lists)."""
  return {k: list(v) if isinstance(v, tuple) else v for k, v in dict(hyperparameters).items()}


def _check_budget(iterations, seconds, eval_every, eval_every_seconds, eval_at, target=None) -> None:
  if iterations is None and seconds is None:
    raise TrainingError('give a budget: iterations, seconds, or both')
  if iterations is not None and (
    isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1
  ):
    raise TrainingError(f'iterations must be a positive integer, got {iterations!r}')
  if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
    raise TrainingError(f'seconds must be a positive number, got {seconds!r}')
  if target is not None and not (target >= 0 and math.isfinite(target)):
    raise TrainingError(f'target must be a non-negative number, got {target!r}')
  if sum(x is not None for x in (eval_every, eval_every_seconds, eval_at)) > 1:
    raise TrainingError('give one of eval_every, eval_every_seconds and eval_at, not both')


def _eval_schedule(every: int | None) -> Iterator[int]:
  """Iteration counts at which to evaluate: multiples of `every`, or about ten
  log-spaced points per decade (1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, ...)."""
  k = every or 1
  while True:
    yield k
    k = k + every if every else max(k + 1, int(round(k * 10**0.1)))


def _with_check(solver) -> Callable:
  """The chunk program of a solver with `evaluate_average`: `n` iterations, then, if `check`, the
  check of the average they leave -> (state, [1 + P] NashConv and values, zeros without a check).
  One program for both: a check in the chunk's call saves a call and a switch between programs."""
  evaluate = _packed(solver.evaluate_average)

  def step(state, game, n, check):
    state = protocol.run(solver, state, game, n)
    shape = jax.eval_shape(evaluate, state, game)
    packed = jax.lax.cond(check, evaluate, lambda *_: jnp.zeros(shape.shape, shape.dtype), state, game)
    return state, packed

  return step


def _packed(evaluate: Callable) -> Callable:
  """`evaluate` with its (NashConv, [P] values) as one array [1 + P]: one transfer to the host, not
  two (two arrays through `jax.device_get` cost more a check on a river subgame)."""

  def packed(*args):
    nash_conv, values = evaluate(*args)
    dtype = jnp.result_type(nash_conv, values)
    return jnp.concatenate([jnp.reshape(nash_conv, (1,)).astype(dtype), jnp.ravel(values).astype(dtype)])

  return packed


def evaluate_profile(policy, game):
  """`(NashConv, [P] values)` of `policy`; jit it. A game with its own exact evaluation (the
  poker layer's public trees) provides `game.evaluate_profile(policy)`."""
  if hasattr(game, 'evaluate_profile'):
    return game.evaluate_profile(policy)
  values = evaluation.expected_values(game, policy)
  return (evaluation.best_response_values(game, policy) - values).sum(), values


def _sharding_of(leaf):
  return leaf.sharding


def median_seconds(function, *args) -> float:
  """Median seconds of three calls of `function(*args)`."""
  times = []
  for _ in range(3):
    start = time.perf_counter()
    jax.block_until_ready(function(*args))
    times.append(time.perf_counter() - start)
  return statistics.median(times)
