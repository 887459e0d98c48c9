"""Connectors: monitor talking to annotation platforms over their HTTP APIs (plain ``httpx``, no
vendor SDK). A connector pulls judgments through the same readers and mapping as the platform's
export files (:mod:`monitor.ingest.platforms`), keeps what it pulled in the store
(:mod:`monitor.store.sources`), and writes back what the platform can take."""
