"""ci-vm.yml: a throwaway VM with an emulated Intel NIC runs commands and leaves nothing behind."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import has_ixgbe, run_playbook, virsh

NAME = "qemu-ixgbe-test-ci-vm"
IXGBE_IDS = {"0x10f7", "0x10f8", "0x10f9", "0x10fb", "0x10fc", "0x1514", "0x1517", "0x151c",
             "0x1528", "0x1529", "0x154d"}
PCI_LIST = "for d in /sys/bus/pci/devices/*; do echo $(cat $d/vendor):$(cat $d/device):$(cat $d/class); done"


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


@pytest.mark.parametrize("model", ["ixgbe", "igb"])
def test_ci_vm_runs_commands_and_cleans_up(model: str, tmp_path: Path, libvirtd: str,
                                           qemu_binary: Path, guest_image: Dict[str, Path]) -> None:
    if model == "ixgbe" and not has_ixgbe(qemu_binary):
        pytest.skip("%s has no -device ixgbe yet (device model not built in)" % qemu_binary)
    run = run_playbook("ci-vm.yml", extra_vars=ci_vars(tmp_path, qemu_binary, model,
                                                       ["uname -r", PCI_LIST]))
    assert run.rc == 0, run.failures() or run.stdout[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["nic_model"] == model
    outputs = [r["stdout"] for r in results["results"]]
    assert all(r["rc"] == 0 for r in results["results"])
    assert outputs[0].startswith("6.1.")
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
