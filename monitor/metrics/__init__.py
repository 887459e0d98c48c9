"""Pure measures over NumPy arrays: no database, no files, no templates.

Every function takes integer-coded arrays (ids mapped to 0..n-1 by the caller) and returns
frozen dataclasses. A value that is not defined is ``None`` with a reason, never 0 or NaN.
"""
