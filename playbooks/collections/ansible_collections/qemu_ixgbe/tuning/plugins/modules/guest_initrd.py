#!/usr/bin/python
# -*- coding: utf-8 -*-
# Put a developer's kernel modules on top of the project's guest initramfs.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: guest_initrd
short_description: The test guest's initramfs with your own kernel's or rebuilt modules on top
description:
  - Writes O(dest) = the project's guest initramfs (O(base)) followed by a
    second archive with the given modules. Linux unpacks both; a file of the
    second replaces the same file of the first.
  - With O(bzimage), the VM boots that kernel, and its NIC drivers (ixgbe,
    ixgbevf, igb, e1000e, virtio_net, virtio_pci, veth), O(extra_modules)
    and their dependencies are taken from O(modules_dir) (the
    C(INSTALL_MOD_PATH) of its C(make modules_install)).
  - O(module_files) (rebuilt C(ixgbe.ko), C(ixgbevf.ko), ...) replace the
    modules of the same name, or are added under C(extra/).
  - Every module's vermagic must name the kernel it will be loaded into, and
    a bzImage must carry an x86 boot header; otherwise the task fails before
    any VM starts, naming the file and both kernel versions.
  - Supports check mode (everything is checked, nothing written).
options:
  base:
    description: The guest image's initramfs (C($BUILD_DIR/guest/<kernel>/initrd.img)).
    type: path
    required: true
  dest:
    description: Where to write the combined initramfs.
    type: path
    required: true
  bzimage:
    description: A kernel of your own (C(arch/x86/boot/bzImage)); empty for the image's kernel.
    type: path
  modules_dir:
    description: C(INSTALL_MOD_PATH) of that kernel's C(make modules_install).
    type: path
  module_files:
    description: Rebuilt modules for the VM's kernel.
    type: list
    elements: path
    default: []
  extra_modules:
    description: More modules to take from O(modules_dir).
    type: list
    elements: str
    default: []
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Boot the stock image with a rebuilt ixgbe
  qemu_ixgbe.tuning.guest_initrd:
    base: /srv/qemu-ixgbe/build/guest/6.1/initrd.img
    dest: /tmp/vm/initrd.img
    module_files: [/home/dev/ixgbe/ixgbe.ko]
"""

RETURN = r"""
release:
  description: The kernel release the modules were checked against (the VM's C(uname -r)).
  returned: always
  type: str
replaced:
  description: Image paths (under C(lib/modules/<release>/)) of the modules replaced.
  returned: always
  type: list
  elements: str
added:
  description: Image paths of the modules added.
  returned: always
  type: list
  elements: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.guestimage import (
    ImageError, build_overlay)


def main():
    module = AnsibleModule(
        argument_spec={
            "base": {"type": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "bzimage": {"type": "path"},
            "modules_dir": {"type": "path"},
            "module_files": {"type": "list", "elements": "path", "default": []},
            "extra_modules": {"type": "list", "elements": "str", "default": []},
        },
        required_by={"modules_dir": "bzimage"},
        supports_check_mode=True,
    )
    p = module.params
    for key in ("base", "bzimage", "modules_dir"):
        if p[key] and not os.path.exists(p[key]):
            module.fail_json(msg="%s %s does not exist" % (key, p[key]))
    for f in p["module_files"]:
        if not os.path.isfile(f):
            module.fail_json(msg="module file %s does not exist" % f)
    out = p["dest"]
    scratch = None
    if module.check_mode:
        scratch = tempfile.mkdtemp(prefix="guest_initrd.")
        out = os.path.join(scratch, "initrd.img")
    try:
        summary = build_overlay(p["base"], out, bzimage=p["bzimage"] or None,
                                modules_dir=p["modules_dir"] or None,
                                module_files=p["module_files"], extra_modules=p["extra_modules"])
    except ImageError as e:
        module.fail_json(msg=str(e))
    finally:
        if scratch is not None:
            if os.path.exists(out):
                os.unlink(out)
            os.rmdir(scratch)
    module.exit_json(changed=True, release=summary.release, replaced=summary.replaced,
                     added=summary.added)


if __name__ == "__main__":
    main()
