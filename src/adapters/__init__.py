"""Real adapters, shipped fakes and loopback sandboxes behind the domain ports. Importing this package imports no SDK."""
