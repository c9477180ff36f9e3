"""A PEP 517/660 build backend for the stackprof package, with no dependencies.

pip builds in an isolated environment and would download setuptools for it;
this backend needs only the standard library, so `pip install ./python`
works offline. It packs stackprof/*.py into a pure-Python wheel, a source
tarball, or an editable wheel that points at this directory.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "stackprof"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^(\w[\w-]*)\s*=\s*"([^"]*)"', section, re.M))
    return fields["name"], fields["version"], fields.get("description", ""), fields.get(
        "requires-python", ""
    )


def _metadata():
    name, version, summary, requires = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version, "Summary: " + summary]
    if requires:
        lines.append("Requires-Python: " + requires)
    return name, version, "\n".join(lines) + "\n"


def _sources():
    pkg = os.path.join(HERE, PACKAGE)
    return sorted(
        (PACKAGE + "/" + f, os.path.join(pkg, f)) for f in os.listdir(pkg) if f.endswith(".py")
    )


def _wheel(directory, files):
    """Writes a py3-none-any wheel of files [(archive name, bytes)]; returns its name."""
    name, version, metadata = _metadata()
    dist = "%s-%s.dist-info" % (name, version)
    files = list(files) + [
        (dist + "/METADATA", metadata.encode()),
        (dist + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: stackprof _build\n"
         b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = []
    for arc, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (arc, digest.decode(), len(data)))
    record.append(dist + "/RECORD,,")
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode()))
    whl = "%s-%s-py3-none-any.whl" % (name, version)
    with zipfile.ZipFile(os.path.join(directory, whl), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(zipfile.ZipInfo(arc, (1980, 1, 1, 0, 0, 0)), data)
    return whl


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(arc, _read(path)) for arc, path in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # a .pth line puts this directory on sys.path: edits show at once
    return _wheel(wheel_directory, [("_stackprof_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    files = [(arc, path) for arc, path in _sources()]
    files += [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
              ("_build/backend.py", os.path.abspath(__file__))]
    out = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, out), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for arc, path in files:
            t.add(path, base + "/" + arc, recursive=False)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = metadata.encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return out
