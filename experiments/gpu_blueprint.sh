#!/usr/bin/env bash
# The vector-form blueprint trainer (`jaxcfr blueprint train --algorithm pcs`) on an accelerator, in
# one short run that prints everything as it goes.
#
# Written for the H200 machine a session may be lent (15 minutes of device time in all, the
# machine's start included), for the issue "Blueprints in vector form": boards/s at large batches
# (experiments/bench_blueprint_pcs.py, stand-in tables of the small and default profiles, the small
# and default bet presets, several boards walked at a time), then the trainer's tests on the
# device's backend.
#
#   bash experiments/gpu_blueprint.sh [--boards N] [--at-once K,K] [--seconds S] [--tests ARGS|none]
#
#   --boards N     boards per player per update (default 64)
#   --at-once K,K  boards walked at a time, comma-separated (default 1,4,16)
#   --seconds S    of updates per configuration (default 20)
#   --tests ARGS   pytest arguments (default: the trainer's test files; 'none' skips the tests)
#   PYTHON (python3), TEST_PROCESSES (6), STEP_TIMEOUT (seconds per step, 420) from the environment.
#
# Run with timeout_s about 590:
#   set -o pipefail; bash experiments/gpu_blueprint.sh 2>&1 | tee $OUT/gpu_blueprint.log
# On a CPU it runs the same steps (--boards 2 --at-once 1 --seconds 5 --tests
# tests/poker/blueprint/test_blueprint_vector.py), which is how it was checked.
set -u
BOARDS=64
AT_ONCE=1,4,16
SECONDS_EACH=20
TESTS='tests/poker/blueprint/test_blueprint_vector.py tests/cli/test_blueprint_cli.py'
while [ $# -gt 0 ]; do
  case "$1" in
    --boards) BOARDS=$2; shift 2 ;;
    --at-once) AT_ONCE=$2; shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    *) echo "unknown argument: $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/gpu_env.sh"

for profile in small default; do
  step "bench_blueprint_pcs.py: $profile profile, small and default bets, $BOARDS boards, $AT_ONCE at a time"
  timeout "$STEP_TIMEOUT" "$PYTHON" experiments/bench_blueprint_pcs.py --bets small,default --profile "$profile" \
    --boards "$BOARDS" --at-once "$AT_ONCE" --seconds "$SECONDS_EACH"
  echo "step exit status $?"
done

run_tests "$TESTS"
step 'done'
