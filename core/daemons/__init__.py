"""The orchestrator's daemons: ours in this process (called as objects), our /v1 API and the
upstream API over one HTTP base, the choice among them, and the daemon layer's one door."""
