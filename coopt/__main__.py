import sys

from coopt.cli import main

sys.exit(main())
