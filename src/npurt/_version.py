"""The version of npurt: the one source pyproject.toml, `npurt --version` and npurt.__version__ read."""
__version__ = "0.1.0"
