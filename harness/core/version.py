"""The package version (one place: the installed metadata names the same)."""

__version__ = "0.1.0"
