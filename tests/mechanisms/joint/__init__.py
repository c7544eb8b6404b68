"""Tests of exactdp.mechanisms.joint, one file per module (test_<module>.py, and test_<module>_<topic>.py)."""
