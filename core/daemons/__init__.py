"""The orchestrator's daemon clients: one HTTP base, our /v1 API, the upstream API, in-process."""
