#!/usr/bin/python
# -*- coding: utf-8 -*-
# Set a sysfs/procfs value idempotently.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sysfs_value
short_description: Write a value to a sysfs or procfs file when it differs
description:
  - Reads the file, compares its content (whitespace-trimmed) with O(value)
    and writes only when they differ; reads it back and fails when the kernel
    did not take the value (for example too few free pages for hugepages).
  - Supports check mode and diff.
options:
  path:
    description: The file, e.g. C(/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages).
    type: path
    required: true
  value:
    description: The wanted content.
    type: str
    required: true
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Reserve 512 2 MiB hugepages
  qemu_ixgbe.tuning.sysfs_value:
    path: /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
    value: "512"
"""

RETURN = r"""
before:
  description: Content before.
  returned: always
  type: str
after:
  description: Content read back after writing (the wanted value in check mode).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"path": {"type": "path", "required": True},
                                          "value": {"type": "str", "required": True}},
                           supports_check_mode=True)
    path, value = module.params["path"], module.params["value"].strip()
    try:
        with open(path, encoding="utf-8") as f:
            before = f.read().strip()
    except OSError as e:
        module.fail_json(msg="cannot read %s: %s" % (path, e))
    if before == value:
        module.exit_json(changed=False, before=before, after=before)
    diff = {"before": before + "\n", "after": value + "\n", "before_header": path,
            "after_header": path}
    if module.check_mode:
        module.exit_json(changed=True, before=before, after=value, diff=diff)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(value + "\n")
        with open(path, encoding="utf-8") as f:
            after = f.read().strip()
    except OSError as e:
        module.fail_json(msg="cannot write %r to %s: %s" % (value, path, e), before=before)
    if after != value:
        module.fail_json(msg="%s reads %r after writing %r (the kernel did not take it)"
                         % (path, after, value), before=before, after=after)
    module.exit_json(changed=True, before=before, after=after, diff=diff)


if __name__ == "__main__":
    main()
