"""The pure core of pegboard: models, policies and ports. No I/O happens here."""
