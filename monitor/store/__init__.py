"""The one store layer: models, engine, migrations and repositories.

Nothing outside this package sees an ORM row: repositories return arrays or plain dataclasses.
"""
