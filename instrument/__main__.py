"""`python -m instrument [OPTIONS] PROGRAM.py ARGS...`: `instrument.runner.main`."""

import sys

if __name__ == "__main__":
    from instrument.runner import main

    sys.exit(main())
