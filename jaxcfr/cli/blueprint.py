"""`jaxcfr blueprint train|evaluate`: train a heads-up no-limit hold'em blueprint on abstraction
tables, and measure it.

    jaxcfr abstract --profile small --out tables/
    jaxcfr blueprint train --abstraction tables/ --bets small --seconds 3600 \\
      --checkpoint run/ --out blueprint.npz [--devices N] [--resume]
    jaxcfr blueprint train --algorithm deep-cfr|sd-cfr --seconds 3600 --checkpoint run/ --out deep.npz
    jaxcfr blueprint evaluate blueprint.npz --lbr --hands 20000 --json lbr.json

External-sampling MCCFR over sampled deals (`jaxcfr.poker.blueprint.mccfr`; or Deep CFR / SD-CFR,
`jaxcfr.poker.blueprint.deep`, networks on card and chip features instead of tables) through the library
training loop: progress (iterations, traversals/s, memory), checkpoints and exact resume. Bad input
(missing or mismatched tables, a checkpoint of another run, an unwritable --out) is one line and
exit status 2, before any training. Imports nothing heavy until it runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from jaxcfr import algorithms, outputs
from jaxcfr.cli.match import positive

_PRESETS = ('small', 'default')  # jaxcfr.poker.blueprint.tree.PRESETS (not imported: it needs JAX)
_KEEP = 3
_ALGORITHMS = ('tabular', 'deep-cfr', 'sd-cfr')
_SNAPSHOTS = 64


def add_parser(commands, add_output_options) -> None:
  """Adds `blueprint` (with its `train` subcommand) to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser(
    'blueprint',
    help="train a heads-up no-limit hold'em blueprint (MCCFR on card and bet abstractions)",
    description="Heads-up no-limit hold'em blueprints: external-sampling MCCFR over sampled deals, with "
    'the buckets of `jaxcfr abstract` tables and a bet abstraction preset.',
  )
  actions = parser.add_subparsers(dest='blueprint_command', required=True)
  train = actions.add_parser(
    'train',
    help='train a blueprint and write it',
    description='Train a blueprint (ACPC rules: blinds 50/100, stacks 20,000) and write it as a compact '
    'file that jaxcfr.poker.blueprint.load_policy reads.',
  )
  train.add_argument(
    '--algorithm',
    choices=_ALGORITHMS,
    default='tabular',
    help='tabular: external-sampling MCCFR on bucket tables; deep-cfr: Deep CFR, advantage and strategy '
    'networks on card and chip features (no tables); sd-cfr: Single Deep CFR, advantage networks only, '
    'a reservoir of them as the average (default tabular)',
  )
  train.add_argument(
    '--abstraction', metavar='DIR', help='tables written by `jaxcfr abstract` (tabular only; required there)'
  )
  train.add_argument(
    '--bets',
    choices=_PRESETS,
    default='small',
    help='bet abstraction preset: small (3,746 nodes, for a CPU: 2.5x opens, 3x re-raises, 75%% pot bets, '
    'pot raises, all-in; raise caps 3/2/2/2) or default (121,852 nodes: 33/75/150%% pot bets, 75/150%% '
    'raises; caps 4/3/3/3) (default small)',
  )
  budget = train.add_argument_group('budget')
  budget.add_argument('--seconds', type=positive(float), help='solving seconds')
  budget.add_argument('--iterations', type=positive(int), help='total iterations (each: a batch per player)')
  budget.add_argument('--seed', type=int, default=0, help='PRNG seed (default 0)')
  budget.add_argument(
    '--devices', type=positive(int), default=1, help='devices to split each batch over (default 1)'
  )
  budget.add_argument('--dtype', default='float32', choices=('float32', 'float64'), help='default float32')
  refinements = train.add_argument_group('MCCFR (as es-mccfr; Pluribus refinements)')
  for parameter in algorithms.REGISTRY['es-mccfr'].hyperparameters:
    refinements.add_argument(
      parameter.cli_flag, dest=parameter.name, type=algorithms.argument_type(parameter),
      default=argparse.SUPPRESS, metavar='N' if parameter.kind == 'int' else 'X',
      help=f'{parameter.help} [default {parameter.shown()}]',
    )  # fmt: skip
  from jaxcfr.poker import defaults  # noqa: PLC0415  (no JAX)

  larger = defaults.DEEP_BLUEPRINT_ACCELERATOR
  deep = train.add_argument_group(
    'Deep CFR (--algorithm deep-cfr, or sd-cfr without the strategy networks; the defaults shown are a '
    f"2-core CPU's; on a GPU or TPU: {larger['traversals']:,} traversals, layers "
    f'{",".join(map(str, larger["advantage_layers"]))}, minibatches of {larger["advantage_batch_size"]:,})'
  )
  deep.add_argument(
    '--snapshots', type=positive(int), metavar='N',
    help=f'sd-cfr: advantage networks kept per player (uniform over iterations) [default {_SNAPSHOTS}]',
  )  # fmt: skip
  deep.add_argument(
    '--no-history', dest='history', action='store_false',
    help='features without the betting history (the 372 numbers of the seed layout only)',
  )  # fmt: skip
  for parameter in algorithms.REGISTRY['deep-cfr'].hyperparameters:
    default = parameter.shown(defaults.DEEP_BLUEPRINT[parameter.name]).replace('%', '%%')
    options = dict(
      dest=parameter.name, default=argparse.SUPPRESS, help=f'{parameter.help} [default {default}]'
    )
    if parameter.kind == 'bool':
      deep.add_argument(parameter.cli_flag, action=argparse.BooleanOptionalAction, **options)
    else:
      metavar = {'layers': 'W,W', 'batch': 'N', 'int': 'N'}.get(parameter.kind, 'X')
      deep.add_argument(
        parameter.cli_flag, type=algorithms.argument_type(parameter), metavar=metavar, **options
      )
  saves = train.add_argument_group('checkpoints')
  saves.add_argument('--checkpoint', metavar='DIR', help='save the state to DIR as it runs (orbax)')
  saves.add_argument(
    '--checkpoint-seconds', type=positive(float), metavar='S', help='save every S seconds (default 60)'
  )
  saves.add_argument(
    '--keep-checkpoints', type=positive(int), default=_KEEP, metavar='K', help='keep the last K'
  )
  saves.add_argument('--resume', action='store_true', help='continue from the newest checkpoint in DIR')
  out = train.add_argument_group('outputs')
  out.add_argument('--out', required=True, metavar='PATH', help='the blueprint file to write (.npz)')
  add_output_options(out)

  from jaxcfr.cli import lbr as lbr_cli  # noqa: PLC0415  (no JAX: its parser is plain argparse)

  evaluate = actions.add_parser(
    'evaluate',
    help='measure a blueprint: local best response (mbb/hand with a 95%% CI)',
    description=lbr_cli.DESCRIPTION.replace('%', '%%'),
  )
  evaluate.add_argument('policy', metavar='BLUEPRINT', help='a blueprint file (or a baseline name)')
  evaluate.add_argument(
    '--lbr', action='store_true', required=True, help="local best response, the paper's main setting"
  )
  lbr_cli.add_arguments(evaluate, policy=False)
  add_output_options(evaluate.add_argument_group('outputs'))


def run(args) -> int:
  """Runs `jaxcfr blueprint train` or `evaluate`; one line and exit status 2 on bad input."""
  if args.blueprint_command == 'evaluate':
    from jaxcfr.cli import lbr as lbr_cli  # noqa: PLC0415

    return lbr_cli.run(args)
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr import checkpoints, memory, progress  # noqa: PLC0415
  from jaxcfr.poker.blueprint import (  # noqa: PLC0415
    features,  # noqa: PLC0415
    files,
    mccfr,
    training,
  )
  from jaxcfr.training import TrainingError  # noqa: PLC0415

  log = sys.stderr if args.json == '-' else sys.stdout
  try:
    if args.seconds is None and args.iterations is None:
      raise files.BlueprintError('give a budget: --seconds S and/or --iterations N')
    if not args.checkpoint:
      for flag in ('resume', 'checkpoint_seconds'):
        if getattr(args, flag):
          raise files.BlueprintError(f'--{flag.replace("_", "-")} needs --checkpoint DIR')
    outputs.check_file(args.out, '--out', force=args.force, suffixes=('.npz',))
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    tabular = args.algorithm == 'tabular'
    own = {'tabular': 'es-mccfr', 'deep-cfr': 'deep-cfr', 'sd-cfr': 'sd-cfr'}[args.algorithm]
    owned = {p.name for p in algorithms.REGISTRY[own].hyperparameters}
    for other in ('es-mccfr', 'deep-cfr'):
      for parameter in algorithms.REGISTRY[other].hyperparameters:
        if hasattr(args, parameter.name) and parameter.name not in owned:
          raise files.BlueprintError(f'{parameter.cli_flag} does not apply to --algorithm {args.algorithm}')
    if args.snapshots is not None and args.algorithm != 'sd-cfr':
      raise files.BlueprintError(f'--snapshots does not apply to --algorithm {args.algorithm}')
    given = {p.name: getattr(args, p.name) for p in algorithms.REGISTRY[own].hyperparameters
             if hasattr(args, p.name)}  # fmt: skip
    if tabular:
      if not args.history:
        raise files.BlueprintError('--no-history applies to --algorithm deep-cfr and sd-cfr only')
      if args.abstraction is None:
        raise files.BlueprintError(
          '--algorithm tabular needs --abstraction DIR (tables of `jaxcfr abstract`)'
        )
      solver = mccfr.blueprint_solver(devices=args.devices, **given)
      abstraction = training.load_tables(args.abstraction)
      identity = {'devices': args.devices, 'bets': args.bets, 'abstraction': abstraction.fingerprint}
    else:
      from jaxcfr.poker.blueprint import deep  # noqa: PLC0415

      if args.abstraction is not None:
        raise files.BlueprintError(
          f'--abstraction does not apply to --algorithm {args.algorithm} (no tables)'
        )
      if args.devices != 1 or args.dtype != 'float32':
        raise files.BlueprintError(f'--algorithm {args.algorithm} runs on one device in float32')
      game, tree, nodes = training.network_game(args.bets, args.history)
      single = args.algorithm == 'sd-cfr'
      snapshots = args.snapshots or _SNAPSHOTS
      solver = deep.deep_blueprint_solver(nodes, single=single, snapshots=snapshots, **given)
      abstraction = None
      identity = {'devices': 1, 'bets': args.bets, 'history': args.history}
    if args.checkpoint:
      training.check_checkpoints(args.checkpoint, args.keep_checkpoints, args.resume, identity)
    if tabular:
      game, tree = training.tables_game(abstraction, args.bets, jnp.dtype(args.dtype))
      sizes = training.memory_report(game)
      what = (
        f'buckets {"/".join(map(str, game.num_buckets))}; regret and average tables '
        f'{_bytes(sizes["table_bytes"])}, game and bucket tables {_bytes(sizes["game_bytes"])}'
      )
      per_update = mccfr.traversals_per_update(solver)
      postfix = f'{_bytes(sizes["table_bytes"])} tables'
    else:
      sizes = {'table_bytes': 0}
      shapes = jax.tree.leaves(jax.eval_shape(lambda: solver.init(game, jax.random.key(0))))
      state_bytes = sum(
        leaf.size * leaf.dtype.itemsize for leaf in shapes if jnp.issubdtype(leaf.dtype, jnp.number)
      )
      layers = solver.hyperparameters['advantage_layers']
      what = (
        f'{"SD-CFR" if single else "Deep CFR"}, {features.size(args.history)} features, advantage networks '
        f'{",".join(map(str, layers))}, reservoirs and networks {_bytes(state_bytes)}'
      )
      per_update = 2 * int(solver.hyperparameters['traversals'])
      postfix = args.algorithm
    counts = tree.counts()
    print(
      f'blueprint: bets {args.bets} ({counts["nodes"]:,} nodes, '
      f'{counts["decision_nodes"]:,} decision nodes), {what}',
      file=log,
    )
    bars = []  # made at the first report, which knows where a resumed run starts

    def show(update):  # rates over all runs (a resumed run's seconds include the earlier ones')
      if not bars:
        bars.append(progress.Progress(args.iterations, 'blueprint', 'it', args.quiet, initial=update.start))
      if update.seconds > 0:
        rate = per_update * update.iteration / update.seconds
        bars[0].set_postfix_str(f'{rate:,.0f} traversals/s, {postfix}')
      bars[0].update(update.iteration - bars[0].count)

    try:
      result = training.train(
        game, solver, key=args.seed, iterations=args.iterations, seconds=args.seconds,
        checkpoint_dir=args.checkpoint, checkpoint_seconds=args.checkpoint_seconds,
        keep_checkpoints=args.keep_checkpoints, resume=args.resume, identity=identity, on_progress=show,
        log=lambda message: print(message, file=log),
      )  # fmt: skip
    finally:
      for bar in bars:
        bar.close()
  except (ValueError, TrainingError, checkpoints.CheckpointError) as error:  # OutputError, BlueprintError too
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
  traversals = per_update * result.iterations
  report = {
    'algorithm': args.algorithm,
    'bets': args.bets,
    'abstraction': abstraction.fingerprint if tabular else None,
    'buckets': list(game.num_buckets) if tabular else None,
    **counts,
    'iterations': result.iterations,
    'traversals': traversals,
    'seconds': result.seconds,
    'traversals_per_second': traversals / max(result.seconds, 1e-9),
    'jit_seconds': result.jit_seconds,
    'resumed_from': result.resumed_from,
    'checkpoints_saved': len(result.checkpoint_seconds),
    'checkpoint_seconds': statistics.median(result.checkpoint_seconds) if result.checkpoint_seconds else None,
    **(
      training.memory_report(game, result.state) if tabular else {'state_bytes': memory.nbytes(result.state)}
    ),
    'devices': args.devices,
    'backend': jax.default_backend(),
    'hyperparameters': dict(solver.hyperparameters),
    'seed': args.seed,
  }
  saves = result.checkpoint_seconds
  saved = f'; {len(saves)} checkpoints, {statistics.median(saves):.2f} s each (median)' if saves else ''
  print(
    f'{result.iterations:,} iterations, {traversals:,} traversals in {result.seconds:.1f} s '
    f'({report["traversals_per_second"]:,.0f} traversals/s; compilation {result.jit_seconds:.1f} s{saved})',
    file=log,
  )
  try:
    if tabular:
      training.save(
        args.out, result, solver, game, tree, args.bets, args.abstraction, force=args.force, seed=args.seed,
        devices=args.devices,
      )  # fmt: skip
    else:
      loss = [float(x) for x in jax.device_get(result.state.advantage_loss)]
      report['advantage_loss'] = loss
      training.save_networks(
        args.out, result, solver, game, tree, nodes, args.bets, force=args.force, seed=args.seed,
        advantage_loss=loss,
      )  # fmt: skip
    print(f'blueprint written to {args.out}', file=log)
    if args.json:
      outputs.write_json(args.json, report, force=args.force)
      if args.json != '-':
        print(f'JSON written to {args.json}', file=log)
  except outputs.OutputError as error:
    if args.json != '-':
      print(json.dumps(report, indent=2))
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
  return 0


def _bytes(count: int) -> str:
  from jaxcfr.memory import format_bytes  # noqa: PLC0415

  return format_bytes(count)
