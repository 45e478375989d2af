"""Pure squarepeg core: config, claims, naming, quantities, volumes, manifests and run policies."""
