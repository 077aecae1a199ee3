"""``python -m agents ...`` is ``testbed agent ...``."""

import sys

from testbed.cli import main

if __name__ == "__main__":  # the task forkserver imports this module again as __mp_main__
    sys.exit(main(["agent", *sys.argv[1:]]))
