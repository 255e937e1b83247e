"""The subgame tree's sizing options against postflop-solver's own action trees.

Each file in `postflop_solver_trees/` is the output of postflop-solver's `ActionTree` for the spot
its first line names (`experiments/postflop_solver_peer`, `print-tree`, b-inary/postflop-solver at
9d1509f): every decision node's betting line and actions. With `add_all_in` and `merge` set to
postflop-solver's `add_allin_threshold` and `merging_threshold`, ours must print the same tree, line
for line.
"""

from __future__ import annotations

import dataclasses
import pathlib
import shlex

import pytest
from cli_runner import run_cli

from jaxcfr.poker.subgame import tree

TREES = pathlib.Path(__file__).parent / 'postflop_solver_trees'
STREETS = {'flop': 1, 'turn': 2, 'river': 3}


def _stored(name: str) -> tuple[tree.TreeConfig, list[str]]:
  """The stored tree and our config for the spot of its first line."""
  header, *lines = (TREES / f'{name}.txt').read_text().splitlines()
  street, pot, stack, bets, raises, add_all_in, force_all_in, merge, *donk = shlex.split(header)[2:]
  sizes = tree.street_sizes(bets, raises, donk[0] if donk else None)
  config = tree.TreeConfig(
    STREETS[street], int(pot), int(stack), (sizes,) * 3, force_all_in=float(force_all_in),
    add_all_in=float(add_all_in), merge=float(merge),
  )  # fmt: skip
  return config, lines


@pytest.mark.parametrize('name', sorted(path.stem for path in TREES.glob('*.txt')))
def test_the_same_tree_as_postflop_solver(name):
  config, lines = _stored(name)
  assert tree.betting_lines(config) == lines


def test_each_option_changes_the_tree():
  """Without either threshold the example flop is a different tree (the stored one needs both)."""
  config, lines = _stored('flop-example')
  assert len(lines) == 174
  assert len(_stored('flop-no-thresholds')[1]) == 314
  for change in ({'merge': 0.0}, {'add_all_in': 0.0}, {'force_all_in': 0.0}):
    assert tree.betting_lines(dataclasses.replace(config, **change)) != lines, change


def test_merging_keeps_the_largest_of_close_sizes():
  """PioSOLVER's rule by hand: pot 100, sizes 50%, 55% and 100%, threshold 0.1. From the largest
  down: (1 + 1.00) / (1 + 0.55) = 1.29 keeps 55%, then (1 + 0.55) / (1 + 0.50) = 1.03 < 1.1 drops 50%.
  At 0.5 both go (1.29 < 1.5, and 2 / 1.5 = 1.33 against the 100% kept)."""
  sizes = tree.street_sizes('50%,55%,100%', '2x')
  config = tree.TreeConfig(3, 100, 1000, (sizes,) * 3, merge=0.1)
  assert tree.betting_lines(config)[0] == ': X B55 B100'
  assert tree.betting_lines(dataclasses.replace(config, merge=0.0))[0] == ': X B50 B55 B100'
  assert tree.betting_lines(dataclasses.replace(config, merge=0.5))[0] == ': X B100'


def test_the_command_prints_the_tree():
  config, lines = _stored('flop-example')
  code, out, err = run_cli(
    'subgame', '--board', 'Qs7h2c', '--pot', '200', '--stack', '900', '--oop-range', 'AA',
    '--ip-range', 'KK', '--bets', '60%,e,a', '--raises', '2.5x', '--add-all-in', '1.5', '--merge', '0.1',
    '--print-tree',
  )  # fmt: skip
  assert code == 0, err
  assert out.splitlines() == lines


@pytest.mark.parametrize('flag', ['--merge', '--add-all-in'])
def test_a_negative_threshold_is_bad_input(flag):
  code, out, err = run_cli(
    'subgame', '--board', 'Qs7h2c', '--pot', '200', '--stack', '900', '--oop-range', 'AA',
    '--ip-range', 'KK', flag, '-1', '--print-tree',
  )  # fmt: skip
  assert code == 2
  assert 'Traceback' not in err and flag in err
