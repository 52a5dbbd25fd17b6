"""``python -m resispec`` runs the CLI."""

import sys

from resispec.cli import main

sys.exit(main())
