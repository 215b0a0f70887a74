"""Other benchmarks' task formats as ssebench task folders: upstream ssebench, SEC-bench, ARVO
(DESIGN.md, "Importing other benchmarks' tasks"; docs/importing.md)."""

FORMATS = ("upstream", "secb", "arvo")
