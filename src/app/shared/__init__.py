"""What both apps take from the outside world and do at their edges, written once.

- `seams.py`      plain factories of the outside world (home dir, user name, random hex, files,
                  YAML, the system clock): the composition roots' providers and the client-side
                  commands call the same functions; no dependency-injector here (~100 ms import).
- `lazy_group.py` the click group whose subcommands are imported on first use (fast `--help`).
- `console.py`    run a click group, map errors to exit codes, leave fast.
"""
