"""The race against peer libraries (``diffkit bench``), run from a checkout:

    python benchmarks/race.py --quick

The measuring lives in the package, :mod:`diffkit.bench.race`, so ``diffkit bench`` works
from an installed diffkit too.
"""

from diffkit.bench.race import main

if __name__ == "__main__":
    main()
