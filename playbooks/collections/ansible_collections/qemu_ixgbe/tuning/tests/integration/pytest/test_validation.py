"""Bad inputs fail clearly, before anything changes; 2-node plans land in a real libvirtd."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from harness import PLAYBOOKS, ansible_env, run_playbook, tool, virsh, write_inventory
from domains import define, domain_xml, remove_domain

from ansible_collections.qemu_ixgbe.tuning.tests.unit.topologies import (two_node_topology,
                                                                         write_sysfs_tree)

NAME = "qemu-ixgbe-test-validate"


@pytest.fixture(scope="module")
def dom(libvirtd: str, qemu_binary: Path, guest_image: Dict[str, Path]) -> Iterator[Dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="qi-validate-", dir="/tmp"))
    define(domain_xml(NAME, qemu_binary, guest_image, work / "console.sock"), work, NAME)
    yield {"work": work}
    remove_domain(NAME)
    shutil.rmtree(work, ignore_errors=True)


def base_vars(work: Path) -> Dict[str, Any]:
    return {"kvm_host_vhost_net": "skip",
            "vhost_pinning_config_dir": str(work / "vhost-pinning"),
            "vhost_pinning_helper": str(work / "vhost-pin"),
            "vhost_pinning_hook_dir": str(work / "hooks"),
            "vhost_pinning_libvirtd_restart_command": "true"}


def run_with(work: Path, name: str, hostvars: Dict[str, Any], **kw: Any):
    inv = write_inventory(work / ("%s.json" % name), dict(base_vars(work), **hostvars))
    return run_playbook("site.yml", inv, **kw)


def assert_unchanged_and_failed(run, before: str, message: str) -> None:
    assert run.rc != 0
    text = " ".join(run.failures()) + run.stdout
    assert message in text, run.failures()
    assert run.host()["changed"] == 0, run.changed_tasks()
    assert virsh("dumpxml", "--inactive", NAME).stdout == before


def test_unknown_host_nic(dom: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_with(dom["work"], "nic", {
        "kvm_host_nic": "nonexistent0",
        "kvm_domains": [{"name": NAME, "vcpus": 1, "cpu_mode": "custom",
                         "cpu_model": "Haswell-noTSX"}]})
    assert_unchanged_and_failed(run, before, "unknown host NIC(s): nonexistent0")


def test_more_vcpus_than_the_node_has(dom: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_with(dom["work"], "vcpus", {
        "kvm_domains": [{"name": NAME, "vcpus": 64, "numa_node": 0, "cpu_mode": "custom",
                         "cpu_model": "Haswell-noTSX"}]})
    assert_unchanged_and_failed(run, before, "64 vCPUs requested but NUMA node 0 has only")


def test_unknown_domain(dom: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_with(dom["work"], "domain", {
        "kvm_domains": [{"name": "no-such-domain", "vcpus": 1, "numa_node": 0,
                         "cpu_mode": "custom", "cpu_model": "Haswell-noTSX"}]})
    assert_unchanged_and_failed(run, before, "unknown domain 'no-such-domain'")


def test_cpu_model_without_rep_good_is_refused(dom: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_with(dom["work"], "model", {
        "kvm_domains": [{"name": NAME, "vcpus": 1, "numa_node": 0, "cpu_mode": "custom",
                         "cpu_model": "kvm64"}]})
    assert_unchanged_and_failed(run, before, "will not set rep_good")


def test_wrongly_typed_argument(dom: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_with(dom["work"], "type", {
        "kvm_domains": [{"name": NAME, "vcpus": "many", "numa_node": 0}]})
    assert_unchanged_and_failed(run, before, "libvirt_domain_vcpus")


def test_bad_interface_is_refused(dom: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_with(dom["work"], "iface", {
        "kvm_domains": [{"name": NAME, "vcpus": 1, "numa_node": 0, "cpu_mode": "custom",
                         "cpu_model": "Haswell-noTSX",
                         "interfaces": [{"mac": "52:54:00:00:00:01", "model": "virtio",
                                         "type": "user", "queues": 4}]}]})
    assert_unchanged_and_failed(run, before, "multiqueue needs a tap backend")


def test_two_node_fixture_plan_lands_in_libvirt(dom: Dict[str, Any]) -> None:
    """A 2-node topology given as input: the domain is planned onto the NIC's node 1."""
    run = run_with(dom["work"], "two-node", {
        "kvm_domains": [{
            "name": NAME, "vcpus": 3, "host_nic": "ens1f0", "iothreads": 1,
            "topology": two_node_topology(), "cpu_mode": "custom", "cpu_model": "EPYC-Rome",
            "cpu_features": ["erms", "fsrm"],
            "interfaces": [
                {"mac": "52:54:00:52:00:01", "model": "virtio", "type": "network",
                 "source": {"network": "default"}, "queues": 4},
                {"mac": "52:54:00:52:00:02", "type": "vhostuser",
                 "source": {"path": "/run/vhost-user/vm0.sock", "mode": "client"},
                 "queues": 2}],
            "vhost_pinning": False}]})
    assert run.rc == 0, run.failures()
    root = ET.fromstring(virsh("dumpxml", "--inactive", NAME).stdout)
    assert {e.get("vcpu"): e.get("cpuset") for e in root.findall("cputune/vcpupin")} == \
        {"0": "4", "1": "5", "2": "6"}
    assert root.find("cputune/emulatorpin").get("cpuset") == "7"
    assert root.find("cputune/iothreadpin").attrib == {"iothread": "1", "cpuset": "15"}
    assert root.find("numatune/memory").attrib == {"mode": "strict", "nodeset": "1"}
    assert root.findtext("cpu/model") == "EPYC-Rome"
    ifaces = {i.find("mac").get("address"): i for i in root.findall("devices/interface")}
    virtio = ifaces["52:54:00:52:00:01"]
    assert virtio.find("driver").get("name") == "vhost"
    assert virtio.find("driver").get("queues") == "4"
    vhu = ifaces["52:54:00:52:00:02"]
    assert vhu.get("type") == "vhostuser"
    assert vhu.find("source").get("path") == "/run/vhost-user/vm0.sock"
    mb = root.find("memoryBacking")
    assert mb.find("hugepages") is not None and mb.find("access").get("mode") == "shared"


def test_host_topology_reads_a_two_node_tree(tmp_path: Path) -> None:
    tree = write_sysfs_tree(tmp_path / "root", two_node_topology())
    playbook = tmp_path / "topo.yml"
    playbook.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - qemu_ixgbe.tuning.host_topology:\n        root: %s\n        nics: [ens1f0]\n"
        "      register: t\n"
        "    - ansible.builtin.copy:\n        content: '{{ t.topology | to_json }}'\n"
        "        dest: %s\n        mode: '0644'\n" % (tree, tmp_path / "out.json"))
    proc = subprocess.run([tool("ansible-playbook"), str(playbook)], cwd=str(PLAYBOOKS),
                          check=False, capture_output=True, text=True, env=ansible_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    topo = json.loads((tmp_path / "out.json").read_text())
    assert topo["nodes"]["1"]["cpus"] == [4, 5, 6, 7, 12, 13, 14, 15]
    assert topo["nics"]["ens1f0"] == {"numa_node": 1, "driver": "ixgbe", "physical": True}
    assert topo["nics"]["lo"]["numa_node"] is None
    assert topo["cpus"]["4"]["siblings"] == [4, 12]
    assert topo["cpu"]["vendor"] == "GenuineIntel" and topo["cpu"]["family"] == 6
