"""encodr's benchmark suite: ``python -m bench list`` and ``python -m bench run NAME|all [--quick]`` (:mod:`bench.suite`)."""
