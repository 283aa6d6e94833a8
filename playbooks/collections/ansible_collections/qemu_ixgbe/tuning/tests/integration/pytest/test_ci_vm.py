"""ci-vm.yml: a throwaway VM with an emulated Intel NIC, its port up with an
address, runs commands and leaves nothing behind; with a rebuilt driver module."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from harness import BUILD_DIR, PLAYBOOKS, PlaybookRun, has_ixgbe, run_playbook, virsh
# the project's test library (tests/lib, on sys.path by the repository's pytest.ini)
from ixgbe_testlib.devloop import PROBE_MESSAGE, patched_ixgbe
from ixgbe_testlib.host import delay_loop_problem
from ixgbe_testlib.iperf3 import HostIperf3Server

NAME = "qemu-ixgbe-test-ci-vm"
IXGBE_IDS = {"0x10f7", "0x10f8", "0x10f9", "0x10fb", "0x10fc", "0x1514", "0x1517", "0x151c",
             "0x1528", "0x1529", "0x154d"}
PCI_LIST = "for d in /sys/bus/pci/devices/*; do echo $(cat $d/vendor):$(cat $d/device):$(cat $d/class); done"
DRIVERS = {"ixgbe": "ixgbe", "igb": "igb", "virtio": "virtio_net"}


def port_up(text: str, ifname: str = "eth0", address: str = "10.0.2.15/24") -> bool:
    """`ip -br addr` shows the port UP with the address."""
    return re.search(r"^%s\s+UP\s+%s" % (ifname, re.escape(address)), text, re.MULTILINE) is not None


def leftovers(name: str, workdir: Path) -> List[str]:
    found = []
    if name in virsh("list", "--all", "--name").stdout.split():
        found.append("domain %s" % name)
    if workdir.exists():
        found.append("work directory %s" % workdir)
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if ("guest=%s," % name).encode() in cmdline.read_bytes():
                found.append("process %s" % cmdline.parent.name)
        except OSError:
            continue
    return found


def ci_vars(tmp_path: Path, qemu: Path, model: str, commands: List[str]) -> Dict[str, Any]:
    return {"test_vm_name": NAME, "test_vm_nic_model": model, "test_vm_emulator": str(qemu),
            "test_vm_commands": commands, "test_vm_workdir": str(tmp_path / "vm"),
            "test_vm_results_file": str(tmp_path / "results.json")}


BASIC_COMMANDS = ["uname -r", PCI_LIST, "ip -br addr show eth0", "ip route show default",
                  "ping -c 1 -W 10 10.0.2.2", "ethtool -i eth0"]


def assert_basic(run: PlaybookRun, results: Dict[str, Any], outputs: List[str],
                 model: str) -> None:
    """What BASIC_COMMANDS printed (outputs, in that order): the port of eth0 (a `model` NIC)
    up with its address and route, the host answering, the right driver and PCI IDs."""
    assert results["nic_model"] == model
    assert outputs[0].startswith("6.1.")
    # no setup lines: the driver is loaded and the port configured at boot
    assert port_up(outputs[2]), outputs[2]
    assert outputs[3].startswith("default via 10.0.2.2 dev eth0"), outputs[3]
    assert " 0% packet loss" in outputs[4], outputs[4]
    assert "driver: %s" % DRIVERS[model] in outputs[5], outputs[5]
    nics = [line.split(":") for line in outputs[1].split() if line.endswith(":0x020000")]
    assert nics, outputs[1]
    vendor, device, _cls = nics[0]
    assert vendor == "0x8086"
    if model == "ixgbe":
        assert device in IXGBE_IDS, device
    else:
        assert device == "0x10c9", device
    shown = run.task_results("Show what the commands printed")
    assert shown and outputs[1].strip() in json.dumps(shown[0]["msg"]).replace("\\n", "\n")


def test_ci_vm_runs_commands_and_cleans_up(tmp_path: Path, libvirtd: str, qemu_binary: Path,
                                           guest_image: Dict[str, Path]) -> None:
    """One igb NIC, everything else default. The same commands on an ixgbe NIC run in
    test_ci_vm_selections (its eth0), which boots a VM anyway; the defaults with ixgbe
    (the role's default model) are the README's example (test_readme_example)."""
    model = "igb"
    run = run_playbook("ci-vm.yml", extra_vars=ci_vars(tmp_path, qemu_binary, model,
                                                       BASIC_COMMANDS))
    assert run.rc == 0, run.failures() or run.stdout[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert all(r["rc"] == 0 for r in results["results"])
    assert_basic(run, results, [r["stdout"] for r in results["results"]], model)
    assert leftovers(NAME, tmp_path / "vm") == []


def test_ci_vm_tears_down_after_a_failing_command(tmp_path: Path, libvirtd: str,
                                                  qemu_binary: Path,
                                                  guest_image: Dict[str, Path]) -> None:
    run = run_playbook("ci-vm.yml", extra_vars=ci_vars(tmp_path, qemu_binary, "igb",
                                                       ["echo before", "exit 3", "echo never"]))
    assert run.rc != 0
    assert "exited 3" in " ".join(run.failures()), run.failures()
    assert not (tmp_path / "results.json").exists()
    destroyed = run.task_results("Destroy the domain")
    assert destroyed and destroyed[0]["changed"]
    assert leftovers(NAME, tmp_path / "vm") == []


def test_readme_example(libvirtd: str, qemu_binary: Path, guest_image: Dict[str, Path]) -> None:
    """The CI-VM command of playbooks/README.md, run as written from playbooks/."""
    readme = (PLAYBOOKS / "README.md").read_text()
    lines = [ln.strip() for ln in readme.splitlines()
             if "ansible-playbook ci-vm.yml" in ln and "test_vm_commands" in ln]
    assert len(lines) == 1, lines
    argv = shlex.split(lines[0])
    assert argv[0] == "../build/venv/bin/ansible-playbook", argv
    argv[0] = str(BUILD_DIR / "venv" / "bin" / "ansible-playbook")  # when BUILD_DIR is elsewhere
    env = dict(os.environ, BUILD_DIR=str(BUILD_DIR), ANSIBLE_NOCOLOR="1")
    for k in ("ANSIBLE_CONFIG", "ANSIBLE_STDOUT_CALLBACK"):
        env.pop(k, None)
    proc = subprocess.run(argv, cwd=str(PLAYBOOKS), check=False, capture_output=True, text=True,
                          timeout=900, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    shown = proc.stdout.split("Show what the commands printed", 1)[-1].replace("\\n", "\n")
    assert port_up(shown), proc.stdout[-2000:]
    assert leftovers("qemu-ixgbe-ci", Path("/var/lib/libvirt/qemu-ixgbe-test-vm/qemu-ixgbe-ci")) == []


def test_ci_vm_selections(tmp_path: Path, libvirtd: str, qemu_binary: Path,
                          guest_image: Dict[str, Path]) -> None:
    """Two NICs of different models, vCPUs, queues, an extra QEMU option,
    iperf3 to the host, logs kept; and the basic checks on its ixgbe eth0."""
    if not has_ixgbe(qemu_binary):
        pytest.fail("%s has no -device ixgbe" % qemu_binary)
    with HostIperf3Server(tmp_path) as server:
        extra = dict(ci_vars(tmp_path, qemu_binary, "ixgbe", BASIC_COMMANDS + [
            "cat /sys/class/dmi/id/product_serial", "nproc", "ip -br addr",
            "ethtool -l eth0", "ethtool -i eth1", "ping -c 1 -W 10 10.0.3.2",
            "iperf3 -c 10.0.2.2 -p %d -t 2" % server.port, "grep ^bogomips /proc/cpuinfo"]),
            test_vm_nics=[{"model": "ixgbe"}, {"model": "virtio"}], test_vm_vcpus=3,
            test_vm_nic_queues=2, test_vm_qemu_args=["-smbios", "type=1,serial=ci-vm-extra-arg"],
            test_vm_log_dir=str(tmp_path / "logs"))
        run = run_playbook("ci-vm.yml", extra_vars=extra)
    assert run.rc == 0, run.failures() or run.stdout[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert all(r["rc"] == 0 for r in results["results"])
    out = [r["stdout"] for r in results["results"]]
    assert_basic(run, results, out[:len(BASIC_COMMANDS)], "ixgbe")
    out = out[len(BASIC_COMMANDS):]
    assert out[0].strip() == "ci-vm-extra-arg"
    assert out[1].strip() == "3"
    assert port_up(out[2]) and port_up(out[2], "eth1", "10.0.3.15/24"), out[2]
    current = out[3].split("Current hardware settings:", 1)[1]
    assert re.search(r"Combined:\s+2$", current, re.MULTILINE), out[3]
    assert "driver: virtio_net" in out[4]
    assert " 0% packet loss" in out[5]
    assert re.search(r"sender$", out[6], re.MULTILINE), out[6]
    console = (tmp_path / "logs" / "console.log").read_text(errors="replace")
    assert "guest-net: eth0 (ixgbe) 10.0.2.15/24 default via 10.0.2.2" in console
    dmesg = (tmp_path / "logs" / "dmesg.log").read_text()
    assert "NIC Link is Up" in dmesg
    # every vCPU's delay loop at the TSC's rate (test_vm_delay_calibration)
    problem = delay_loop_problem(dmesg, out[7], 3)
    assert not problem, problem
    assert leftovers(NAME, tmp_path / "vm") == []


def test_ci_vm_boots_a_rebuilt_module(tmp_path: Path, libvirtd: str, qemu_binary: Path,
                                      guest_image: Dict[str, Path]) -> None:
    ko = patched_ixgbe()
    extra = dict(ci_vars(tmp_path, qemu_binary, "ixgbe",
                         ["dmesg | grep devloop:", "ip -br addr show eth0"]),
                 test_vm_module_files=[str(ko)], test_vm_log_dir=str(tmp_path / "logs"))
    run = run_playbook("ci-vm.yml", extra_vars=extra)
    assert run.rc == 0, run.failures() or run.stdout[-2000:]
    out = [r["stdout"] for r in json.loads((tmp_path / "results.json").read_text())["results"]]
    assert PROBE_MESSAGE in out[0]
    assert port_up(out[1]), out[1]
    overlay = run.task_results("Put your kernel's or rebuilt modules on top of the guest image")
    assert overlay[0]["replaced"] == ["kernel/drivers/net/ethernet/intel/ixgbe/ixgbe.ko"]
    assert PROBE_MESSAGE in (tmp_path / "logs" / "dmesg.log").read_text()
    assert leftovers(NAME, tmp_path / "vm") == []


def test_ci_vm_refuses_a_module_for_another_kernel(tmp_path: Path, libvirtd: str,
                                                   qemu_binary: Path,
                                                   guest_image: Dict[str, Path]) -> None:
    from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import guestimage
    other = BUILD_DIR / "guest" / "6.12" / "initrd.img"
    if not other.is_file():
        pytest.fail("%s missing: run scripts/build-guest.sh 6.12" % other)
    files = guestimage.read_initramfs(str(other))
    ko = tmp_path / "ixgbe.ko"
    ko.write_bytes(next(data for name, (_mode, data) in files.items() if name.endswith("/ixgbe.ko")))
    run = run_playbook("ci-vm.yml", extra_vars=dict(
        ci_vars(tmp_path, qemu_binary, "ixgbe", ["true"]), test_vm_module_files=[str(ko)]))
    assert run.rc != 0
    failures = " ".join(run.failures())
    assert "was built for kernel 6.12." in failures and "the guest kernel is 6.1." in failures, \
        failures
    assert run.task_results("Start the transient domain") == []
    assert leftovers(NAME, tmp_path / "vm") == []


def test_ci_vm_check_mode_starts_nothing(tmp_path: Path, libvirtd: str, qemu_binary: Path,
                                         guest_image: Dict[str, Path]) -> None:
    """--check validates the inputs (also a rebuilt module's vermagic) and starts no VM."""
    ko = patched_ixgbe()
    extra = dict(ci_vars(tmp_path, qemu_binary, "ixgbe", ["true"]),
                 test_vm_module_files=[str(ko)], test_vm_log_dir=str(tmp_path / "logs"))
    run = run_playbook("ci-vm.yml", extra_vars=extra, check=True)
    assert run.rc == 0, run.failures() or run.stdout[-2000:]
    overlay = run.task_results("Put your kernel's or rebuilt modules on top of the guest image")
    assert overlay[0]["release"].startswith("6.1.")
    started = run.task_results("Start the transient domain")
    assert started and started[0].get("skipped"), started
    assert not (tmp_path / "logs").exists()
    assert leftovers(NAME, tmp_path / "vm") == []
