"""The runpod-deploy front door: a config-driven GPU job on a RunPod (or local) pod."""
