# -*- coding: utf-8 -*-
# Small helpers around the virsh command line, shared by the modules.
from __future__ import annotations

import os
import tempfile


class VirshError(RuntimeError):
    pass


class Virsh(object):
    """Runs virsh through AnsibleModule.run_command against one URI."""

    def __init__(self, module, uri):
        self.module = module
        self.uri = uri
        self.binary = module.get_bin_path("virsh", required=True)

    def run(self, *args, check=True):
        cmd = [self.binary, "-q", "-c", self.uri] + [str(a) for a in args]
        rc, out, err = self.module.run_command(cmd, environ_update={"LC_ALL": "C"})
        if check and rc != 0:
            raise VirshError("virsh %s failed (rc=%d): %s" % (
                " ".join(str(a) for a in args), rc, (err or out).strip()))
        return rc, out, err

    def exists(self, name):
        rc, _out, _err = self.run("dominfo", name, check=False)
        return rc == 0

    def require(self, name):
        rc, out, err = self.run("dominfo", name, check=False)
        if rc != 0:
            raise VirshError("unknown domain %r on %s: %s" % (name, self.uri,
                                                              (err or out).strip()))
        info = {}
        for line in out.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                info[k.strip().lower()] = v.strip()
        return info

    def state(self, name):
        _rc, out, _err = self.run("domstate", name)
        return out.strip()

    def dumpxml(self, name, inactive=False):
        args = ["dumpxml"]
        if inactive:
            args += ["--inactive", "--security-info"]
        _rc, out, _err = self.run(*(args + [name]))
        return out

    def define(self, xml_text):
        fd, path = tempfile.mkstemp(prefix="domain-", suffix=".xml")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(xml_text)
            self.run("define", path)
        finally:
            os.unlink(path)
