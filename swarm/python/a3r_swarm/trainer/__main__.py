"""/usr/bin/python3 -m a3r_swarm.trainer  (protocol a3r-trainer/1 on stdin/stdout)"""

import sys

from .protocol import main

if __name__ == "__main__":
    sys.exit(main())
