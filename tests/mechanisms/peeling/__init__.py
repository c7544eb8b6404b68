"""Tests of exactdp.mechanisms.peeling, one file per module (test_<module>.py, and test_<module>_<topic>.py)."""
