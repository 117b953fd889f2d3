"""``python -m aftertrain``: the same command line as ``aftertrain``."""

import sys

from aftertrain.cli import main

sys.exit(main())
