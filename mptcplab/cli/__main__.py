"""``python -m mptcplab.cli``: how campaigns and tests start the engine in a process of its own."""

import sys

from . import main

sys.exit(main())
