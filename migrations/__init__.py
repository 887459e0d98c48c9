"""Alembic migrations, installed as ``monitor._migrations``."""
