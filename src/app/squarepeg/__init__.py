"""The squarepeg front door: run a docker-run-style command as a Kubernetes Pod or Job."""
