"""Jinja templates of the reports, installed as ``monitor._templates``."""
