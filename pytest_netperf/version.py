"""The plugin's version, in a module of its own so any layer can read it without the public API."""

__version__ = "0.1.0"
