"""Test domains for the real libvirtd: TCG guests booting the project's guest image."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from harness import REPO, virsh

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.agent import Agent

FIRMWARE = ["/usr/share/qemu", "/usr/share/seabios"]


def domain_xml(name: str, qemu: Path, image: Dict[str, Path], console: Path,
               cpu_model: Optional[str] = None, vcpus: int = 1, stock: bool = False,
               nic_model: Optional[str] = None, cmdline: str = "") -> str:
    """A q35 TCG domain with direct kernel boot and the agent on a unix-socket ttyS0.

    ACPI is on explicitly: without <acpi/> libvirt 9.0 passes -no-acpi, which QEMU 9.0
    and later no longer accept.
    By default QEMU runs as root with relabelling off so libvirt leaves the build's
    files alone, and looks for firmware in Debian's directories (-L). `stock`: neither,
    libvirt's default security labelling (the qemu user, relabelled kernel and initrd)
    and the binary's own firmware search, as a domain of an installed emulator has.
    `nic_model`: one user-mode interface of that model; `cmdline`: more kernel arguments.
    """
    cpu = ""
    if cpu_model:
        cpu = ("<cpu mode='custom' match='exact'><model fallback='forbid'>%s</model></cpu>"
               % cpu_model)
    nic = ""
    if nic_model:
        nic = ("<interface type='user'><mac address='52:54:00:12:34:56'/>"
               "<model type='%s'/></interface>" % nic_model)
    tail = ""
    if not stock:
        firmware = "".join("<qemu:arg value='-L'/><qemu:arg value='%s'/>" % d for d in FIRMWARE)
        tail = ("<seclabel type='static' model='dac' relabel='no'><label>+0:+0</label></seclabel>\n"
                "  <qemu:commandline>%s</qemu:commandline>" % firmware)
    return """<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{name}</name>
  <memory unit='MiB'>256</memory>
  <vcpu placement='static'>{vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>console=ttyS0 panic=-1{cmdline}</cmdline>
  </os>
  <features><acpi/></features>
  {cpu}
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>{qemu}</emulator>
    <serial type='unix'>
      <source mode='bind' path='{console}'/>
      <target port='0'/>
    </serial>
    {nic}
    <memballoon model='none'/>
  </devices>
  {tail}
</domain>
""".format(name=name, vcpus=vcpus, kernel=image["kernel"], initrd=image["initrd"], cpu=cpu,
           cmdline=" " + cmdline if cmdline else "", qemu=qemu, console=console, nic=nic, tail=tail)


def site_hostvars(work: Path, domain: Dict[str, Any]) -> Dict[str, Any]:
    """Variables for site.yml on this host: the domain, and every file the roles
    write kept inside the test's work directory."""
    return {
        "kvm_domains": [domain],
        "kvm_host_vhost_net": "auto",
        "kvm_host_modules_load_file": str(work / "modules-load.conf"),
        "kvm_host_irqbalance_banned_cpus": "0",
        "kvm_host_irqbalance_config": str(work / "irqbalance"),
        "vhost_pinning_config_dir": str(work / "vhost-pinning"),
        "vhost_pinning_helper": str(work / "vhost-pin"),
        "vhost_pinning_log": str(work / "vhost-pin.log"),
        "vhost_pinning_libvirtd_restart_command": "%s restart" % (REPO / "scripts/libvirtd.sh"),
    }


def remove_domain(name: str) -> None:
    virsh("destroy", name, check=False)
    virsh("undefine", name, check=False)


def define(xml: str, workdir: Path, name: str) -> None:
    remove_domain(name)
    path = workdir / ("%s.xml" % name)
    path.write_text(xml)
    virsh("define", str(path))


def start(name: str) -> int:
    virsh("start", name)
    pid_file = Path("/run/libvirt/qemu/%s.pid" % name)
    return int(pid_file.read_text().strip())


def guest_run(console: Path, commands: List[str], boot_timeout: float = 240) -> List[str]:
    agent = Agent(str(console), connect_timeout=30)
    try:
        agent.wait_ready(boot_timeout)
        out = []
        for cmd in commands:
            res = agent.run(cmd, 60)
            assert res["rc"] == 0 and not res["timed_out"], (cmd, res)
            out.append(str(res["stdout"]))
        return out
    finally:
        agent.close()


def cpu_flags(console: Path) -> List[str]:
    line = guest_run(console, ["grep -m1 '^flags' /proc/cpuinfo"])[0]
    return line.split(":", 1)[1].split()


def thread_cpus(pid: int) -> Dict[str, List[str]]:
    """Thread name -> list of Cpus_allowed_list values, read from /proc/<pid>/task/*/status."""
    out: Dict[str, List[str]] = {}
    for task in sorted(Path("/proc/%d/task" % pid).iterdir()):
        try:
            status = (task / "status").read_text()
        except FileNotFoundError:
            continue
        name = re.search(r"^Name:\s*(.*)$", status, re.M)
        allowed = re.search(r"^Cpus_allowed_list:\s*(.*)$", status, re.M)
        if name and allowed:
            out.setdefault(name.group(1).strip(), []).append(allowed.group(1).strip())
    return out


def wait_for_log(path: Path, domain: str, timeout: float = 30) -> Dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("domain") == domain:
                    return entry
        time.sleep(0.3)
    raise AssertionError("no hook log entry for %s in %s" % (domain, path))
