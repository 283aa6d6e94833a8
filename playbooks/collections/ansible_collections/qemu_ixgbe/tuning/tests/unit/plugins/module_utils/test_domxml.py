"""Domain XML transformation: the plan lands where libvirt reads it, and only once."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import domxml
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.topology import PlanError

BASE = """<domain type='qemu'>
  <name>vm1</name>
  <memory unit='KiB'>524288</memory>
  <vcpu placement='static'>1</vcpu>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <interface type='user'>
      <mac address='52:54:00:aa:bb:01'/>
      <model type='e1000e'/>
      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>
    </interface>
  </devices>
</domain>"""

PLAN = {
    "vcpus": 2,
    "vcpupin": {"0": "4", "1": "5"},
    "emulatorpin": "7",
    "iothreads": 1,
    "iothreadpin": {"1": "15"},
    "numatune": {"mode": "strict", "nodeset": "1"},
    "cpu": {"mode": "custom", "model": "Haswell-noTSX", "features": ["erms", "fsrm"]},
    "emulator": "/opt/qemu/bin/qemu-system-x86_64",
    "interfaces": [
        {"mac": "52:54:00:AA:BB:01", "model": "ixgbe", "type": "user"},
        {"mac": "52:54:00:aa:bb:02", "model": "virtio", "type": "network", "queues": 4},
    ],
}


def test_plan_lands_in_the_xml() -> None:
    new, changes = domxml.apply_plan(BASE, PLAN)
    assert changes
    root = ET.fromstring(new)
    assert root.findtext("vcpu") == "2"
    pins = {e.get("vcpu"): e.get("cpuset") for e in root.findall("cputune/vcpupin")}
    assert pins == {"0": "4", "1": "5"}
    assert root.find("cputune/emulatorpin").get("cpuset") == "7"
    assert root.find("cputune/iothreadpin").attrib == {"iothread": "1", "cpuset": "15"}
    assert root.findtext("iothreads") == "1"
    assert root.find("numatune/memory").attrib == {"mode": "strict", "nodeset": "1"}
    cpu = root.find("cpu")
    assert cpu.get("mode") == "custom" and cpu.findtext("model") == "Haswell-noTSX"
    assert {f.get("name"): f.get("policy") for f in cpu.findall("feature")} == \
        {"erms": "require", "fsrm": "require"}
    assert root.findtext("devices/emulator") == "/opt/qemu/bin/qemu-system-x86_64"
    ifaces = root.findall("devices/interface")
    assert len(ifaces) == 2
    first = ifaces[0]
    assert first.find("model").get("type") == "ixgbe"
    assert first.find("rom").get("enabled") == "no"
    # the PCI address of the existing interface is kept
    assert first.find("address").get("bus") == "0x01"
    second = ifaces[1]
    assert second.get("type") == "network"
    assert second.find("source").get("network") == "default"
    assert second.find("driver").attrib == {"name": "vhost", "queues": "4"}


def test_second_application_changes_nothing() -> None:
    new, _changes = domxml.apply_plan(BASE, PLAN)
    again, changes = domxml.apply_plan(new, PLAN)
    assert changes == []
    assert again == new


def test_equal_cpu_lists_in_other_spelling_are_no_change() -> None:
    new, _changes = domxml.apply_plan(BASE, {"vcpus": 1, "vcpupin": {"0": "4-5"}, "emulatorpin": "6,7"})
    respelled = new.replace("cpuset=\"4-5\"", "cpuset=\"4,5\"").replace("\"6,7\"", "\"6-7\"")
    _new, changes = domxml.apply_plan(respelled, {"vcpus": 1, "vcpupin": {"0": "4-5"},
                                                  "emulatorpin": "6-7"})
    assert changes == []


def test_fewer_vcpus_drop_stale_pins() -> None:
    new, _changes = domxml.apply_plan(BASE, PLAN)
    smaller, changes = domxml.apply_plan(new, {"vcpus": 1, "vcpupin": {"0": "4"}})
    root = ET.fromstring(smaller)
    assert [e.get("vcpu") for e in root.findall("cputune/vcpupin")] == ["0"]
    assert any("removed" in c for c in changes)


def test_vhost_user_interface_and_shared_memory() -> None:
    plan = {"memory_backing": "hugepages",
            "interfaces": [{"mac": "52:54:00:aa:bb:03", "type": "vhostuser",
                            "source": {"path": "/run/vhu0.sock", "mode": "server"},
                            "queues": 2}]}
    new, _changes = domxml.apply_plan(BASE, plan)
    root = ET.fromstring(new)
    mb = root.find("memoryBacking")
    assert mb.find("hugepages") is not None and mb.find("access").get("mode") == "shared"
    iface = [i for i in root.findall("devices/interface") if i.get("type") == "vhostuser"][0]
    assert iface.find("source").attrib == {"mode": "server", "path": "/run/vhu0.sock",
                                           "type": "unix"}
    assert iface.find("driver").attrib == {"queues": "2"}
    _new, changes = domxml.apply_plan(new, plan)
    assert changes == []
    memfd, changes = domxml.apply_plan(new, {"memory_backing": "memfd"})
    assert ET.fromstring(memfd).find("memoryBacking/source").get("type") == "memfd"


def test_exclusive_interfaces_remove_others() -> None:
    plan = {"interfaces": [{"mac": "52:54:00:aa:bb:09", "model": "virtio", "vhost": False}],
            "interfaces_exclusive": True}
    new, changes = domxml.apply_plan(BASE, plan)
    macs = [i.find("mac").get("address") for i in ET.fromstring(new).findall("devices/interface")]
    assert macs == ["52:54:00:aa:bb:09"]
    assert "interface 52:54:00:aa:bb:01: removed" in changes


@pytest.mark.parametrize("spec,message", [
    ({"mac": "nope"}, "needs a MAC address"),
    ({"mac": "52:54:00:00:00:01", "model": "rtl8139"}, "model must be one of"),
    ({"mac": "52:54:00:00:00:01", "type": "vhostuser"}, "needs source.path"),
    ({"mac": "52:54:00:00:00:01", "model": "ixgbe", "queues": 4}, "queues apply to virtio"),
    ({"mac": "52:54:00:00:00:01", "type": "bridge"}, "needs source.bridge"),
])
def test_bad_interfaces_fail_clearly(spec: dict, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        domxml.apply_plan(BASE, {"interfaces": [spec]})


def test_pins_beyond_the_vcpu_count_fail() -> None:
    with pytest.raises(PlanError, match="vcpupin for vCPU 3"):
        domxml.apply_plan(BASE, {"vcpus": 2, "vcpupin": {"3": "1"}})


def test_read_pins() -> None:
    new, _changes = domxml.apply_plan(BASE, PLAN)
    pins = domxml.read_pins(new)
    assert pins["vcpus"] == 2 and pins["vcpupin"] == {"0": "4", "1": "5"}
    assert pins["emulatorpin"] == "7" and pins["numatune"] == {"mode": "strict", "nodeset": "1"}
