"""The heads-up push-or-fold game, solved exactly at any stack depth and ante.

The small blind (the button) pushes all-in or folds; facing the push the big blind calls or folds.
Amounts are in big blinds: effective stack S (before the blinds and antes are posted), small blind
`small_blind` (0.5 by default), ante a per player, all out of the stack. The small blind's result:

    folds: -min(S, small_blind + a)
    pushes, the big blind folds: +min(S, 1 + a)
    pushes, the big blind calls: S * (2 e - 1), e the all-in equity (wins plus half the ties)

Strategies are per preflop class (169, `ranges.HAND_CLASSES`); the deal is uniform over pairs of
hole-card pairs that share no card, so the class pairs weigh by their disjoint pairs
(`equity.class_matrix`: card removal included). The game is bilinear, V(p, c) = -f + p.u +
p'Ac; the small blind's best value is a linear programme whose dual is the big blind's (one HiGHS
solve through `scipy.optimize.linprog` gives both sides' strategies), and the solution is then
polished: the few hands left mixed are made exactly indifferent by solving the linear equations of
the other side's mixed hands, which takes the exploitability from the solver's tolerance to rounding
error.

    solution = pushfold.solve(10.0, ante=0.1)       # PushFold: push [169], call [169], value, ...
    solution.exploitability                          # bb per hand, from exact best responses
    pushfold.chart(max_stack=25.0)                   # the largest stack at which each class pushes / calls
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from jaxcfr.poker import defaults
from jaxcfr.poker.pushfold import equity as preflop_equity

SMALL_BLIND = defaults.PUSH_FOLD_SMALL_BLIND  # in big blinds
CHART_MAX_STACK = defaults.PUSH_FOLD_CHART_MAX  # the chart's deepest stack (bb)
CHART_STEP = defaults.PUSH_FOLD_CHART_STEP  # its grid (bb)
_POLISH_TOLERANCE = 1e-7  # a hand whose best-response margin is below this (bb) counts as mixed


@dataclasses.dataclass(frozen=True)
class Game:
  """The push-or-fold game at one depth as arrays: the small blind's value is
  -fold_loss + push . gain + push' matrix call (bb per hand, both strategies per class)."""

  stack: float
  ante: float
  small_blind: float
  fold_loss: float  # what the small blind loses by folding
  gain: np.ndarray  # float64 [169]: weight of each class times (the blind stolen + the fold saved)
  matrix: np.ndarray  # float64 [169, 169]: weight times (the showdown value - the blind stolen)


@dataclasses.dataclass(frozen=True)
class PushFold:
  """An equilibrium of the push-or-fold game: per class the probability of pushing (small blind) and
  of calling the push (big blind), the small blind's value and the exploitability (bb per hand)."""

  stack: float
  ante: float
  small_blind: float
  push: np.ndarray  # float64 [169]
  call: np.ndarray  # float64 [169]
  value: float  # the small blind's expected result, bb per hand
  exploitability: float  # (the two best responses' gains) / 2, bb per hand


def check_depth(stack: float, ante: float = 0.0, small_blind: float = SMALL_BLIND) -> None:
  """ValueError with one line where the game cannot start: a stack under one big blind, a negative ante
  or one larger than the big blind, a small blind not in (0, 1]."""
  for name, value in (('stack', stack), ('ante', ante), ('small blind', small_blind)):
    if not np.isfinite(value):
      raise ValueError(f'the {name} must be a finite number of big blinds, got {value}')
  if not 0 < small_blind <= 1:
    raise ValueError(f'the small blind must be positive and at most the big blind, got {small_blind} bb')
  if not 0 <= ante <= 1:
    raise ValueError(f'the ante must be between 0 and the big blind (1 bb), got {ante} bb')
  if stack < 1:
    raise ValueError(f'the effective stack must be at least one big blind, got {stack} bb')


def game(stack: float, ante: float = 0.0, small_blind: float = SMALL_BLIND) -> Game:
  """The push-or-fold game at this depth (see the module; amounts in big blinds)."""
  check_depth(stack, ante, small_blind)
  equity, pairs = preflop_equity.class_matrix()
  weight = pairs / pairs.sum()  # the joint probability of the two classes
  fold_loss = min(stack, small_blind + ante)
  stolen = min(stack, 1.0 + ante)
  gain = weight.sum(axis=1) * (stolen + fold_loss)
  matrix = weight * (stack * (2 * equity - 1) - stolen)
  return Game(float(stack), float(ante), float(small_blind), fold_loss, gain, matrix)


def value(g: Game, push: np.ndarray, call: np.ndarray) -> float:
  """The small blind's expected result (bb per hand) when the two play `push` and `call` [169]."""
  return float(-g.fold_loss + push @ g.gain + push @ g.matrix @ call)


def best_push(g: Game, call: np.ndarray) -> np.ndarray:
  """The small blind's pure best response [169] to a calling strategy (push where it gains)."""
  return (g.gain + g.matrix @ call > 0).astype(np.float64)


def best_call(g: Game, push: np.ndarray) -> np.ndarray:
  """The big blind's pure best response [169] to a pushing strategy (call where the small blind loses)."""
  return (push @ g.matrix < 0).astype(np.float64)


def exploitability(g: Game, push: np.ndarray, call: np.ndarray) -> float:
  """Half the sum of what each side gains by a best response (bb per hand): 0 at an equilibrium."""
  return 0.5 * (value(g, best_push(g, call), call) - value(g, push, best_call(g, push)))


def _linear_programmes(g: Game) -> tuple[np.ndarray, np.ndarray]:
  """Both sides' maximin strategies from one linear programme. The small blind maximises
  p.u + sum_V min(0, (p'A)_V), with one slack variable per big blind's class: t_V <= (p'A)_V, t <= 0.
  Its dual is the big blind's programme, minimise sum_H max(0, u_H + (Ac)_H) over c in [0, 1]: the
  multipliers of the slack constraints are a maximin calling strategy c (HiGHS reports them)."""
  from scipy.optimize import linprog  # noqa: PLC0415

  n = len(g.gain)
  options = {'primal_feasibility_tolerance': 1e-10, 'dual_feasibility_tolerance': 1e-10}
  # Variables (p, t): maximise u.p + sum t (linprog minimises the negation).
  result = linprog(
    -np.concatenate([g.gain, np.ones(n)]),
    A_ub=np.hstack([-g.matrix.T, np.eye(n)]),
    b_ub=np.zeros(n),
    bounds=[(0, 1)] * n + [(None, 0)] * n,
    method='highs',
    options=options,
  )
  if result.status != 0:
    raise RuntimeError(f'the push-or-fold linear programme failed at {g.stack} bb: {result.message}')
  # A minimisation's multipliers of <= constraints are <= 0: the calling strategy is their negation.
  return np.clip(result.x[:n], 0, 1), np.clip(-result.ineqlin.marginals, 0, 1)


def _polish(g: Game, push: np.ndarray, call: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Makes the mixed hands exactly indifferent: the small blind's mixed probabilities solve the big
  blind's mixed hands' equations (p'A)_V = 0 with the pure hands fixed, and the other way round."""
  push_margin = g.gain + g.matrix @ call  # > 0: push is best
  call_margin = -(push @ g.matrix)  # > 0: call is best
  scale = _POLISH_TOLERANCE * max(1.0, g.stack) / len(push)
  mixed_push = np.flatnonzero(np.abs(push_margin) <= scale)
  mixed_call = np.flatnonzero(np.abs(call_margin) <= scale)
  push = np.where(push_margin > 0, 1.0, 0.0)
  call = np.where(call_margin > 0, 1.0, 0.0)
  if len(mixed_push) and len(mixed_call):
    # (p'A)_V = 0 for V mixed: A[M_p, V]' p_M = -A[pure, V]' p_pure.
    pure = np.setdiff1d(np.arange(len(push)), mixed_push)
    rhs = -(push[pure] @ g.matrix[np.ix_(pure, mixed_call)])
    push[mixed_push] = np.linalg.lstsq(g.matrix[np.ix_(mixed_push, mixed_call)].T, rhs, rcond=None)[0]
    pure = np.setdiff1d(np.arange(len(call)), mixed_call)
    rhs = -g.gain[mixed_push] - g.matrix[np.ix_(mixed_push, pure)] @ call[pure]
    call[mixed_call] = np.linalg.lstsq(g.matrix[np.ix_(mixed_push, mixed_call)], rhs, rcond=None)[0]
  return np.clip(push, 0, 1), np.clip(call, 0, 1)


@functools.lru_cache(maxsize=256)
def solve(stack: float, ante: float = 0.0, small_blind: float = SMALL_BLIND) -> PushFold:
  """The push-or-fold equilibrium at this depth (see the module): linear programmes, then the polish,
  keeping whichever is less exploitable."""
  g = game(stack, ante, small_blind)
  push, call = _linear_programmes(g)
  polished = _polish(g, push, call)
  if exploitability(g, *polished) <= exploitability(g, push, call):
    push, call = polished
  for array in (push, call):
    array.setflags(write=False)
  return PushFold(
    g.stack, g.ante, g.small_blind, push, call, value(g, push, call), exploitability(g, push, call)
  )


@dataclasses.dataclass(frozen=True)
class Chart:
  """Per class, the largest stack of a grid at which the equilibrium pushes (small blind) or calls a push
  (big blind) with probability at least one half; 0 where it never does, `stacks[-1]` where it does at
  the deepest. `push_gaps` / `call_gaps` list the classes that fold at some depth below that largest one."""

  stacks: np.ndarray  # float64 [G]
  ante: float
  push: np.ndarray  # float64 [169]
  call: np.ndarray  # float64 [169]
  push_gaps: tuple[int, ...]
  call_gaps: tuple[int, ...]


def chart(
  max_stack: float = CHART_MAX_STACK,
  step: float = CHART_STEP,
  ante: float = 0.0,
  small_blind: float = SMALL_BLIND,
  on_progress=None,
) -> Chart:
  """Solves the game on the grid 1, 1 + step, ... max_stack (bb) and reads off the chart (`Chart`);
  on_progress(done, total) after each depth."""
  check_depth(max_stack, ante, small_blind)
  if not (np.isfinite(step) and step > 0):
    raise ValueError(f'the chart step must be a positive number of big blinds, got {step}')
  stacks = np.round(np.arange(1.0, max_stack + step / 2, step), 6)
  pushes, calls = [], []
  for i, stack in enumerate(stacks):
    solution = solve(float(stack), ante, small_blind)
    pushes.append(solution.push >= 0.5)
    calls.append(solution.call >= 0.5)
    if on_progress is not None:
      on_progress(i + 1, len(stacks))
  largest = lambda table: np.where(
    table.any(0), stacks[len(stacks) - 1 - np.argmax(table[::-1], axis=0)], 0.0
  )
  gaps = lambda table: tuple(
    int(k)
    for k in range(169)
    if table[:, k].any() and not table[: len(stacks) - np.argmax(table[::-1, k]), k].all()
  )
  pushes, calls = np.array(pushes), np.array(calls)  # [G, 169]
  return Chart(stacks, float(ante), largest(pushes), largest(calls), gaps(pushes), gaps(calls))
