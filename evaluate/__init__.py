"""The evaluator's side, apart from test_patch's domain: grading a patch, batch runs with their
reports and page, signals, validation, the backends (here, or in a task's image) and the
importers of other benchmarks' tasks. `serve` never imports it; it imports core's domain and
the case service's door (core/daemons/door.py), never the command line."""
