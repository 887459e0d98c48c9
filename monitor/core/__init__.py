"""The shared foundations: settings and their sections, the catalog of measures and rules, typed
errors, a run's results, and the output, progress and version every layer uses."""
