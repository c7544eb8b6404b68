"""The version of exactdp: the single source read by ``pyproject.toml`` (setuptools
``dynamic = ["version"]``) and exported as ``exactdp.__version__``."""

__version__ = "0.1.0"
