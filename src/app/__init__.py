"""Use cases, the two CLIs and their dependency-injector containers (the composition roots)."""
