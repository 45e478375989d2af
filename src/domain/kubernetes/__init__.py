"""Kubernetes rules both domain cores share (squarepeg and the GPU-job core): pod start, scheduling,
labels and the apiserver's time strings. Pure: stdlib and attrs only."""
