"""Loopback sandboxes that speak real protocols (Kubernetes API, RunPod GraphQL) for tests and demos."""
