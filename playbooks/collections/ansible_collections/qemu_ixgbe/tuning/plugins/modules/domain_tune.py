#!/usr/bin/python
# -*- coding: utf-8 -*-
# Tune an existing libvirt domain: pins, numatune, CPU model, interfaces.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: domain_tune
short_description: Bring an existing libvirt domain to a tuning plan, persistent and live
description:
  - Reads the domain's persistent XML, changes only the parts the plan names
    (vCPU count and pins, emulator and iothread pins, numatune, CPU model and
    features, memory backing, emulator binary, interfaces matched by MAC) and
    redefines the domain when anything differs.
  - For a running domain, pins and the numatune nodeset are also applied live
    (C(virsh vcpupin/emulatorpin/iothreadpin/numatune --live)). Everything else
    only takes effect at the next start; the module then returns
    RV(restart_required=true), and restarts the domain only when O(restart=true).
  - Reports a diff of the persistent XML and supports check mode.
options:
  name:
    description: Name of an existing domain.
    type: str
    required: true
  uri:
    description: libvirt connection URI.
    type: str
    default: qemu:///system
  plan:
    description:
      - The tuning plan; keys vcpus, vcpupin, emulatorpin, iothreads, iothreadpin,
        numatune, cpu, memory_backing, emulator, interfaces, interfaces_exclusive.
        A key left out (or null) leaves that part of the domain alone.
    type: dict
    required: true
  config:
    description: Change the persistent definition.
    type: bool
    default: true
  live:
    description: Apply pins and numatune nodeset to the running domain too.
    type: bool
    default: true
  restart:
    description: Destroy and start a running domain when a change needs a restart.
    type: bool
    default: false
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Pin a domain to node 1
  qemu_ixgbe.tuning.domain_tune:
    name: vm1
    plan:
      vcpus: 2
      vcpupin: {"0": "2", "1": "4"}
      emulatorpin: "6"
      numatune: {mode: strict, nodeset: "1"}
"""

RETURN = r"""
changes:
  description: What changed, per target (config, live).
  returned: always
  type: dict
restart_required:
  description: True when the running domain still differs from the plan in a way only a restart applies.
  returned: always
  type: bool
state:
  description: Domain state after the run.
  returned: always
  type: str
"""

import xml.etree.ElementTree as ET

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.domxml import (
    ALL_SECTIONS, LIVE_SECTIONS, apply_plan, read_pins)
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.topology import (
    PlanError, as_cpus)
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.virsh import (
    Virsh, VirshError)


def normalize(xml_text):
    """The XML as this module serialises it, so a diff shows only real changes."""
    return ET.tostring(ET.fromstring(xml_text), encoding="unicode")


def live_commands(name, live_xml, plan):
    """virsh commands that bring a running domain's pins to the plan."""
    have = read_pins(live_xml)
    cmds = []
    restart_only = []
    for vcpu, cpus in sorted((plan.get("vcpupin") or {}).items(), key=lambda kv: int(kv[0])):
        if int(vcpu) >= have["vcpus"]:
            restart_only.append("vCPU %s does not exist in the running domain" % vcpu)
            continue
        cmds += _pin_command("vcpupin %s" % vcpu, ["vcpupin", name, str(vcpu)],
                             have["vcpupin"].get(str(vcpu)), cpus)
    if plan.get("emulatorpin") is not None:
        cmds += _pin_command("emulatorpin", ["emulatorpin", name], have["emulatorpin"],
                             plan["emulatorpin"])
    for iot, cpus in sorted((plan.get("iothreadpin") or {}).items(), key=lambda kv: int(kv[0])):
        cmds += _pin_command("iothreadpin %s" % iot, ["iothreadpin", name, str(iot)],
                             have["iothreadpin"].get(str(iot)), cpus)
    nt = plan.get("numatune")
    if nt is not None:
        _numatune_live(name, have["numatune"], nt, cmds, restart_only)
    return cmds, restart_only


def _pin_command(what, argv, cur, cpus):
    """The virsh command (as a one-item list) that pins `what` to cpus, none when it is there."""
    if cur is not None and as_cpus(cur) == as_cpus(cpus):
        return []
    return [(argv + [str(cpus), "--live"], "%s: %s -> %s" % (what, cur or "unpinned", cpus))]


def _numatune_live(name, cur, nt, cmds, restart_only):
    """A running domain's nodeset can change; its numatune mode only with a restart."""
    if cur is None or cur["mode"] != nt.get("mode", "strict"):
        restart_only.append("numatune mode %s -> %s" % (
            cur["mode"] if cur else "unset", nt.get("mode", "strict")))
    elif as_cpus(cur["nodeset"]) != as_cpus(nt["nodeset"]):
        cmds.append((["numatune", name, "--nodeset", str(nt["nodeset"]), "--live"],
                     "numatune nodeset: %s -> %s" % (cur["nodeset"], nt["nodeset"])))


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "uri": {"type": "str", "default": "qemu:///system"},
            "plan": {"type": "dict", "required": True},
            "config": {"type": "bool", "default": True},
            "live": {"type": "bool", "default": True},
            "restart": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    name = p["name"]
    # A key that is null or empty means "leave that part alone".
    plan = {k: v for k, v in p["plan"].items() if v is not None and v != ""}
    unknown = sorted(set(plan) - set(ALL_SECTIONS) - {"interfaces_exclusive"})
    if unknown:
        module.fail_json(msg="unknown plan keys: %s (known: %s)"
                         % (", ".join(unknown), ", ".join(ALL_SECTIONS)))
    virsh = Virsh(module, p["uri"])
    result = {"changed": False, "changes": {"config": [], "live": []},
              "restart_required": False, "restarted": False}
    try:
        info = virsh.require(name)
        running = virsh.state(name) in ("running", "paused", "in shutdown")
        before = after = None
        if p["config"]:
            before, after = _tune_config(module, virsh, name, plan, info, result)
        restart_only = _tune_live(module, virsh, name, plan, result) if running else []
        result["restart_required"] = bool(restart_only)
        result["pending_until_restart"] = restart_only
        if restart_only and p["restart"]:
            _restart(module, virsh, name, restart_only, result)
        result["state"] = virsh.state(name)
        result["running"] = result["state"] == "running"
        if before is not None and before != after:
            result["diff"] = {"before": normalize(before), "after": after,
                              "before_header": "%s (persistent XML)" % name,
                              "after_header": "%s (persistent XML)" % name}
    except (PlanError, VirshError) as e:
        module.fail_json(msg=str(e), **result)
    module.exit_json(**result)


def _tune_config(module, virsh, name, plan, info, result):
    """Bring the persistent definition to the plan; (XML before, XML after)."""
    if info.get("persistent") != "yes":
        module.fail_json(msg="domain %r is transient; it has no persistent "
                             "definition to change (use config=false)" % name)
    before = virsh.dumpxml(name, inactive=True)
    after, changes = apply_plan(before, plan)
    result["changes"]["config"] = changes
    if changes:
        result["changed"] = True
        if not module.check_mode:
            virsh.define(after)
    return before, after


def _tune_live(module, virsh, name, plan, result):
    """Bring a running domain's pins to the plan (with live=true); what only a restart applies."""
    live_xml = virsh.dumpxml(name)
    _new, restart_only = apply_plan(live_xml, plan, [s for s in ALL_SECTIONS if s not in LIVE_SECTIONS])
    if module.params["live"]:
        cmds, not_live = live_commands(name, live_xml, plan)
        restart_only.extend(not_live)
        for args, text in cmds:
            result["changes"]["live"].append(text)
            result["changed"] = True
            if not module.check_mode:
                virsh.run(*args)
    return restart_only


def _restart(module, virsh, name, restart_only, result):
    result["changed"] = True
    result["changes"]["live"].append("restarted to apply: %s" % "; ".join(restart_only))
    if not module.check_mode:
        virsh.run("destroy", name)
        virsh.run("start", name)
        result["restart_required"] = False
        result["restarted"] = True


if __name__ == "__main__":
    main()
