#!/usr/bin/env bash
# Many spots on an accelerator, in one short run that prints everything as it goes.
#
# Written for the device machine a session may be lent (15 minutes of device time in all, the
# machine's start included), for the issue "Many spots": 1,000 river spots and 200 turn spots, each
# set in one `jaxcfr subgame --spots --batch` process (experiments/bench_spots.py), and the 25-flop
# report (experiments/flop_report_study.py time), on the device's backend: there spots solve in the
# array form, the native solve being the CPU's. postflop-solver's `spot` binary runs beside them on
# all the machine's cores where it was carried and runs there (it is built with the CPU's own
# instructions: another CPU may refuse it, and then ours run alone); the CPU machine's figures of both
# are in docs/benchmarks.md.
#
#   bash experiments/gpu_spots.sh [--rivers N] [--turns N] [--flops N] [--tests ARGS|none]
#
#   --rivers N     river spots in one process (default 1000)
#   --turns N      turn spots in one process (default 200)
#   --flops N      the report's flop subset (default 25)
#   --tests ARGS   pytest arguments (default: the spots' and reports' tests; 'none' skips them)
#   PYTHON (python3), TEST_PROCESSES (6), STEP_TIMEOUT (seconds per step, 420) from the environment.
#
# Carry experiments/postflop_solver_peer/target/release/spot (the peer, built as its Cargo.toml says).
# Run with timeout_s about 590; the records (JSON) are written to $OUT when it is set:
#   set -o pipefail; bash experiments/gpu_spots.sh 2>&1 | tee $OUT/gpu_spots.log
# On a CPU it runs the same steps (--rivers 4 --turns 2 --flops 5 --tests none), which is how it was
# checked.
set -u
RIVERS=1000
TURNS=200
FLOPS=25
TESTS='tests/poker/subgame/test_spots.py tests/poker/subgame/test_flop_report.py'
while [ $# -gt 0 ]; do
  case "$1" in
    --rivers) RIVERS=$2; shift 2 ;;
    --turns) TURNS=$2; shift 2 ;;
    --flops) FLOPS=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    *) echo "unknown argument: $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/gpu_env.sh"

RECORDS=${OUT:-experiments/records/gpu}
mkdir -p "$RECORDS"
THREADS=$(nproc)
PEER=experiments/postflop_solver_peer/target/release/spot
step 'the peer'
if [ -x "$PEER" ] && "$PEER" Td9d6hQc7s 200 900 '66+' 'QQ-22' 'a' 'a' 0 0 5 > /dev/null 2>&1; then
  echo "postflop-solver's spot binary runs here: $THREADS threads each"
else
  echo 'no peer that runs here: ours alone'
  PEER=none
fi

step "$RIVERS river spots in one process ($THREADS threads)"
timeout "$STEP_TIMEOUT" "$PYTHON" experiments/bench_spots.py --count "$RIVERS" --rounds 1 \
  --threads "$THREADS" --batch --peer "$PEER" --json "$RECORDS/spots-river.json"
echo "step exit status $?"

step "$TURNS turn spots in one process"
timeout "$STEP_TIMEOUT" "$PYTHON" experiments/bench_spots.py --street turn --count "$TURNS" --rounds 1 \
  --threads "$THREADS" --batch --peer "$PEER" --json "$RECORDS/spots-turn.json"
echo "step exit status $?"

step "the $FLOPS-flop report"
TIMING=experiments/records/reports/timing.jsonl
before=$(cat "$TIMING" 2>/dev/null | wc -l)
timeout "$STEP_TIMEOUT" "$PYTHON" experiments/flop_report_study.py time --flops "$FLOPS" \
  --threads "$THREADS" --peer "$PEER"
echo "step exit status $?"
if [ "$(cat "$TIMING" 2>/dev/null | wc -l)" -gt "$before" ]; then
  tail -n 1 "$TIMING" > "$RECORDS/report-timing.json"
fi

run_tests "$TESTS"
step 'done'
