"""Connectors: monitor inside the annotation tools' loop, over their HTTP APIs (plain ``httpx``,
no vendor SDK). A pull reads judgments through the same readers and mapping as the platform's
export files (:mod:`monitor.ingest.platforms`) and keeps what it pulled in the store
(:mod:`monitor.store.sources`); a push writes back what the platform can take, each action once
(:mod:`monitor.store.ledger`); a notification follows a run whose decisions or verdicts changed."""
