"""The tree explorer (`--html`): its data against the grid, and the page in a real headless browser
(Chromium through Selenium): it opens, a click on an action shows the next decision's grid, and a
screenshot is not blank. Skipped, with the reason, where no Chromium and chromedriver are installed
(Debian: `apt-get install chromium chromium-driver`)."""

from __future__ import annotations

import io
import json
import re
import shutil

import numpy as np
import pytest
from cli_runner import run_cli
from test_grid import _strategy, write_strategy

from jaxcfr.poker.subgame import explorer, grid


def _browser_missing() -> str | None:
  try:
    import selenium  # noqa: F401, PLC0415
  except ImportError:
    return 'selenium is not installed (pip install selenium)'
  if not (shutil.which('chromium') or shutil.which('chromium-browser') or shutil.which('google-chrome')):
    return 'no Chromium (apt-get install chromium chromium-driver)'
  if not shutil.which('chromedriver'):
    return 'no chromedriver (apt-get install chromium-driver)'
  return None


def test_the_page_holds_every_decisions_grid():
  metadata, arrays = _strategy()
  page = explorer.page(metadata, arrays)
  assert 'src=' not in page and 'http' not in page  # nothing to fetch: data and script inline
  data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S)[1])
  assert [node['path'] for node in data['nodes']] == [[], ['b120'], ['b120', 'c', '3s']]
  total, mix, actions, combos = grid.cells(metadata, arrays, 2)
  node = data['nodes'][2]
  assert node['actions'] == actions
  np.testing.assert_allclose(node['mix'], mix, atol=5e-4)
  share = np.where(combos > 0, total / np.maximum(combos, 1), -1)
  np.testing.assert_allclose(node['share'], share, atol=5e-4)


@pytest.fixture(scope='module')
def page_file(tmp_path_factory):
  """The made-up strategy's explorer, written by `jaxcfr subgame show --html`."""
  folder = tmp_path_factory.mktemp('explorer')
  strategy, html = folder / 'strategy.npz', folder / 'spot.html'
  write_strategy(strategy)
  code, out, err = run_cli('subgame', 'show', str(strategy), '--html', str(html))
  assert code == 0, err
  return html


def test_the_page_in_a_browser(page_file):
  reason = _browser_missing()
  if reason:
    pytest.skip(f'no headless browser to test the explorer: {reason}')
  import matplotlib.image  # noqa: PLC0415
  from selenium import webdriver  # noqa: PLC0415
  from selenium.webdriver.common.by import By  # noqa: PLC0415

  options = webdriver.ChromeOptions()
  for flag in ('--headless=new', '--no-sandbox', '--disable-gpu', '--window-size=900,1000'):
    options.add_argument(flag)
  if shutil.which('chromium'):
    options.binary_location = shutil.which('chromium')
  service = webdriver.ChromeService(executable_path=shutil.which('chromedriver'))
  driver = webdriver.Chrome(options=options, service=service)
  try:
    driver.get(page_file.as_uri())
    where = driver.find_element(By.ID, 'where').text
    assert where == 'OOP to act'
    cell = driver.find_element(By.ID, 'cell-AA')
    before = cell.get_attribute('innerHTML')
    assert 'linear-gradient' in before  # AA is in OOP's range: a filled cell
    driver.find_element(By.ID, 'action-b120').click()
    assert driver.find_element(By.ID, 'where').text == 'IP to act'
    after = driver.find_element(By.ID, 'cell-AA').get_attribute('innerHTML')
    assert after != before
    assert driver.find_element(By.ID, 'action-f').get_attribute('disabled')  # a fold ends the hand
    driver.find_element(By.ID, 'action-c').click()  # the river card comes next
    assert driver.find_element(By.ID, 'where').text == 'deal a card:'
    driver.find_element(By.ID, 'card-3s').click()
    assert driver.find_element(By.ID, 'where').text == 'OOP to act'
    driver.find_element(By.ID, 'back-root').click()
    assert driver.find_element(By.ID, 'cell-AA').get_attribute('innerHTML') == before
    image = matplotlib.image.imread(io.BytesIO(driver.get_screenshot_as_png()), format='png')
    colours = np.unique(np.round(image[..., :3].reshape(-1, 3) * 255).astype(int), axis=0)
    assert len(colours) > 20  # not a blank page: text, grey cells and the actions' colours
  finally:
    driver.quit()
