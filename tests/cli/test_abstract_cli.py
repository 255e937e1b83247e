"""`jaxcfr abstract`: counts checked as every command checks them, before any building."""

import pytest

from jaxcfr import cli


@pytest.mark.parametrize(
  'flag,value,message',
  [
    ('--bins', '0', 'must be at least 2, got 0'),
    ('--bins', '-3', 'must be at least 2, got -3'),
    ('--turn-rivers', '0', 'must be positive (a positive integer), got 0'),
    ('--flop-turns', '-1', 'must be positive (a positive integer), got -1'),
    ('--kmeans-sample', '0', 'must be positive (a positive integer), got 0'),
    ('--kmeans-iterations', '-1', 'must be non-negative (a whole number), got -1'),
    ('--seed', '-2', 'must be non-negative (a whole number), got -2'),
    ('--bins', 'many', "'many' is not a whole number"),
  ],
)
def test_a_negative_or_zero_count_is_one_line_and_exit_status_2(flag, value, message, tmp_path, capsys):
  out = tmp_path / 'tables'
  with pytest.raises(SystemExit) as stop:
    cli.main(['abstract', '--out', str(out), flag, value, '--quiet'])
  err = capsys.readouterr().err
  assert stop.value.code == 2 and f'argument {flag}: {message}' in err and 'Traceback' not in err
  assert [line for line in err.splitlines() if 'error' in line] == [
    f'jaxcfr abstract: error: argument {flag}: {message}'
  ]
  assert not out.exists()
