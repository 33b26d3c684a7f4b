"""Problem families (installed as harness.datasets; see the [tool.setuptools] note)."""
