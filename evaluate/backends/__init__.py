"""Where a patch is graded: `local` (the default), on this machine; `docker`, in a fresh
container of its task's image. A benchmark run is the same either way (each prediction its own
`grade --patch` process, `-j`, `--shard`, resuming): the backend changes only how that one
process grades."""

BACKENDS = ("local", "docker")
