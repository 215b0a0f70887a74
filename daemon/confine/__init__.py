"""The trusted core: how the agent's code runs, confined, one case at a time.

One door in: `Runner.run` takes a command and its check's `Policy` and gives back one
`CaseEnd`. Inside, one `Confinement` per mechanism (bubblewrap.py, landlock.py, and the
unconfined one), each owning its seccomp flags, user switch, stop rule and candidate check;
the choice among them (choice.py) proven by a probe case (probe.py); the case supervisor
(supervisor.py) that runs each case, shapes its user's permissions (access.py), makes its
Unix connections (broker.py), and watches its processes, memory and disk. Small enough to
audit alone: nothing here reads task.toml, speaks HTTP or loads pydantic (a meta-test checks).

This module imports nothing: the supervisor process starts as `-m ssebench.daemon.confine.
supervisor`, and every fork of it copies what it loaded. Import the door from `runner`, the
records from `policy`, the choice from `choice`.
"""
