"""``python -m resispec.theory``: see ``resispec.theory.report.main``."""

import sys

from resispec.theory.report import main

sys.exit(main())
