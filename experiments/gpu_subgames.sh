#!/usr/bin/env bash
# Hold'em subgames on an accelerator, in one short run that prints everything as it goes.
#
# Written for the H200 machine a session may be lent (15 minutes of device time in all, the
# machine's start included), for the issue "Hold'em subgames": its GPU goals are the turn spot in
# <= 0.5 s and 1,000 river spots (different boards and ranges, one tree shape) in one batched call in
# <= 1 s, with JIT compilation <= 10 s per tree shape. It runs experiments/bench_subgame.py (the
# issue's river and turn spots and the batch of river spots) with the showdown method the backend
# picks (the masked matrix product on a GPU, where it fits), then with the sorted sweep, then the
# subgame tests on the GPU backend.
#
#   bash experiments/gpu_subgames.sh [--batch N] [--repeats N] [--tests ARGS|none]
#
#   --batch N      river spots in the batched call (default 1000)
#   --repeats N    solves per figure after the warm-up (default 3)
#   --tests ARGS   pytest arguments (default: the three files below; 'none' skips the tests)
#   PYTHON (python3), TEST_PROCESSES (6), STEP_TIMEOUT (seconds per step, 420) from the environment.
#
# The oracle tests need OpenSpiel (they skip without it): carry its wheel as gpu_large_games.sh's
# header says. Run with timeout_s about 590:
#   set -o pipefail; bash experiments/gpu_subgames.sh 2>&1 | tee $OUT/gpu_subgames.log
# On a CPU it runs the same steps (--batch 4 --repeats 1 --tests tests/poker/subgame/test_poker_solver.py), which is
# how it was checked.
set -u
BATCH=1000
REPEATS=3
TESTS='tests/poker/subgame/test_poker_subgame.py tests/poker/subgame/test_poker_solver.py tests/cli/test_poker_cli.py'
while [ $# -gt 0 ]; do
  case "$1" in
    --batch) BATCH=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    *) echo "unknown argument: $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/gpu_env.sh"

for method in auto sweep; do
  step "bench_subgame.py, showdowns by $method: river, $BATCH river spots in one call, turn"
  timeout "$STEP_TIMEOUT" "$PYTHON" experiments/bench_subgame.py --repeats "$REPEATS" --batch "$BATCH" --showdown "$method"
  echo "step exit status $?"
done

run_tests "$TESTS"
step 'done'
