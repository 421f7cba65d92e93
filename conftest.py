"""Repository-level pytest configuration for the test suite."""

pytest_plugins = ["pytester"]
