"""`python -m jaxcfr.cli`: the same as the `jaxcfr` command."""

import sys

from jaxcfr.cli import main

sys.exit(main())
