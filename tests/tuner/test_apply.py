"""apply / verify / revert on copies of the fixture trees, checked byte for byte."""

from __future__ import annotations

import errno
import json
import os
import shutil
from typing import Callable, Dict, List

import pytest

from conftest import BUILT_TREES, Result, tree_hash
from nettune.ethtool import RecordedEthtool
from nettune.sysfs import Root

NT = Callable[..., Result]
TREE = Callable[[str], str]


def read(root: str, path: str) -> str:
    with open(root + path) as f:
        return f.read()


def ethtool_state(root: str) -> Dict[str, object]:
    with open(os.path.join(root, "ethtool.json")) as f:
        return json.load(f)["devices"]  # type: ignore[no-any-return]


def fail_writes_to(monkeypatch: pytest.MonkeyPatch, target: str, err: int) -> Callable[[Root, str, str], None]:
    """The kernel refusing writes to one file; returns the real Root.write."""
    real_write = Root.write

    def write(self: Root, path: str, data: str) -> None:
        if path == target:
            raise OSError(err, os.strerror(err), path)
        real_write(self, path, data)
    monkeypatch.setattr(Root, "write", write)
    return real_write


@pytest.mark.parametrize("name", BUILT_TREES)
@pytest.mark.parametrize("profile", ["throughput", "latency", "forwarding"])
def test_apply_verify_revert_restores_every_byte(name: str, profile: str, tree: TREE, nt: NT) -> None:
    root = tree(name)
    before = tree_hash(root)
    assert nt("--root", root, "verify", "-p", profile).rc == 1          # untuned: drift
    r = nt("--root", root, "apply", "-p", profile)
    assert r.rc == 0, r.err
    assert "changed " in r.out and os.path.exists(os.path.join(root, "var/lib/nettune/state.json"))
    assert tree_hash(root) != before
    v = nt("--root", root, "verify", "-p", profile)
    assert v.rc == 0, v.out
    again = nt("--root", root, "apply", "-p", profile)
    assert again.rc == 0 and "nothing to change" in again.out and "changed " not in again.out
    r = nt("--root", root, "revert")
    assert r.rc == 0, r.err
    assert tree_hash(root) == before          # every file, link and directory as it was
    assert not os.path.exists(os.path.join(root, "var"))


def test_apply_twice_changes_nothing_the_second_time(tree: TREE, nt: NT) -> None:
    root = tree("numa2-ixgbe")
    assert nt("--root", root, "apply").rc == 0
    after_first = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc == 0 and "nothing to change" in r.out
    assert tree_hash(root) == after_first     # not even the state file is rewritten


def test_applied_values_are_the_planned_ones(tree: TREE, nt: NT) -> None:
    root = tree("numa2-ixgbe")
    assert nt("--root", root, "apply", "-i", "eth0").rc == 0
    for q, cpu in enumerate((4, 5, 6, 7)):
        assert read(root, f"/proc/irq/{40 + q}/smp_affinity_list") == f"{cpu}\n"
        xps = Root(root).read(f"/sys/class/net/eth0/queues/tx-{q}/xps_cpus")
        assert xps == format(1 << cpu, "02x") + "\n"
    assert read(root, "/proc/irq/44/smp_affinity_list") == "4-7\n"   # link vector: node-local CPUs
    dev = ethtool_state(root)["eth0"]
    assert dev["pause"] == {"autoneg": False, "rx": False, "tx": False}   # type: ignore[index]
    assert dev["rings"]["current"]["rx"] == 4096                       # type: ignore[index]
    assert read(root, "/proc/sys/net/core/netdev_max_backlog") == "300000\n"
    with open(os.path.join(root, "services.json")) as f:
        assert json.load(f) == {"irqbalance": {"active": False}}
    eth1_irq = read(root, "/proc/irq/60/smp_affinity_list")
    assert eth1_irq == "0-7\n"                # -i eth0: the other NIC is left alone


def test_dry_run_changes_nothing(tree: TREE, nt: NT) -> None:
    root = tree("virtio-4q")
    before = tree_hash(root)
    r = nt("--root", root, "apply", "--dry-run")
    assert r.rc == 0
    assert "would change eth0 IRQ 25 virtio0-input.0: 0-3 -> 1" in r.out
    assert "[ethtool -L eth0 combined 3]" in r.out and "dry run:" in r.out
    assert tree_hash(root) == before


def test_failure_half_way_rolls_back_everything(tree: TREE, nt: NT) -> None:
    """The driver refuses the fourth ethtool change (as i40e refuses pause changes while link
    autonegotiation is on: EINVAL) after channels, rings and coalescing were changed."""
    root = tree("i40e-8q")
    state = os.path.join(root, "ethtool.json")
    with open(state) as f:
        data = json.load(f)
    data["devices"]["ens2f0"]["refuse"] = {"pause": "Invalid argument"}
    with open(state, "w") as f:
        f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    before = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc == 1
    assert "apply failed" in r.err and "Invalid argument" in r.err and "Restored the 3 setting(s)" in r.err
    for what in ("channels", "ring sizes", "interrupt coalescing"):
        assert f"changed ens2f0 {what}" in r.out and f"restored ens2f0 {what}" in r.out
    assert tree_hash(root) == before
    assert not os.path.exists(os.path.join(root, "var"))


def test_read_only_file_for_non_root_user(tmp_path: "os.PathLike[str]") -> None:
    """A real unprivileged run (setpriv to nobody) on a tree with one read-only file:
    refused with a clear message before any change, exit status 3."""
    import shutil
    import subprocess
    import tempfile
    from conftest import GUEST, TREES
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to switch to an unprivileged user")
    base = tempfile.mkdtemp(prefix="nettune-ro-")
    try:
        os.chmod(base, 0o755)
        root = os.path.join(base, "t")
        shutil.copytree(os.path.join(TREES, "ixgbe-4q"), root, symlinks=True)
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                os.lchown(os.path.join(dirpath, n), 65534, 65534)
        os.chown(root, 65534, 65534)
        os.chmod(root + "/proc/sys/net/core/wmem_max", 0o444)
        before = tree_hash(root)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               os.path.join(GUEST, "bin", "nettune"), "--root", root, "apply"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        assert proc.returncode == 3, proc.stderr
        assert "no permission to change: /proc/sys/net/core/wmem_max" in proc.stderr
        assert "Nothing was changed" in proc.stderr
        assert tree_hash(root) == before
    finally:
        shutil.rmtree(base)


def test_kernel_refusal_mid_way_rolls_back(tree: TREE, nt: NT, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel refusing a write (EIO, as for a managed IRQ) on the third IRQ."""
    root = tree("igb-4q")
    before = tree_hash(root)
    fail_writes_to(monkeypatch, "/proc/irq/26/smp_affinity_list", errno.EIO)
    r = nt("--root", root, "apply")
    assert r.rc == 1 and "Input/output error" in r.err and "/proc/irq/26" in r.err
    assert tree_hash(root) == before


def test_failure_keeps_earlier_applies(tree: TREE, nt: NT, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed second apply restores the state of the first, not the untuned one."""
    root = tree("ixgbe-4q")
    pristine = tree_hash(root)
    assert nt("--root", root, "apply", "-p", "throughput").rc == 0
    tuned = tree_hash(root)
    real_write = fail_writes_to(monkeypatch, "/proc/sys/net/core/busy_read", errno.EINVAL)
    r = nt("--root", root, "apply", "-p", "latency")
    assert r.rc == 1 and "busy_read" in r.err
    assert "changed eth0 ring sizes: rx 4096 tx 4096 -> rx 512 tx 512" in r.out
    assert tree_hash(root) == tuned
    monkeypatch.setattr(Root, "write", real_write)
    assert nt("--root", root, "revert").rc == 0
    assert tree_hash(root) == pristine


def test_revert_after_two_profiles_restores_the_original(tree: TREE, nt: NT) -> None:
    root = tree("i40e-8q")
    before = tree_hash(root)
    assert nt("--root", root, "apply", "-p", "latency").rc == 0
    assert nt("--root", root, "apply", "-p", "forwarding").rc == 0
    assert nt("--root", root, "verify", "-p", "forwarding").rc == 0
    assert nt("--root", root, "revert").rc == 0
    assert tree_hash(root) == before


def test_unknown_interface_and_bad_cpu_list_change_nothing(tree: TREE, nt: NT) -> None:
    root = tree("ixgbe-4q")
    before = tree_hash(root)
    r = nt("--root", root, "apply", "-i", "eth7")
    assert r.rc == 2 and "unknown interface eth7" in r.err
    r = nt("--root", root, "apply", "--cpus", "1-9")
    assert r.rc == 2 and "names CPU 4-9" in r.err
    r = nt("--root", root, "apply", "--housekeeping", "12")
    assert r.rc == 2 and "CPU 12" in r.err
    r = nt("--root", root, "apply", "--channels", "lots")
    assert r.rc == 2
    assert tree_hash(root) == before


def test_missing_privilege_live_system(nt: NT, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the live system a non-root caller is refused before anything is read or changed."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for cmd in (["apply"], ["revert"]):
        r = nt(*cmd)
        assert r.rc == 3 and "must run as root" in r.err and "Nothing was changed" in r.err


def test_unwritable_tree_is_refused_up_front(tree: TREE, nt: NT, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree("e1000e-1q")
    before = tree_hash(root)
    denied = root + "/proc/sys/net/core/netdev_budget"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **k: False if p == denied and m == os.W_OK
                        else real_access(p, m, **k))
    r = nt("--root", root, "apply")
    assert r.rc == 3 and "no permission to change" in r.err and "netdev_budget" in r.err
    assert tree_hash(root) == before


def test_verify_detects_drift(tree: TREE, nt: NT) -> None:
    root = tree("numa2-ixgbe")
    assert nt("--root", root, "apply").rc == 0
    with open(root + "/proc/irq/41/smp_affinity_list", "w") as f:
        f.write("0-7\n")
    state = os.path.join(root, "ethtool.json")
    with open(state) as f:
        data = json.load(f)
    data["devices"]["eth0"]["pause"]["rx"] = True
    with open(state, "w") as f:
        json.dump(data, f)
    r = nt("--root", root, "verify")
    assert r.rc == 1
    assert "DRIFT eth0 IRQ 41 eth0-TxRx-1: want 5, have 0-7" in r.out
    assert "DRIFT eth0 flow control" in r.out and "2 of" in r.out
    j = json.loads(nt("--root", root, "verify", "--json").out)
    assert j["ok"] is False and {d["key"] for d in j["drift"]} == {"irq:eth0:eth0-TxRx-1", "ethtool:eth0:pause"}


def test_driver_refusing_coalescing_is_skipped_not_fatal(tree: TREE, nt: NT) -> None:
    """virtio-net reports coalescing but refuses changes without VIRTIO_NET_F_NOTF_COAL."""
    root = tree("virtio-4q")
    before = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err
    assert "skipped eth0 interrupt coalescing: the driver does not support" in r.out
    assert nt("--root", root, "verify").rc == 0
    again = nt("--root", root, "apply")
    assert "nothing to change" in again.out and "skipped" not in again.out
    assert nt("--root", root, "revert").rc == 0
    assert tree_hash(root) == before


def test_irqbalance_ban_dropin_and_revert(tree: TREE, nt: NT) -> None:
    root = tree("igb-4q")
    before = tree_hash(root)
    r = nt("--root", root, "apply", "--irqbalance", "ban")
    assert r.rc == 0, r.err
    assert "systemctl try-restart irqbalance.service: recorded in the tree, not run" in r.out
    dropin = read(root, "/etc/systemd/system/irqbalance.service.d/90-nettune.conf")
    assert "--banirq=24 --banirq=25 --banirq=26 --banirq=28\n" in dropin   # queue 3 goes with channels 3
    with open(os.path.join(root, "services.json")) as f:
        assert json.load(f)["irqbalance"]["active"] is True     # ban keeps it running
    assert nt("--root", root, "verify", "--irqbalance", "ban").rc == 0
    assert nt("--root", root, "revert").rc == 0
    assert tree_hash(root) == before                            # created /etc/... dirs removed too


def test_revert_dry_run_and_nothing_to_revert(tree: TREE, nt: NT) -> None:
    root = tree("mlx5-8q")
    assert "nothing to revert" in nt("--root", root, "revert").out
    assert nt("--root", root, "apply").rc == 0
    tuned = tree_hash(root)
    r = nt("--root", root, "revert", "--dry-run")
    assert r.rc == 0 and "would restore enp59s0f0 channels: combined 8" in r.out
    assert tree_hash(root) == tuned


def test_state_file_records_previous_values(tree: TREE, nt: NT) -> None:
    root = tree("ixgbe-4q")
    assert nt("--root", root, "apply").rc == 0
    with open(os.path.join(root, "var/lib/nettune/state.json")) as f:
        state = json.load(f)
    by_id = {c["id"]: c for c in state["changes"]}
    assert by_id["irq:eth0:eth0-TxRx-0"]["previous"] == "0-3\n"
    assert by_id["irq:eth0:eth0-TxRx-0"]["irq_action"] == "eth0-TxRx-0"
    assert by_id["ethtool:eth0:rings"]["previous"] == {"rx": 512, "tx": 512}
    assert by_id["sysctl:/proc/sys/net/ipv4/tcp_rmem"]["previous"] == "4096\t131072\t6291456\n"
    ids = [c["id"] for c in state["changes"]]
    assert ids.index("ethtool:eth0:channels") < ids.index("irq:eth0:eth0-TxRx-0")


def test_state_file_outside_the_tree(tree: TREE, nt: NT, tmp_path: "os.PathLike[str]") -> None:
    root = tree("igb-4q")
    before = tree_hash(root)
    state = os.path.join(str(tmp_path), "st", "state.json")
    assert nt("--root", root, "--state", state, "apply").rc == 0
    assert os.path.exists(state) and not os.path.exists(os.path.join(root, "var"))
    assert nt("--root", root, "--state", state, "revert").rc == 0
    assert tree_hash(root) == before and not os.path.exists(state)


def test_config_file_in_the_tree_is_used(tree: TREE, nt: NT) -> None:
    root = tree("e1000e-1q")
    os.makedirs(os.path.join(root, "etc"))
    with open(os.path.join(root, "etc/nettune.conf"), "w") as f:
        f.write("[nettune]\nprofile = forwarding\nskip = irqbalance, rps\n")
    plan = json.loads(nt("--root", root, "plan", "--json").out)
    assert plan["profile"] == "forwarding"
    keys = {s["key"] for s in plan["settings"]}
    assert "sysctl:net.ipv4.ip_forward" in keys and "service:irqbalance" not in keys
    assert not any(k.startswith("rps:") for k in keys)


def test_discover_json_and_text(tree: TREE, nt: NT) -> None:
    root = tree("virtio-4q")
    j = json.loads(nt("--root", root, "discover", "--json").out)
    assert j["interfaces"]["eth0"]["virtio"] == "virtio0" and j["irqbalance_running"] is True
    text = nt("--root", root, "discover").out
    assert "IRQ 25    virtio0-input.0" in text and "irqbalance    running" in text


def test_bad_root(nt: NT, tmp_path: "os.PathLike[str]") -> None:
    assert nt("--root", os.path.join(str(tmp_path), "none"), "plan").rc == 2
    assert nt("--root", str(tmp_path), "plan").rc == 2


def test_missing_ok_skips_absent_configured_interfaces(tree: TREE, nt: NT) -> None:
    """The boot and hot-plug units use --missing-ok: a NIC that is not there yet is skipped."""
    root = tree("numa2-ixgbe")
    r = nt("--root", root, "apply", "-i", "eth0,eth5")
    assert r.rc == 2 and "unknown interface eth5" in r.err
    r = nt("--root", root, "apply", "-i", "eth0,eth5", "--missing-ok")
    assert r.rc == 0 and "eth5 not present; skipped" in r.out and "changed eth0 IRQ 40" in r.out
    r = nt("--root", root, "apply", "-i", "eth7", "--missing-ok")
    assert r.rc == 0 and "nothing to do" in r.out


IXGBE_QUEUES = "/sys/devices/pci0000:00/0000:00:02.0/net/eth0/queues"


@pytest.fixture
def requeueing_driver(monkeypatch: pytest.MonkeyPatch, tmp_path: "os.PathLike[str]") -> None:
    """`ethtool -L` on the ixgbe-4q tree behaves like the driver: it re-creates the queues,
    the ones above the new count vanish and every XPS mask is reset to the driver's default
    (ixgbe with ATR, virtio-net)."""
    stash = os.path.join(str(tmp_path), "stash")
    os.makedirs(stash)
    real_set = RecordedEthtool.set

    def driver_set(self: RecordedEthtool, dev: str, op: str, values: Dict[str, object]) -> List[str]:
        argv = real_set(self, dev, op, values)  # type: ignore[arg-type]
        if op == "channels":
            queues = os.path.dirname(self.path) + IXGBE_QUEUES
            n = int(values["combined"])  # type: ignore[call-overload]
            for q in range(4):
                for kind in ("rx", "tx"):
                    live, gone = f"{queues}/{kind}-{q}", f"{stash}/{kind}-{q}"
                    if q >= n and os.path.isdir(live):
                        shutil.move(live, gone)
                    elif q < n and not os.path.isdir(live):
                        shutil.move(gone, live)
                if q < n:
                    with open(f"{queues}/tx-{q}/xps_cpus", "w") as f:
                        f.write(f"{1 << q:x}\n")
        return argv
    monkeypatch.setattr(RecordedEthtool, "set", driver_set)


def operator_masks(root: str) -> None:
    for q in range(4):                      # the operator's own masks before nettune
        with open(f"{root}{IXGBE_QUEUES}/tx-{q}/xps_cpus", "w") as f:
            f.write("f\n")


def test_revert_after_a_channel_change_restores_masks_the_driver_reset(
        tree: TREE, nt: NT, requeueing_driver: None) -> None:
    """revert brings back the readings from before apply, also of the queue apply never wrote."""
    root = tree("ixgbe-4q")
    operator_masks(root)
    before = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err
    assert "changed eth0 channels: combined 4 -> combined 3" in r.out
    assert "recorded eth0 tx-3 XPS: f before the driver reset it to missing" in r.out
    assert not os.path.exists(f"{root}{IXGBE_QUEUES}/tx-3")
    assert read(root, "/sys/class/net/eth0/queues/tx-0/xps_cpus") == "2\n"   # CPU 1: CPU 0 keeps house
    assert nt("--root", root, "verify").rc == 0
    r = nt("--root", root, "revert")
    assert r.rc == 0, r.err
    assert r.out.index("restored eth0 channels") < r.out.index("restored eth0 tx-0 XPS")
    assert tree_hash(root) == before        # all four masks back to f, tx-3 included


def test_failed_apply_after_a_channel_change_restores_masks_the_driver_reset(
        tree: TREE, nt: NT, requeueing_driver: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for the rollback of an apply that fails after the channel change."""
    root = tree("ixgbe-4q")
    operator_masks(root)
    before = tree_hash(root)
    fail_writes_to(monkeypatch, "/proc/sys/net/core/netdev_budget", errno.EINVAL)
    r = nt("--root", root, "apply")
    assert r.rc == 1 and "netdev_budget" in r.err and "could not be restored" not in r.err
    assert "changed eth0 tx-0 XPS: 1 -> 2" in r.out          # the driver had reset it
    assert "restored eth0 tx-0 XPS: f" in r.out and "restored eth0 tx-3 XPS: f" in r.out
    assert tree_hash(root) == before


def test_revert_follows_irqs_renumbered_since_apply(tree: TREE, nt: NT) -> None:
    """After a reboot or driver reload the queue IRQs may have other numbers (modules load
    in parallel). revert finds each one by its name and restores its own previous value,
    and does not write onto whatever IRQ now has the old number."""
    root = tree("ixgbe-4q")
    for irq, cpus in ((24, "0-1"), (25, "2-3")):
        with open(f"{root}/proc/irq/{irq}/smp_affinity_list", "w") as f:
            f.write(cpus + "\n")
    assert nt("--root", root, "apply").rc == 0
    path = root + "/proc/interrupts"
    with open(path) as f:
        text = f.read()
    # eth0-TxRx-0 and eth0-TxRx-1 swap numbers, as after a reload in another order
    text = text.replace("eth0-TxRx-0", "@").replace("eth0-TxRx-1", "eth0-TxRx-0").replace("@", "eth0-TxRx-1")
    with open(path, "w") as f:
        f.write(text)
    r = nt("--root", root, "revert")
    assert r.rc == 0, r.err
    assert "restored eth0 IRQ 24 eth0-TxRx-0 (now IRQ 25): 0-1" in r.out
    assert read(root, "/proc/irq/25/smp_affinity_list") == "0-1\n"   # eth0-TxRx-0's own value
    assert read(root, "/proc/irq/24/smp_affinity_list") == "2-3\n"   # eth0-TxRx-1's own value
