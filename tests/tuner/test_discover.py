"""Discovery on the fixture trees: drivers, queues, IRQ names, NUMA, irqbalance, CPU flags."""

from __future__ import annotations

import os

from conftest import TREES
from nettune.discover import Facts, default_interfaces, discover, parse_interrupts
from nettune.plan import sysctl_names
from nettune.profiles import Config
from nettune.ethtool import RecordedEthtool
from nettune.services import RecordedServices
from nettune.sysfs import Root


def facts_of(name: str) -> Facts:
    path = os.path.join(TREES, name)
    root = Root(path)
    return discover(root, RecordedEthtool(os.path.join(path, "ethtool.json")),
                    RecordedServices(os.path.join(path, "services.json")),
                    sysctls=sysctl_names(Config(), default_interfaces(root)))


def test_ixgbe_txrx_vectors_and_link_vector() -> None:
    f = facts_of("ixgbe-4q")
    eth0 = f.interfaces["eth0"]
    assert eth0.driver == "ixgbe" and eth0.bus_info == "0000:00:02.0" and eth0.numa_node is None
    assert [(q.irq, q.kind, q.queue) for q in eth0.queue_irqs] == [(24, "txrx", 0), (25, "txrx", 1),
                                                                  (26, "txrx", 2), (27, "txrx", 3)]
    assert [(o.irq, o.name) for o in eth0.other_irqs] == [(28, "eth0")]
    assert eth0.rx_queues == eth0.tx_queues == 4
    assert eth0.ethtool is not None and eth0.ethtool.channels is not None
    assert f.online_cpus == [0, 1, 2, 3] and not f.irqbalance_running
    assert not f.interfaces["lo"].has_device


def test_virtio_maps_virtioN_to_the_netdev() -> None:
    f = facts_of("virtio-4q")
    eth0 = f.interfaces["eth0"]
    assert eth0.virtio == "virtio0" and eth0.driver == "virtio_net" and eth0.bus_info == "0000:00:03.0"
    pairs = {(q.queue, q.kind): q.name for q in eth0.queue_irqs}
    assert pairs[(0, "rx")] == "virtio0-input.0" and pairs[(3, "tx")] == "virtio0-output.3"
    assert len(eth0.queue_irqs) == 8
    assert [o.name for o in eth0.other_irqs] == ["virtio0-config"]
    assert f.irqbalance_running


def test_e1000e_split_vectors_single_queue() -> None:
    eth0 = facts_of("e1000e-1q").interfaces["eth0"]
    assert {(q.name, q.kind, q.queue) for q in eth0.queue_irqs} == {("eth0-rx-0", "rx", 0), ("eth0-tx-0", "tx", 0)}
    assert eth0.ethtool is not None and eth0.ethtool.channels is None


def test_i40e_and_mlx5_naming() -> None:
    i40e = facts_of("i40e-8q").interfaces["ens2f0"]
    assert [q.name for q in i40e.queue_irqs][:2] == ["i40e-ens2f0-TxRx-0", "i40e-ens2f0-TxRx-1"]
    assert [o.name for o in i40e.other_irqs] == ["i40e-0000:01:00.0:misc"]
    mlx = facts_of("mlx5-8q").interfaces["enp59s0f0"]
    assert [q.queue for q in mlx.queue_irqs] == list(range(8))
    assert [o.name for o in mlx.other_irqs] == ["mlx5_async0@pci:0000:3b:00.0"]
    assert mlx.numa_node == 0


def test_two_nodes_and_nic_node_through_root_port() -> None:
    f = facts_of("numa2-ixgbe")
    assert f.nodes == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    assert f.interfaces["eth0"].numa_node == 1 and f.interfaces["eth1"].numa_node == 0
    assert f.cpu_node(5) == 1


def test_cpu_flags_and_host_side_advice() -> None:
    qemu = facts_of("ixgbe-4q").cpu_flags
    assert qemu.present == {"rep_good": False, "erms": False, "fsrm": False} and qemu.hypervisor
    assert "host-passthrough" in qemu.advice["rep_good"] and "+erms" in qemu.advice["erms"]
    assert "generic" in qemu.advice["rep_good"]
    haswell = facts_of("igb-4q").cpu_flags
    assert haswell.present == {"rep_good": True, "erms": True, "fsrm": False}
    assert set(haswell.advice) == {"fsrm"} and "+fsrm" in haswell.advice["fsrm"]
    assert facts_of("i40e-8q").cpu_flags.advice == {}


def test_nohz_null_and_isolated() -> None:
    f = facts_of("igb-4q")
    assert f.nohz_full == [] and f.isolated == []


def test_parse_interrupts_shared_and_spaced_rows() -> None:
    text = ("           CPU0       CPU1\n"
            "  0:         45          0   IO-APIC   2-edge      timer\n"
            " 18:          0         64   IO-APIC  18-fasteoi   ehci_hcd:usb3, ehci_hcd:usb4, i801_smbus\n"
            " 38:          0       8466 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
            "NMI:          0          0   Non-maskable interrupts\n"
            "ERR:          0\n")
    rows = dict(parse_interrupts(text))
    assert rows[0] == ["timer"]
    assert rows[18] == ["ehci_hcd:usb3", "ehci_hcd:usb4", "i801_smbus"]
    assert rows[38] == ["virtio2-input.0"]
    assert set(rows) == {0, 18, 38}


def test_discover_reads_nothing_outside_the_tree(tmp_path: "os.PathLike[str]") -> None:
    # The same facts from two copies: discovery depends only on the tree.
    import shutil
    a = os.path.join(str(tmp_path), "a")
    shutil.copytree(os.path.join(TREES, "numa2-ixgbe"), a, symlinks=True)
    fa = discover(Root(a), RecordedEthtool(os.path.join(a, "ethtool.json")),
                  RecordedServices(os.path.join(a, "services.json")),
                  sysctls=sysctl_names(Config(), ["eth0", "eth1"])).to_json()
    assert fa == facts_of("numa2-ixgbe").to_json()
