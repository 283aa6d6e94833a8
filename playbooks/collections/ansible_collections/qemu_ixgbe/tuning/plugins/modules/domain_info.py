#!/usr/bin/python
# -*- coding: utf-8 -*-
# Read-only facts about one libvirt domain.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: domain_info
short_description: State, QEMU pid and pins of a libvirt domain
description:
  - Returns whether the domain exists, its state, the pid of its QEMU process
    when running, and the vCPU/emulator/iothread pins and numatune of its
    live and persistent definitions. Never changes anything.
options:
  name:
    description: Domain name.
    type: str
    required: true
  uri:
    description: libvirt connection URI.
    type: str
    default: qemu:///system
  must_exist:
    description: Fail (naming the domain) when it does not exist.
    type: bool
    default: true
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Look at vm1
  qemu_ixgbe.tuning.domain_info:
    name: vm1
  register: vm1
"""

RETURN = r"""
exists:
  description: Whether the domain is defined.
  returned: always
  type: bool
state:
  description: virsh domstate output.
  returned: when the domain exists
  type: str
pid:
  description: Pid of the QEMU process, 0 when not running.
  returned: when the domain exists
  type: int
live:
  description: Pins of the running domain (vcpus, vcpupin, emulatorpin, iothreadpin, numatune).
  returned: when running
  type: dict
config:
  description: Pins of the persistent definition.
  returned: when the domain is persistent
  type: dict
emulator:
  description: The domain's QEMU binary (persistent definition, else live).
  returned: when the domain exists
  type: str
"""

import os
import xml.etree.ElementTree as ET

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.domxml import read_pins
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.virsh import (
    Virsh, VirshError)


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "uri": {"type": "str", "default": "qemu:///system"},
            "must_exist": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    name = module.params["name"]
    virsh = Virsh(module, module.params["uri"])
    try:
        if not virsh.exists(name):
            if module.params["must_exist"]:
                module.fail_json(msg="unknown domain %r on %s" % (name, module.params["uri"]),
                                 exists=False)
            module.exit_json(changed=False, exists=False)
        info = virsh.require(name)
        state = virsh.state(name)
        result = {"changed": False, "exists": True, "state": state, "pid": 0,
                  "persistent": info.get("persistent") == "yes"}
        live_xml = None
        if state in ("running", "paused"):
            live_xml = virsh.dumpxml(name)
            result["live"] = read_pins(live_xml)
            pid_file = "/run/libvirt/qemu/%s.pid" % name
            if os.path.exists(pid_file):
                with open(pid_file, encoding="utf-8") as f:
                    result["pid"] = int(f.read().strip() or 0)
        xml_text = live_xml
        if result["persistent"]:
            xml_text = virsh.dumpxml(name, inactive=True)
            result["config"] = read_pins(xml_text)
        result["emulator"] = (ET.fromstring(xml_text).findtext("devices/emulator") or "").strip() \
            if xml_text else ""
    except VirshError as e:
        module.fail_json(msg=str(e))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
