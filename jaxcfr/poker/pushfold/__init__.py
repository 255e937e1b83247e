"""Heads-up push or fold: exact all-in preflop equities (`equity`) and the game solved at any depth
(`game`, whose names this package exports: `pushfold.solve(10.0)`)."""

from jaxcfr.poker.pushfold import equity
from jaxcfr.poker.pushfold.game import (
  CHART_MAX_STACK,
  CHART_STEP,
  SMALL_BLIND,
  Chart,
  Game,
  PushFold,
  best_call,
  best_push,
  chart,
  check_depth,
  exploitability,
  game,
  solve,
  value,
)

__all__ = [
  'CHART_MAX_STACK',
  'CHART_STEP',
  'SMALL_BLIND',
  'Chart',
  'Game',
  'PushFold',
  'best_call',
  'best_push',
  'chart',
  'check_depth',
  'equity',
  'exploitability',
  'game',
  'solve',
  'value',
]
