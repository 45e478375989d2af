"""Ports: the Protocols the domain and the use cases need from the outside world."""
