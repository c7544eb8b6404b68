"""Privacy notions of a pair of distributions: pure loss, privacy profile, Renyi divergence and zCDP."""
