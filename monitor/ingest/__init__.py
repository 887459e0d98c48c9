"""Reading input files into validated rows and loading them into the store."""
