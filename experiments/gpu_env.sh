# Sourced by the prepared accelerator runs (gpu_large_games.sh, gpu_subgames.sh, gpu_spots.sh):
# Python, the carried wheels, `step NAME` headings with the time since the start, and what the machine
# has.
# Wheels carried in .whl (gpu_large_games.sh's header says how) are installed first.
PYTHON=${PYTHON:-python3}
STEP_TIMEOUT=${STEP_TIMEOUT:-420}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
started=$(date +%s)
step() { echo; echo "=== $1 ($(( $(date +%s) - started )) s in; load $(cut -d' ' -f1-3 /proc/loadavg))"; }
# run_tests ARGS: the tests of ARGS (pytest arguments, split on spaces) on the machine's backend, as a
# step; 'none' runs nothing.
run_tests() {
  [ "$1" = none ] && return 0
  step "tests on $("$PYTHON" -c 'import jax; print(jax.default_backend())'): $1"
  # shellcheck disable=SC2086 (the test arguments split on spaces)
  timeout "$STEP_TIMEOUT" "$PYTHON" -m pytest -n "${TEST_PROCESSES:-6}" -x -q --durations=10 $1
  echo "step exit status $?"
}

step 'environment'
if compgen -G '.whl/*.whl' > /dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site" || echo 'installing the carried wheels failed'
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo 'no nvidia-smi'
echo "cores $(nproc); memory $(awk '/MemTotal/ {print $2 / 1048576 " GiB"}' /proc/meminfo)"
"$PYTHON" -c 'import sys, jax, numpy; print("python", sys.version.split()[0], "jax", jax.__version__, "numpy", numpy.__version__, jax.devices())'
"$PYTHON" -c 'import pyspiel; print("pyspiel", pyspiel.__file__)' || echo 'no pyspiel: OpenSpiel games and tests will fail or skip'
