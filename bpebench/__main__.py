import sys

from bpebench.cli import main

sys.exit(main())
