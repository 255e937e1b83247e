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

import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import backend, checkpoints, evaluation, protocol, sharding
from jaxcfr.version import __version__

NEVER = 2**62  # an iteration count no run reaches
FIRST_CHUNK = 10  # the most iterations run before the speed is known, in runs without a clock


class TrainingError(ValueError):
  """A request the loop cannot honour (one line, meant for the user)."""


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
    evaluate: False for a game too large to evaluate exactly (a hold'em blueprint): no
      evaluations, no curve; the result's exploitability, NashConv and values are NaN.
    warm_up: run the compiled program twice for one iteration before the clock starts (the
      results discarded), so that `jit_seconds` counts XLA's first executions of it (on a 2-core
      CPU, on a river subgame, the first takes about 1.8 ms more than later ones and the second
      0.5 ms more, of a 12 ms solve) and `seconds` the solving alone; for solvers whose
      iteration is cheap (the subgame solvers).
  """
  _check_budget(iterations, seconds, eval_every, eval_every_seconds, eval_at, target)
  if not evaluate and any(x is not None for x in (eval_every, eval_every_seconds, eval_at, target)):
    raise TrainingError('eval_every, eval_every_seconds, eval_at and target need evaluate=True')
  if checkpoint_dir is None and (checkpoint_every or checkpoint_seconds or resume):
    raise TrainingError('checkpoint_every, checkpoint_seconds and resume need a checkpoint directory')
  say = log or (lambda message: None)
  seed = key if isinstance(key, int) else None
  key = jax.random.key(key) if isinstance(key, int) else key
  checkpointer, existing = None, []
  if checkpoint_dir is not None:
    checkpointer, existing = open_checkpoints(checkpoint_dir, keep_checkpoints, resume)

  jit_start = time.perf_counter()
  # On a sharded game (`sharding.shard_game`) the state is split like the game and stays so.
  state = sharding.shard_state(solver.init(game, key), game)
  placed = {} if sharding.game_mesh(game) is None else {'out_shardings': jax.tree.map(_sharding_of, state)}
  exact = evaluate
  # A solver that evaluates its average from its own state: its checks need no laid-out policy. On a
  # game of small arrays they run in the chunk's program, after its iterations (`_with_check`); a
  # turn subgame's (`large_blocks`) iterations ran 1.1x slower in that program.
  from_state = exact and solver.evaluate_average is not None
  in_chunk = from_state and not placed and not getattr(game, 'large_blocks', False)
  if in_chunk:
    step = backend.jit(_with_check(solver), game).lower(state, game, np.int32(1), np.bool_(False)).compile()
    run_chunk = lambda state, game, steps: step(state, game, steps, np.bool_(False))[0]  # noqa: E731
  else:
    run_chunk = (
      backend.jit(lambda s, g, n: protocol.run(solver, s, g, n), game, **placed)
      .lower(state, game, jnp.asarray(1, jnp.int32))
      .compile()
    )
  make_policy = backend.jit(solver.average_policy, game).lower(state, game).compile()
  if warm_up:  # two calls: the second is still slower than later ones (by 0.5 ms on the river spot)
    for _ in range(2):
      jax.block_until_ready(run_chunk(state, game, np.int32(1)))
  jit_seconds = time.perf_counter() - jit_start
  start = time.perf_counter()
  policy = jax.block_until_ready(make_policy(state, game))
  policy_seconds_once = time.perf_counter() - start
  if in_chunk:
    # A check's share of a chunk's call: the program with and without it, no iterations. Measured
    # back to back, so a little less than in a run, where the check follows the iterations' work.
    evaluate = lambda state, game: step(state, game, np.int32(0), np.bool_(True))[1]  # noqa: E731
    evaluation_seconds = median_seconds(evaluate, state, game)
    check_cost = max(evaluation_seconds - median_seconds(run_chunk, state, game, np.int32(0)), 0.0)
  elif from_state:
    jit_start = time.perf_counter()
    evaluate = backend.jit(_packed(solver.evaluate_average), game).lower(state, game).compile()
    jit_seconds += time.perf_counter() - jit_start
    evaluation_seconds = median_seconds(evaluate, state, game)
  elif exact:
    jit_start = time.perf_counter()
    evaluate = backend.jit(_packed(evaluate_profile), game).lower(policy, game).compile()
    jit_seconds += time.perf_counter() - jit_start
    evaluation_seconds = median_seconds(evaluate, policy, game)
  else:
    evaluation_seconds = 0.0
    no_values = (math.nan, [math.nan] * game.num_players)

  identity = {
    'game': game.name,
    'game_fingerprint': game.info.fingerprint,
    'game_digest': checkpoints.game_digest(game) if checkpointer is not None else None,
    'algorithm': solver.name,
    'hyperparameters': jsonable(solver.hyperparameters),
    'dtype': jnp.dtype(game.dtype).name,
    'seed': seed if seed is not None else jax.random.key_data(key).tolist(),
    **(identity or {}),
  }
  done, solve_seconds, curve, resumed_from = 0, 0.0, [], None
  if existing:
    state, saved = checkpointer.restore(state, identity)
    state = sharding.shard_state(state, game)
    done, solve_seconds, curve = saved['iteration'], saved['seconds'], saved['curve']
    if iterations is not None and done > iterations:
      raise TrainingError(
        f'the checkpoint in {checkpoint_dir!r} is at iteration {done:,}, past the total of '
        f'{iterations:,} asked for; totals count the earlier runs: ask for at least {done:,}'
      )
    resumed_from = done
    say(f'resumed from {checkpoint_dir} at iteration {done:,} ({solve_seconds:.2f} solve seconds)')
  elif resume:
    say(f'no checkpoint in {checkpoint_dir} yet; starting from iteration 0')

  save_seconds = []  # wall seconds of each checkpoint save (not counted as solving)

  def save(state, done, solve_seconds, curve):
    started = time.perf_counter()
    checkpointer.save(
      done, state, identity, {'iteration': done, 'seconds': solve_seconds, 'curve': curve}, __version__
    )
    save_seconds.append(time.perf_counter() - started)

  every = checkpoint_every
  if checkpointer is not None and every is None and checkpoint_seconds is None:
    if iterations is not None:
      every = max(1, math.ceil(iterations / 10))
    else:
      checkpoint_seconds = 60.0
  # A costly policy (Deep CFR trains networks for it) is produced mid-run only to be evaluated.
  if exact and solver.costly_policy and eval_every is None and eval_every_seconds is None and eval_at is None:
    if seconds is not None:
      eval_every_seconds = seconds / 10
    else:
      eval_every = max(1, math.ceil(iterations / 10))
  if not exact:
    schedule = iter([NEVER])
  elif eval_at is not None:
    schedule = iter([*sorted(set(eval_at)), NEVER])
  else:
    schedule = _eval_schedule(eval_every)
  next_eval = next(schedule)
  while next_eval <= done:
    next_eval = next(schedule)
  next_eval_time = None
  if eval_every_seconds is not None:
    next_eval, next_eval_time = None, (solve_seconds // eval_every_seconds + 1) * eval_every_seconds
  next_save = (done // every + 1) * every if checkpointer is not None and every else None
  last_save_time, saved_at = time.perf_counter(), done
  per_iteration, evaluated = None, None
  # A costly final policy (Deep CFR trains networks) must fit in the budget: keep room for it.
  reserve = policy_seconds_once if solver.costly_policy else 0.0
  policy_seconds = check_seconds = 0.0

  def finished(done, spent):
    if iterations is not None and done >= iterations:
      return True
    if (
      target is not None
      and curve
      and curve[-1]['iteration'] == done
      and curve[-1]['exploitability'] <= target
    ):
      return True
    margin = 0.5 * per_iteration if per_iteration is not None else 0.0
    return seconds is not None and spent >= seconds - margin

  def produce_policy(state):
    nonlocal solve_seconds, policy_seconds, reserve
    start = time.perf_counter()
    policy = jax.block_until_ready(make_policy(state, game))
    elapsed = time.perf_counter() - start
    solve_seconds += elapsed
    policy_seconds += elapsed
    if solver.costly_policy:
      reserve = elapsed
    return policy

  def produce_andevaluate_profile(state):
    """(the average policy, or None where the check reads the state; its (NashConv, values))."""
    nonlocal check_seconds
    policy = None if from_state else produce_policy(state)
    start = time.perf_counter()
    if not exact:
      evaluated = no_values
    else:
      packed = np.asarray(evaluate(state, game) if from_state else evaluate(policy, game))
      evaluated = packed[0], packed[1:]
    check_seconds += time.perf_counter() - start
    return policy, evaluated

  def chunk_and_check(state, steps):
    """`steps` iterations and the check after them in one call: (state, (NashConv, values))."""
    nonlocal solve_seconds, check_seconds
    start = time.perf_counter()
    state, packed = step(state, game, np.int32(steps), np.bool_(True))
    packed = np.asarray(packed)
    elapsed = time.perf_counter() - start
    check = min(check_cost, elapsed)
    solve_seconds += elapsed - check
    check_seconds += check
    return state, (packed[0], packed[1:]), elapsed - check

  def record(nash_conv):
    curve.append(
      {'iteration': done, 'seconds': solve_seconds, 'exploitability': float(nash_conv) / game.num_players}
    )

  try:
    while not finished(done, solve_seconds + reserve):
      limits = [t - done for t in (next_eval, iterations, next_save) if t is not None]
      steps = min(limits) if limits else NEVER  # bounded below by the time left and the report interval
      if per_iteration is None:  # the first chunk measures the speed
        # One iteration where a clock needs the speed; else up to the first stop, if it is near (a
        # check every 10 iterations then needs no extra chunk, whose call costs as much as an
        # iteration on a small game).
        clocked = seconds is not None or next_eval_time is not None
        steps = 1 if clocked else min(steps, FIRST_CHUNK)
      else:
        room = [report_seconds]
        if seconds is not None:
          room.append(seconds - solve_seconds - reserve)
        if next_eval_time is not None:
          room.append(next_eval_time - solve_seconds)
        steps = max(1, min(steps, int(min(room) / max(per_iteration, 1e-9)), 2**30))
      # A check due after this chunk (by iterations) runs in its call where it can.
      checked = (
        in_chunk and next_eval_time is None and (done + steps >= next_eval or done + steps == iterations)
      )
      if checked:
        state, evaluated, elapsed = chunk_and_check(state, steps)
      else:
        start = time.perf_counter()
        # A NumPy count: `jnp.asarray` would put it on the device first, 0.13 ms a chunk on a CPU.
        state = jax.block_until_ready(run_chunk(state, game, np.int32(steps)))
        elapsed = time.perf_counter() - start
        solve_seconds += elapsed
      done += steps
      per_iteration = elapsed / steps
      if next_eval_time is not None:
        due_eval = solve_seconds >= next_eval_time - 0.5 * per_iteration
      else:
        due_eval = done >= next_eval
      if checked:
        policy = None
      elif due_eval or finished(done, solve_seconds + reserve):
        policy, evaluated = produce_andevaluate_profile(state)  # the last one is the final result
      if checked or due_eval or finished(done, solve_seconds + reserve):
        if exact:
          record(evaluated[0])
        if next_eval_time is not None:
          next_eval_time = (solve_seconds // eval_every_seconds + 1) * eval_every_seconds
        else:
          while next_eval <= done:
            next_eval = next(schedule)
      if on_progress is not None:
        on_progress(Progress(done, resumed_from or 0, iterations, solve_seconds, curve, state))
      due_save = next_save is not None and done >= next_save
      overdue = checkpoint_seconds is not None and time.perf_counter() - last_save_time >= checkpoint_seconds
      if checkpointer is not None and (due_save or overdue):
        save(state, done, solve_seconds, curve)
        last_save_time, saved_at = time.perf_counter(), done
        if every:
          next_save = (done // every + 1) * every
    if checkpointer is not None and (done > saved_at or not checkpointer.steps()):
      save(state, done, solve_seconds, curve)
  except KeyboardInterrupt:
    if checkpointer is not None and done > saved_at:
      save(state, done, solve_seconds, curve)
      say(f'interrupted; checkpoint saved at iteration {done:,}')
    raise
  finally:
    if checkpointer is not None:
      checkpointer.close()

  if evaluated is None:  # resumed at the total: nothing ran, evaluate what was restored
    policy, evaluated = produce_andevaluate_profile(state)
    if exact and (not curve or curve[-1]['iteration'] != done):
      record(evaluated[0])
  if policy is None:  # the checks read the state: the final policy, once
    policy = produce_policy(state)
  nash_conv, values = evaluated
  return Result(
    state=state,
    policy=policy,
    iterations=done,
    seconds=solve_seconds,
    jit_seconds=jit_seconds,
    evaluation_seconds=evaluation_seconds,
    policy_seconds=policy_seconds,
    nash_conv=float(nash_conv),
    exploitability=float(nash_conv) / game.num_players,
    values=[float(v) for v in values],
    curve=curve,
    resumed_from=resumed_from,
    checkpoint_seconds=tuple(save_seconds),
    check_seconds=check_seconds,
  )


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
  One program for both: a check in the chunk's call saves a call and a switch between programs
  (whole river subgame solves with their checks took 0.94x the time, 30 alternating in one process)."""
  evaluate = _packed(solver.evaluate_average)

  def step(state, game, n, check):
    state = protocol.run(solver, state, game, n)
    shape = jax.eval_shape(evaluate, state, game)
    packed = jax.lax.cond(check, evaluate, lambda *_: jnp.zeros(shape.shape, shape.dtype), state, game)
    return state, packed

  return step


def _packed(evaluate: Callable) -> Callable:
  """`evaluate` with its (NashConv, [P] values) as one array [1 + P]: one transfer to the host, not
  two (two arrays through `jax.device_get` cost 0.05 to 0.3 ms more a check on a river subgame,
  in whole solves and in a loop of checks)."""

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
