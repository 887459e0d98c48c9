"""The actions a user takes on a campaign's results: exports for the platforms, the requeue, the
next pairs of a preference campaign, and the demo."""
