"""``python -m theory``: see ``theory.report.main``."""

import sys

from theory.report import main

sys.exit(main())
