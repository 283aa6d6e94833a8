"""Service control (irqbalance) behind one interface.

* `RealServices` looks for the daemon in /proc and uses systemctl when systemd
  runs, else the SysV init script.
* `RecordedServices` keeps {"name": {"active": bool}} in a JSON file in a
  `--root` tree; its commands are listed, not run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional

from .errors import NettuneError
from .ethtool import _write_json_atomic
from .sysfs import Root


class ServiceError(NettuneError):
    pass


class Services:
    live = False

    def is_active(self, name: str) -> bool:
        raise NotImplementedError

    def stop(self, name: str) -> List[str]:
        raise NotImplementedError

    def start(self, name: str) -> List[str]:
        raise NotImplementedError

    def run(self, argv: List[str]) -> List[str]:
        """Run a helper command (daemon-reload, restart); return it."""
        raise NotImplementedError


def find_pids(root: Root, comm: str) -> List[int]:
    pids: List[int] = []
    for entry in root.listdir("/proc"):
        if entry.isdigit() and root.read_value(f"/proc/{entry}/comm") == comm:
            pids.append(int(entry))
    return sorted(pids)


class RealServices(Services):
    live = True

    def __init__(self, root: Root) -> None:
        self.root = root

    def is_active(self, name: str) -> bool:
        return bool(find_pids(self.root, name))

    def _manager_cmd(self, name: str, verb: str) -> List[str]:
        if os.path.isdir("/run/systemd/system") and shutil.which("systemctl"):
            return ["systemctl", verb, name]
        script = f"/etc/init.d/{name}"
        if os.access(script, os.X_OK):
            return [script, verb]
        raise ServiceError(f"cannot {verb} {name}: no systemd and no {script}; "
                           f"{verb} it by hand or set irqbalance = ignore")

    def stop(self, name: str) -> List[str]:
        return self.run(self._manager_cmd(name, "stop"))

    def start(self, name: str) -> List[str]:
        return self.run(self._manager_cmd(name, "start"))

    def run(self, argv: List[str]) -> List[str]:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False, timeout=60)
        if proc.returncode != 0:
            raise ServiceError(f"{' '.join(argv)} failed: {proc.stderr.strip() or proc.returncode}")
        return argv


class RecordedServices(Services):
    def __init__(self, path: str) -> None:
        self.path = path

    def _load(self) -> Optional[Dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return None
        except ValueError as e:
            raise ServiceError(f"service state file {self.path} is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise ServiceError(f"service state file {self.path} must hold an object")
        return data

    def is_active(self, name: str) -> bool:
        data = self._load() or {}
        return bool((data.get(name) or {}).get("active", False))

    def _set(self, name: str, active: bool, verb: str) -> List[str]:
        data = self._load()
        if data is None or name not in data:
            raise ServiceError(f"cannot {verb} {name}: not in {os.path.basename(self.path)}")
        data[name]["active"] = active
        _write_json_atomic(self.path, data)
        return ["systemctl", verb, name]

    def stop(self, name: str) -> List[str]:
        return self._set(name, False, "stop")

    def start(self, name: str) -> List[str]:
        return self._set(name, True, "start")

    def run(self, argv: List[str]) -> List[str]:
        return argv
