"""exactdp._oracle.retired and the public facades: pickles made before the oracle's engine moved
into exactdp._oracle still load, and new pickles name the public modules."""

import base64
import importlib
import pickle
import sys

import pytest

import exactdp
from exactdp import audit, testing

# pickle.dumps(protocol=4) of every public class of exactdp.audit, exactdp.testing,
# exactdp.certify and exactdp.accounting, and of three notion results, made with the code
# before the move (PrivacyProfile, EpsilonForDelta, ZcdpBracket and Sampler then named the
# private modules exactdp._notions, exactdp._renyi and exactdp._samplers).
BEFORE = {
    'exactdp.audit.AuditLimitError': "gASVJQAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjA9BdWRpdExpbWl0RXJyb3KUk5Qu",
    'exactdp.audit.PairLoss': "gASVHgAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjAhQYWlyTG9zc5STlC4=",
    'exactdp.audit.PrivacyLoss': "gASVIQAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjAtQcml2YWN5TG9zc5STlC4=",
    'exactdp.audit.NeighbourLoss': "gASVIwAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjA1OZWlnaGJvdXJMb3NzlJOULg==",
    'exactdp.audit.WorstCase': "gASVHwAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjAlXb3JzdENhc2WUk5Qu",
    'exactdp.audit.PrivacyProfile': "gASVJwAAAAAAAACMEGV4YWN0ZHAuX25vdGlvbnOUjA5Qcml2YWN5UHJvZmlsZZSTlC4=",
    'exactdp.audit.EpsilonForDelta': "gASVKAAAAAAAAACMEGV4YWN0ZHAuX25vdGlvbnOUjA9FcHNpbG9uRm9yRGVsdGGUk5Qu",
    'exactdp.audit.ZcdpBracket': "gASVIgAAAAAAAACMDmV4YWN0ZHAuX3JlbnlplIwLWmNkcEJyYWNrZXSUk5Qu",
    'exactdp.audit.DrawsBound': "gASVIAAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjApEcmF3c0JvdW5klJOULg==",
    'exactdp.audit.PlannedEvent': "gASVIgAAAAAAAACMDWV4YWN0ZHAuYXVkaXSUjAxQbGFubmVkRXZlbnSUk5Qu",
    'exactdp.testing.Inconclusive': "gASVJAAAAAAAAACMD2V4YWN0ZHAudGVzdGluZ5SMDEluY29uY2x1c2l2ZZSTlC4=",
    'exactdp.testing.RawOutput': "gASVFwAAAAAAAACMCGJ1aWx0aW5zlIwGb2JqZWN0lJOULg==",
    'exactdp.testing.Sampler': "gASVIQAAAAAAAACMEWV4YWN0ZHAuX3NhbXBsZXJzlIwHU2FtcGxlcpSTlC4=",
    'exactdp.certify.ComparisonRow': "gASVJQAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMDUNvbXBhcmlzb25Sb3eUk5Qu",
    'exactdp.certify.ProbabilityComparison': "gASVLQAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMFVByb2JhYmlsaXR5Q29tcGFyaXNvbpSTlC4=",
    'exactdp.certify.MtildeRow': "gASVIQAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMCU10aWxkZVJvd5STlC4=",
    'exactdp.certify.MtildeComparison': "gASVKAAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMEE10aWxkZUNvbXBhcmlzb26Uk5Qu",
    'exactdp.certify.ClassRow': "gASVIAAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMCENsYXNzUm93lJOULg==",
    'exactdp.certify.ClassComparison': "gASVJwAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMD0NsYXNzQ29tcGFyaXNvbpSTlC4=",
    'exactdp.certify.Bin': "gASVGwAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMA0JpbpSTlC4=",
    'exactdp.certify.GoodnessOfFit': "gASVJQAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMDUdvb2RuZXNzT2ZGaXSUk5Qu",
    'exactdp.certify.TailTest': "gASVIAAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMCFRhaWxUZXN0lJOULg==",
    'exactdp.certify.BinPlan': "gASVHwAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMB0JpblBsYW6Uk5Qu",
    'exactdp.certify.Sensitivity': "gASVIwAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMC1NlbnNpdGl2aXR5lJOULg==",
    'exactdp.certify.Power': "gASVHQAAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMBVBvd2VylJOULg==",
    'instance.profile': "gASVhwEAAAAAAACMEGV4YWN0ZHAuX25vdGlvbnOUjA5Qcml2YWN5UHJvZmlsZZSTlCmBlH2UKIwHZXBzaWxvbpSMCWZyYWN0aW9uc5SMCEZyYWN0aW9ulJOUSwBLAYaUUpSMBWRlbHRhlIwUbXBtYXRoLmN0eF9tcF9weXRob26UjANtcGaUk5QpgZQoSwCMHzNlN2Q4MmZkYmE0YTgwOGZhZDc0MmNiYzYxMTQwNDWUSoP///9LenSUYowJZGlyZWN0aW9ulIwDYj5hlIwJZGVsdGFfYV9ilGgOKYGUKEsAjB9mOWY2MGJmNmU5MmEwMjNlYjVkMGIyZjE4NDUwMTExlEqB////S3x0lGKMCWRlbHRhX2JfYZRoD4wIY2FycmllcnOUjAhidWlsdGluc5SMBXR1cGxllJOUSwGFlIWUUpRLAYaUaBxLAoWUhZRSlEsBhpSGlIwDZHBzlEsFjApleGFjdF96ZXJvlImMCXVuZGVjaWRlZJROjBF1bmRlY2lkZWRfYXRfbW9zdJROdWIu",
    'instance.zcdp': "gASVGQEAAAAAAACMDmV4YWN0ZHAuX3JlbnlplIwLWmNkcEJyYWNrZXSUk5QpgZR9lCiMBWxvd2VylIwUbXBtYXRoLmN0eF9tcF9weXRob26UjANtcGaUk5QpgZQoSwCMKDNmNmZkMjY0OTJiNDJiM2IyOWUyYWE1MmI2MjgzYjNlY2M3OTgxYWaUSl3///9LnnSUYowFdXBwZXKUaAgpgZQoSwCMKDNmNmZmYmI1ZjUwMDgwYzdkYmJhMzFjODJlMzllZTNjOGUwYWRmNTOUSl3///9LnnSUYowFYWxwaGGUjAlmcmFjdGlvbnOUjAhGcmFjdGlvbpSTlEvNS4CGlFKUjAljb252ZXJnZWSUiIwFc3RlcHOUS4OMA2Rwc5RLBXViLg==",
    'instance.eps': "gASVQgEAAAAAAACMEGV4YWN0ZHAuX25vdGlvbnOUjA9FcHNpbG9uRm9yRGVsdGGUk5QpgZR9lCiMBWRlbHRhlIwJZnJhY3Rpb25zlIwIRnJhY3Rpb26Uk5RLAUsKhpRSlIwHZXBzaWxvbpSMFG1wbWF0aC5jdHhfbXBfcHl0aG9ulIwDbXBmlJOUKYGUKEsAjB9lYzM0YWNlMDQ1YmFjMDg4YjNkN2YzZTBiMDBkODlmlEqA////S3x0lGKMCWRpcmVjdGlvbpSMA2I+YZSMC2Vwc2lsb25fYV9ilGgOKYGUKEsAjB81NzQ3YjFiYzE2YTZkYjE5ODliZDBmMWIxNWExYWI3lEqB////S3t0lGKMC2Vwc2lsb25fYl9hlGgPjANkcHOUSwWMCXVuZGVjaWRlZJROjBF1bmRlY2lkZWRfYXRfbW9zdJROdWIu",
}


@pytest.mark.parametrize("name", sorted(k for k in BEFORE if not k.startswith("instance.")))
def test_a_class_pickled_before_the_move_loads_as_the_public_class(name):
    module, cls = name.rsplit(".", 1)
    assert pickle.loads(base64.b64decode(BEFORE[name])) is getattr(importlib.import_module(module), cls)


def test_results_pickled_before_the_move_load_with_their_values():
    P, Q = exactdp.Joint([3, 1, 0], k=1, epsilon=1), exactdp.Joint([2, 1, 0], k=1, epsilon=1)
    now = {"profile": audit.privacy_profile(P, Q, epsilon=0, dps=5), "zcdp": audit.zcdp_rho(P, Q, dps=5),
           "eps": audit.epsilon_for_delta(P, Q, delta="1/10", dps=5)}
    for key, result in now.items():
        old = pickle.loads(base64.b64decode(BEFORE["instance." + key]))
        assert type(old) is type(result)
        assert old == result


@pytest.mark.parametrize("cls, home", [(audit.PrivacyProfile, "exactdp.audit"), (audit.EpsilonForDelta, "exactdp.audit"),
                                       (audit.ZcdpBracket, "exactdp.audit"), (testing.Sampler, "exactdp.testing")])
def test_new_pickles_name_the_public_module(cls, home):
    assert cls.__module__ == home
    assert home.encode() in pickle.dumps(cls, protocol=4)


def test_only_the_retired_names_resolve():
    from exactdp._oracle.retired import RETIRED
    for module, (home, names) in RETIRED.items():
        retired = importlib.import_module(module)
        assert {n for n in vars(retired) if not n.startswith("__")} == set(names)
        assert all(getattr(retired, n) is getattr(sys.modules[home], n) for n in names)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("exactdp._worst")
