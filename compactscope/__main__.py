"""``python -m compactscope``: the same entry point as the ``compactscope`` command."""
import sys

from compactscope.app.cli import main

sys.exit(main())
