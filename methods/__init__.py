"""Method plugins (installed as harness.methods; see the [tool.setuptools] note)."""
