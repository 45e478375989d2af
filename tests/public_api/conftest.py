"""This package is a user's test suite: it imports only what docs/public-api.md calls public
(tests/unit/test_public_api.py checks that), and takes its fixtures from pegboard's pytest
plugin, as an installed pegboard gives them, not from the repository's own helpers."""

from pegboard.testing.pytest_plugin import (  # noqa: F401  the plugin's, over tests/conftest.py's
    fake_cluster,
    k8s_sandbox,
    runpod_deploy_on_sandbox,
    runpod_sandbox,
    squarepeg_on_fakes,
    squarepeg_on_sandbox,
)
