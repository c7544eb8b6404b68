"""The old module paths of the mechanisms (``exactdp.mechanisms.MOVED``): each flat module of
before the families were packages still imports, as the module that now holds its code, and a
pickle of every public mechanism class made before the move loads as the class of the new
module, with the same law."""

from __future__ import annotations

import base64
import importlib
import pickle
import subprocess
import sys

import pytest

import exactdp
from exactdp import mechanisms

#: class name -> (the module the pickle names, the pickle), made by exactdp before the move
#: (``pickle.dumps(exactdp.<Class>([3, 1, 1], 2, epsilon=1), protocol=4)``, optimised)
OLD_PICKLES = {
    "Joint": ("exactdp.mechanisms.joint", (
        "gASVlAEAAAAAAACMGGV4YWN0ZHAubWVjaGFuaXNtcy5qb2ludIwFSm9pbnSTKYF9KIwGY291bnRzlEsDSwFLAYeUjAFklEsDjAFr"
        "SwKMB3JhbmtpbmeMFGV4YWN0ZHAuY29yZS5yYW5raW5njAdSYW5raW5nkymBTn0oaABoAWgCSwOMBl9vcmRlcksASwFLAoeMB192"
        "YWx1ZXNLA0sBhowLX2N1bXVsYXRpdmVLAUsDhowIX3Jhbmtfb2ZLAEsBSwKHjAdfc29ydGVkSwNLAUsBh4wFX25lZ3NdKEr9////"
        "Sv////9K/////2WMB19hcnJheXNOjAdfcmFua2VkTowGX2ludDY0iXWGYowLc2Vuc2l0aXZpdHmMCWZyYWN0aW9uc4wIRnJhY3Rp"
        "b26TlEsBSwGGUowFc2NhbGWMEmV4YWN0ZHAuY29yZS5zY2FsZYwFU2NhbGWTKYF9KIwHZXBzaWxvbmgDSwFLAYZSjARiYXNlTowH"
        "ZGl2aXNvcmgDSwJLAYZSdWKMDW1lbW9yeV9idWRnZXRKAAAAQHViLg=="
    )),
    "PNFJoint": ("exactdp.mechanisms.pnf_joint", (
        "gASVmwEAAAAAAACMHGV4YWN0ZHAubWVjaGFuaXNtcy5wbmZfam9pbnSMCFBORkpvaW50kymBfSiMBmNvdW50c5RLA0sBSwGHlIwB"
        "ZJRLA4wBa0sCjAdyYW5raW5njBRleGFjdGRwLmNvcmUucmFua2luZ4wHUmFua2luZ5MpgU59KGgAaAFoAksDjAZfb3JkZXJLAEsB"
        "SwKHjAdfdmFsdWVzSwNLAYaMC19jdW11bGF0aXZlSwFLA4aMCF9yYW5rX29mSwBLAUsCh4wHX3NvcnRlZEsDSwFLAYeMBV9uZWdz"
        "XShK/f///0r/////Sv////9ljAdfYXJyYXlzTowHX3JhbmtlZE6MBl9pbnQ2NIl1hmKMC3NlbnNpdGl2aXR5jAlmcmFjdGlvbnOM"
        "CEZyYWN0aW9uk5RLAUsBhlKMBXNjYWxljBJleGFjdGRwLmNvcmUuc2NhbGWMBVNjYWxlkymBfSiMB2Vwc2lsb25oA0sBSwGGUowE"
        "YmFzZU6MB2Rpdmlzb3JoA0sCSwGGUnVijA1tZW1vcnlfYnVkZ2V0SgAAAEB1Yi4="
    )),
    "JointSet": ("exactdp.mechanisms.joint_set", (
        "gASVmwEAAAAAAACMHGV4YWN0ZHAubWVjaGFuaXNtcy5qb2ludF9zZXSMCEpvaW50U2V0kymBfSiMBmNvdW50c5RLA0sBSwGHlIwB"
        "ZJRLA4wBa0sCjAdyYW5raW5njBRleGFjdGRwLmNvcmUucmFua2luZ4wHUmFua2luZ5MpgU59KGgAaAFoAksDjAZfb3JkZXJLAEsB"
        "SwKHjAdfdmFsdWVzSwNLAYaMC19jdW11bGF0aXZlSwFLA4aMCF9yYW5rX29mSwBLAUsCh4wHX3NvcnRlZEsDSwFLAYeMBV9uZWdz"
        "XShK/f///0r/////Sv////9ljAdfYXJyYXlzTowHX3JhbmtlZE6MBl9pbnQ2NIl1hmKMC3NlbnNpdGl2aXR5jAlmcmFjdGlvbnOM"
        "CEZyYWN0aW9uk5RLAUsBhlKMBXNjYWxljBJleGFjdGRwLmNvcmUuc2NhbGWMBVNjYWxlkymBfSiMB2Vwc2lsb25oA0sBSwGGUowE"
        "YmFzZU6MB2Rpdmlzb3JoA0sCSwGGUnVijA1tZW1vcnlfYnVkZ2V0SgAAAEB1Yi4="
    )),
    "Canonical": ("exactdp.mechanisms.canonical", (
        "gASVWQIAAAAAAACMHGV4YWN0ZHAubWVjaGFuaXNtcy5jYW5vbmljYWyUjAlDYW5vbmljYWyTKYF9KIwGY291bnRzlEsDSwFLAYeU"
        "jAFklEsDjAFrlEsCjAdyYW5raW5nlIwUZXhhY3RkcC5jb3JlLnJhbmtpbmeMB1JhbmtpbmeTKYGUTn0oaAFoAmgDSwOMBl9vcmRl"
        "cksASwFLAoeMB192YWx1ZXNLA0sBhowLX2N1bXVsYXRpdmVLAUsDhowIX3Jhbmtfb2ZLAEsBSwKHjAdfc29ydGVkSwNLAUsBh5SM"
        "BV9uZWdzXShK/f///0r/////Sv////9ljAdfYXJyYXlzTowHX3JhbmtlZE6MBl9pbnQ2NIl1hmKMA3Job5SMCWZyYWN0aW9uc4wI"
        "RnJhY3Rpb26TlEsBSwKGUpSMBXNjYWxljBJleGFjdGRwLmNvcmUuc2NhbGWMBVNjYWxlkymBfSiMB2Vwc2lsb25oCUsBSwGGUowE"
        "YmFzZU6MB2Rpdmlzb3JoCUsBSwGGUnVijAhjbGFzc2VzX2gAjBBDYW5vbmljYWxDbGFzc2VzkymBfShoBWgGaANLA2gESwJoCGgK"
        "jAFwSwGMAXFLAowBeGgHjAFBXShLAksAZYwBQl1LAGGMBHJ1bnNdSwBLA0sDh2GMBV9rZXlzTowGX3NpemVzTnVijAVub2lzZYwG"
        "Z3VtYmVsjARydWxljBlleGFjdGRwLnJ1bGVzLmV4cG9uZW50aWFsjBRFeHBvbmVudGlhbE1lY2hhbmlzbZMpgYwNbWVtb3J5X2J1"
        "ZGdldEoAAABAdWIu"
    )),
    "CanonicalGamma1": ("exactdp.mechanisms.canonical_gamma1", (
        "gASVOQIAAAAAAACMI2V4YWN0ZHAubWVjaGFuaXNtcy5jYW5vbmljYWxfZ2FtbWExjA9DYW5vbmljYWxHYW1tYTGTKYF9KIwGY291"
        "bnRzlEsDSwFLAYeUjAFklEsDjAFrlEsCjAdyYW5raW5nlIwUZXhhY3RkcC5jb3JlLnJhbmtpbmeMB1JhbmtpbmeTKYGUTn0oaABo"
        "AWgCSwOMBl9vcmRlcksASwFLAoeMB192YWx1ZXNLA0sBhowLX2N1bXVsYXRpdmVLAUsDhowIX3Jhbmtfb2ZLAEsBSwKHjAdfc29y"
        "dGVkSwNLAUsBh5SMBV9uZWdzXShK/f///0r/////Sv////9ljAdfYXJyYXlzTowHX3JhbmtlZE6MBl9pbnQ2NIl1hmKMA3Job5SM"
        "CWZyYWN0aW9uc4wIRnJhY3Rpb26TlEsBSwKGUpSMBXNjYWxljBJleGFjdGRwLmNvcmUuc2NhbGWMBVNjYWxlkymBfSiMB2Vwc2ls"
        "b25oCEsBSwGGUowEYmFzZU6MB2Rpdmlzb3JoCEsBSwGGUnVijAhjbGFzc2VzX4wcZXhhY3RkcC5tZWNoYW5pc21zLmNhbm9uaWNh"
        "bIwQQ2Fub25pY2FsQ2xhc3Nlc5MpgX0oaARoBWgCSwNoA0sCaAdoCYwBcEsBjAFxSwKMAXhoBowBQV0oSwJLAGWMAUJdSwBhjARy"
        "dW5zXUsASwNLA4dhjAVfa2V5c06MBl9zaXplc051YowMX3RhaWxfYmlub21zXShLAUsCZXViLg=="
    )),
    "Peeling": ("exactdp.mechanisms.peeling", (
        "gASV6wEAAAAAAACMGmV4YWN0ZHAubWVjaGFuaXNtcy5wZWVsaW5njAdQZWVsaW5nkymBfSiMBmNvdW50c5RLA0sBSwGHlIwBZJRL"
        "A4wBa0sCjAdyYW5raW5njBRleGFjdGRwLmNvcmUucmFua2luZ4wHUmFua2luZ5MpgU59KGgAaAFoAksDjAZfb3JkZXJLAEsBSwKH"
        "jAdfdmFsdWVzSwNLAYaMC19jdW11bGF0aXZlSwFLA4aMCF9yYW5rX29mSwBLAUsCh4wHX3NvcnRlZEsDSwFLAYeMBV9uZWdzXShK"
        "/f///0r/////Sv////9ljAdfYXJyYXlzTowHX3JhbmtlZE6MBl9pbnQ2NIl1hmKMBW5vaXNljAZndW1iZWyMBXNjYWxljBJleGFj"
        "dGRwLmNvcmUuc2NhbGWMBVNjYWxlkymBfSiMB2Vwc2lsb26MCWZyYWN0aW9uc4wIRnJhY3Rpb26TlEsBSwGGUowEYmFzZU6MB2Rp"
        "dmlzb3JoA0sCSwGGUnVijApyb3VuZF9ydWxljBlleGFjdGRwLnJ1bGVzLmV4cG9uZW50aWFsjBRFeHBvbmVudGlhbE1lY2hhbmlz"
        "bZMpgYwFX211bHRLAUsChowPX2xldmVsc19yZWZ1c2VkTowLX2V4dHJhX2JpdHNLEXViLg=="
    )),
}

NEW_MODULES = {"Joint": "joint.mechanism", "PNFJoint": "joint.pnf", "JointSet": "joint_set.mechanism",
               "Canonical": "canonical.mechanism", "CanonicalGamma1": "canonical.gamma1",
               "Peeling": "peeling.mechanism"}


@pytest.mark.parametrize("name", sorted(OLD_PICKLES))
def test_a_pickle_made_before_the_move_loads(name):
    old_module, chunks = OLD_PICKLES[name]
    data = base64.b64decode("".join(chunks))
    assert old_module.encode() in data  # the pickle names the flat module
    loaded = pickle.loads(data)
    cls = getattr(exactdp, name)
    assert type(loaded) is cls and cls.__module__ == f"exactdp.mechanisms.{NEW_MODULES[name]}"
    fresh = cls([3, 1, 1], 2, epsilon=1)
    assert loaded.groups() == fresh.groups()
    output = next(iter(fresh.outputs()))
    assert loaded.probability(output, dps=30) == fresh.probability(output, dps=30)
    assert pickle.loads(pickle.dumps(loaded)).groups() == fresh.groups()  # and pickles again


@pytest.mark.parametrize("old, new", sorted(mechanisms.MOVED.items()))
def test_every_old_module_path_imports_as_the_new_module(old, new):
    module = importlib.import_module(f"exactdp.mechanisms.{old}")
    assert module is importlib.import_module(f"exactdp.mechanisms.{new}")
    assert module.__name__ == module.__spec__.name == f"exactdp.mechanisms.{new}"
    assert all(getattr(module, name) is not None for name in module.__all__)


def test_the_old_class_modules_are_the_packages():
    from exactdp.mechanisms.canonical import Canonical, CanonicalGamma1, UtilityClass  # noqa: F401
    from exactdp.mechanisms.joint import Joint, PNFJoint  # noqa: F401
    from exactdp.mechanisms.joint_set import JointSet, count_at_least  # noqa: F401
    from exactdp.mechanisms.peeling import PEELING_LEVELS_LIMIT, Peeling  # noqa: F401
    from exactdp.mechanisms.pnf_joint import PNFJoint as Old
    assert Old is PNFJoint is exactdp.PNFJoint


def test_an_unknown_module_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError, match="exactdp.mechanisms.no_such_module"):
        importlib.import_module("exactdp.mechanisms.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("exactdp.mechanisms.joint.joint_sweep")  # old names only at the old place


def test_an_old_path_loads_only_its_own_family():
    # a fresh interpreter: naming the old path of Peeling's tree loads no other family
    code = ("import sys, exactdp.mechanisms.peeling_tree as t; "
            "print(t.__name__, sorted(m for m in sys.modules if m.startswith('exactdp.mechanisms.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    assert out[0] == "exactdp.mechanisms.peeling.tree"
    loaded = eval(out[1])
    assert not [m for m in loaded if m.startswith(("exactdp.mechanisms.joint", "exactdp.mechanisms.canonical"))], loaded
