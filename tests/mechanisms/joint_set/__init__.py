"""Tests of exactdp.mechanisms.joint_set, one file per module (test_<module>.py, and test_<module>_<topic>.py)."""
