"""The ways monitor runs beyond one command: the schedule, the HTTP server and the Dask cluster,
and the memory a long-lived process keeps."""
