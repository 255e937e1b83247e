#!/usr/bin/env bash
# Large games on an accelerator, in one short run that prints everything as it goes.
#
# Written for the H200 machine a session may be lent (16 cores, 128 GiB, one H200; 15 minutes of
# device time in all, the machine's start included), for the issue "Large games": the 52M-history
# battleship compiled there with workers = cores (timed, peak host memory), CFR+ milliseconds per
# iteration on the GPU, device bytes per history, then the solver, evaluation, MCCFR, determinism
# and Deep CFR tests on the GPU backend.
#
#   bash experiments/gpu_large_games.sh [--game SPEC] [--iterations N] [--workers N] [--tests ARGS|none]
#
#   --game SPEC     default: the 52,000,000-history battleship below (needs OpenSpiel)
#   --iterations N  CFR+ iterations before the exploitability check (default 100)
#   --workers N     compile workers (default: the machine's cores)
#   --tests ARGS    pytest arguments (default: the five files below; 'none' skips the tests)
#   PYTHON (python3), TEST_PROCESSES (6), STEP_TIMEOUT (seconds per step, 420) from the environment.
#
# On the H200 machine OpenSpiel is missing (nothing can be fetched there): before the call, in the
# repository root here,
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     -d .whl open_spiel==2.0.2 ml_collections
# (16 MB), then run with carry ['.whl'] and timeout_s about 590:
#   set -o pipefail; PYTHONUNBUFFERED=1 bash experiments/gpu_large_games.sh 2>&1 | tee $OUT/gpu_large_games.log
# The script installs the wheels it finds in .whl. On a CPU it runs the same steps (a small game:
# --game 'openspiel:leduc_poker'), which is how it was checked.
set -u
GAME='openspiel:battleship(board_height=3,board_width=3,ship_sizes=[1;2],ship_values=[1;1],num_shots=2)'
ITERATIONS=100
WORKERS=$(nproc)
TESTS='tests/core/test_solvers.py tests/core/test_evaluation.py tests/core/test_mccfr.py tests/core/test_determinism.py tests/core/test_deep_cfr.py'
while [ $# -gt 0 ]; do
  case "$1" in
    --game) GAME=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    *) echo "unknown argument: $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/gpu_env.sh"

step "compile and solve $GAME"
timeout "$STEP_TIMEOUT" "$PYTHON" - "$GAME" "$WORKERS" "$ITERATIONS" <<'EOF'
import statistics, sys, time

import jax
import jax.numpy as jnp

from jaxcfr import backend, compiler, evaluation, memory, protocol, solvers, walker

spec, workers, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def status(pid='self'):
  """(VmRSS, VmHWM) of a process in MB, (0, 0) once it has ended."""
  try:
    text = open(f'/proc/{pid}/status').read()
  except OSError:
    return 0.0, 0.0
  return tuple(int(text.split(f'{name}:')[1].split()[0]) / 1e3 for name in ('VmRSS', 'VmHWM'))


device = jax.devices()[0]
print(f'device {device} ({device.platform}); compiling with {workers} workers', flush=True)
jax.block_until_ready(jnp.zeros(1))  # the backend up before the baseline
baseline = status()[0]
worker_peaks = [0.0]
close = walker.Pool.close


def close_and_record(pool):  # each worker's own peak, read before the pool stops it
  worker_peaks.extend(status(process.pid)[1] for process in pool._processes)
  close(pool)


walker.Pool.close = close_and_record
last = [time.perf_counter()]


def progress(depth, histories):
  if time.perf_counter() - last[0] > 10:
    last[0] = time.perf_counter()
    print(f'  ... depth {depth}, {histories:,} histories, host RSS {status()[0]:.0f} MB', flush=True)


start = time.perf_counter()
game = compiler.compile_game(spec, workers=workers, max_histories=None, progress=progress)
jax.block_until_ready(game)
seconds = time.perf_counter() - start
peak = status()[1]
histories = game.num_histories
print(
  f'compiled: {histories:,} histories, {game.num_infosets:,} infosets, {game.num_depths} depths in {seconds:.1f} s; '
  f'sequence form: {game.sequence_form is not None}'
)
print(
  f'peak host memory: {peak:.0f} MB (VmHWM), {peak - baseline:.0f} MB over the {baseline:.0f} MB before '
  f'({(peak - baseline) * 1e6 / histories:.0f} B/history); largest worker {max(worker_peaks):.0f} MB'
)
game_bytes = memory.nbytes(game)
stats = device.memory_stats() or {}
print(
  f'device: the game is {memory.format_bytes(game_bytes)} ({game_bytes / histories:.1f} B/history'
  + (
    f'; in use on the device {memory.format_bytes(stats["bytes_in_use"])}, '
    f'{stats["bytes_in_use"] / histories:.1f} B/history)'
    if 'bytes_in_use' in stats
    else ')'
  ),
  flush=True,
)

solver = solvers.cfr_plus()
start = time.perf_counter()
state = solver.init(game)
run = backend.jit(lambda s, g, n: protocol.run(solver, s, g, n)).lower(state, game, jnp.int32(1)).compile()
jax.block_until_ready(run(state, game, jnp.int32(1)))
print(f'CFR+ JIT and first iteration: {time.perf_counter() - start:.1f} s', flush=True)


def timed(n):
  start = time.perf_counter()
  jax.block_until_ready(run(state, game, jnp.int32(n)))
  return time.perf_counter() - start


chunk = max(1, int(1.0 / max(timed(10) / 10, 1e-6)))
times = [timed(chunk) / chunk * 1e3 for _ in range(5)]
print(
  f'CFR+ float32: {statistics.median(times):.3f} ms/iteration (median of 5 chunks of {chunk}: '
  f'{", ".join(f"{t:.3f}" for t in times)})'
)
stats = device.memory_stats() or {}
if 'peak_bytes_in_use' in stats:
  print(
    f'device peak while solving: {memory.format_bytes(stats["peak_bytes_in_use"])} '
    f'({stats["peak_bytes_in_use"] / histories:.1f} B/history; state {memory.format_bytes(memory.nbytes(state))})'
  )
state = jax.block_until_ready(run(state, game, jnp.int32(iterations)))
exploitability = jax.jit(lambda s, g: evaluation.exploitability(g, solver.average_policy(s, g)))
start = time.perf_counter()
value = float(exploitability(state, game))
first = time.perf_counter() - start
start = time.perf_counter()
float(exploitability(state, game))
print(
  f'exploitability after {iterations} iterations: {value:.6g} (first call with JIT {first:.1f} s, '
  f'then {time.perf_counter() - start:.3f} s)'
)
EOF
echo "step exit status $?"

run_tests "$TESTS"
step 'done'
