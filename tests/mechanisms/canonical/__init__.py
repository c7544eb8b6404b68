"""Tests of exactdp.mechanisms.canonical, one file per module (test_<module>.py, and test_<module>_<topic>.py)."""
