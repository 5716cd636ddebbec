"""``python -m bench``: the benchmark suite's one runner (:mod:`bench.suite`)."""

import sys

from bench.suite import main

sys.exit(main())
