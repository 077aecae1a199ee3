"""``python -m agents ...`` is ``testbed agent ...`` without the rest of the CLI's imports."""

import sys

from agents.cli import main

if __name__ == "__main__":  # the task forkserver imports this module again as __mp_main__
    sys.exit(main(sys.argv[1:]))
