#!/usr/bin/python
# -*- coding: utf-8 -*-
# Run commands in a test VM through its serial-console agent.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: vm_exec
short_description: Run shell commands in a test VM over its serial-console agent
description:
  - Connects to the unix socket of the VM's first serial port, waits until the
    project's guest agent answers, runs each command with C(sh) in the guest
    and returns exit status and output (stdout and stderr together).
  - Works with the project's guest image, whose init hands ttyS0 to that agent.
  - Always reports C(changed=false); the VM it talks to is a throwaway one.
    Skipped in check mode.
options:
  socket:
    description: Path of the unix socket bound to the VM's serial port 0.
    type: path
    required: true
  commands:
    description: Shell commands to run, in order.
    type: list
    elements: str
    required: true
  timeout:
    description: Seconds each command may run before the agent kills it.
    type: int
    default: 120
  boot_timeout:
    description: Seconds to wait for the agent to answer the first time.
    type: int
    default: 300
  fail_on_error:
    description: Fail the task when a command exits non-zero or times out.
    type: bool
    default: true
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Look at the guest CPU flags
  qemu_ixgbe.tuning.vm_exec:
    socket: /run/ci-vm/console.sock
    commands: ["grep -m1 ^flags /proc/cpuinfo"]
  register: out
"""

RETURN = r"""
results:
  description: One entry per command, with keys cmd, rc, timed_out and stdout.
  returned: always
  type: list
  elements: dict
boot_seconds:
  description: Seconds until the agent first answered.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.agent import (
    Agent, AgentError, wait_for_socket)


def main():
    module = AnsibleModule(
        argument_spec={
            "socket": {"type": "path", "required": True},
            "commands": {"type": "list", "elements": "str", "required": True},
            "timeout": {"type": "int", "default": 120},
            "boot_timeout": {"type": "int", "default": 300},
            "fail_on_error": {"type": "bool", "default": True},
        },
        supports_check_mode=False,
    )
    p = module.params
    results = []
    agent = None
    try:
        wait_for_socket(p["socket"], min(30, p["boot_timeout"]))
        agent = Agent(p["socket"], connect_timeout=30)
        waited = agent.wait_ready(p["boot_timeout"])
        for cmd in p["commands"]:
            res = agent.run(cmd, p["timeout"])
            res["cmd"] = cmd
            results.append(res)
            if p["fail_on_error"] and (res["rc"] != 0 or res["timed_out"]):
                module.fail_json(msg="command %r %s in the VM: %s" % (
                    cmd, "timed out" if res["timed_out"] else "exited %d" % res["rc"],
                    res["stdout"][-2000:]), results=results)
    except AgentError as e:
        module.fail_json(msg=str(e), results=results)
    finally:
        if agent is not None:
            agent.close()
    module.exit_json(changed=False, results=results, boot_seconds=round(waited, 1))


if __name__ == "__main__":
    main()
