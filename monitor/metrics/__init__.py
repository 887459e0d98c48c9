"""Pure measures over NumPy arrays: no database, no files, no templates.

Every function takes integer-coded arrays (ids mapped to 0..n-1 by the caller) and returns
frozen dataclasses. A value that is not defined is ``None`` with a reason, never 0 or NaN.

One package per family, each ``__init__`` naming its public functions: ``agreement``
(Krippendorff, kappas, agreement with the aggregate, bootstrap intervals), ``crowdtruth``
(CrowdTruth 2.0), ``labels`` (Dawid-Skene, multi-label sets, gold accuracy), ``ratings`` (Phi,
the rating model of bias and noise) and ``preferences`` (transitivity, the preference model,
planning). ``common`` holds the conventions they share, ``lbfgs`` the optimiser.
"""
