"""qemu_package on this host, for real: the package scripts/package.sh builds,
installed with the role from a .deb (check mode first, then idempotent),
probed by libvirtd (domcapabilities), run by libvirtd under its stock
security drivers in a TCG domain naming /usr/bin/qemu-system-x86_64-ixgbe with
an ixgbe interface whose link comes up in the guest, chosen by default by
test_vm and libvirt_domain; then purged, Debian's firmware packages as they
were. Bad packages (another architecture, a dependency no source has) are
refused before anything is installed.

The host is changed only under the package's own paths (/usr/lib/qemu-ixgbe,
/usr/share/qemu-ixgbe, /usr/share/doc/qemu-ixgbe, /usr/bin/qemu-system-x86_64-ixgbe,
two AppArmor abstractions and one line in each of libvirt's two site-local
AppArmor files); every Depends is already installed here (seabios,
qemu-system-data, ipxe-qemu, the libraries of the project's QEMU build), so apt
installs nothing else. The module purges the package at its end, also after a
failure. The tests run in file order."""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from harness import REPO, run_playbook, virsh, write_inventory
from domains import domain_xml, guest_run, remove_domain

PKG = "qemu-ixgbe"
BINARY = "/usr/lib/qemu-ixgbe/qemu-system-x86_64"
WRAPPER = "/usr/bin/qemu-system-x86_64-ixgbe"
NAME = "qemu-ixgbe-test-pkg"
TUNE_NAME = "qemu-ixgbe-test-pkg-tune"
WORK = Path("/var/lib/libvirt/%s" % NAME)            # console socket
IMAGES = Path("/var/lib/libvirt/images/%s" % NAME)   # kernel and initrd, relabelled by libvirt
DEBIAN_FIRMWARE = ["seabios", "qemu-system-data", "ipxe-qemu"]
# libvirt's site-local AppArmor files, which the package's postinst adds a line to.
AA_LOCAL = ["/etc/apparmor.d/local/abstractions/libvirt-qemu", "/etc/apparmor.d/local/usr.sbin.libvirtd"]


def installed_version() -> str:
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Status} ${Version}", PKG], capture_output=True,
                       text=True, check=False)
    return r.stdout.split()[-1] if r.returncode == 0 and r.stdout.startswith("install ok installed") else ""


def purge() -> None:
    subprocess.run(["dpkg", "--purge", PKG], capture_output=True, check=False, timeout=300)


def dpkg_verify(packages: list) -> str:
    return subprocess.run(["dpkg", "--verify"] + packages, capture_output=True, text=True,
                          check=False).stdout


def repack(deb: Path, dest: Path, **fields: str) -> Path:
    """The package with control fields replaced, e.g. Architecture="arm64"."""
    tree = dest / ("tree-%s" % "-".join(fields))
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    text = control.read_text()
    for name, value in fields.items():
        text = re.sub(r"^%s: .*$" % name, "%s: %s" % (name, value), text, flags=re.M)
    control.write_text(text)
    out = dest / ("%s_%s.deb" % (PKG, "-".join(fields)))
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(tree), str(out)],
                   check=True, capture_output=True)
    shutil.rmtree(tree)
    return out


@pytest.fixture(scope="module")
def deb(tmp_path_factory: pytest.TempPathFactory, qemu_binary: Path) -> Path:
    out = tmp_path_factory.mktemp("pkg")
    r = subprocess.run(["bash", str(REPO / "scripts" / "package.sh"), "--output", str(out)],
                       capture_output=True, text=True, check=False, timeout=600)
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def pkg_env(libvirtd: str, deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    if installed_version():
        pytest.fail("%s is installed on this host already: the test installs and purges it itself; "
                    "purge it first (dpkg --purge %s)" % (PKG, PKG))
    work = tmp_path_factory.mktemp("qemu-package")
    firmware = dpkg_verify(DEBIAN_FIRMWARE)
    yield {"work": work, "deb": deb, "firmware": firmware,
           "aa_local": {f: Path(f).exists() for f in AA_LOCAL}}
    for name in (NAME, TUNE_NAME):
        remove_domain(name)
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.rmtree(IMAGES, ignore_errors=True)
    purge()
    shutil.rmtree("/var/cache/qemu-ixgbe", ignore_errors=True)
    Path("/etc/apt/sources.list.d/qemu_ixgbe.list").unlink(missing_ok=True)


@pytest.fixture
def libvirt_up(pkg_env: Dict[str, Any]) -> None:
    """libvirtd answering now: the host's libvirtd is shared, and another
    session's end may have stopped the one the module started."""
    r = subprocess.run([str(REPO / "scripts" / "libvirtd.sh"), "start"], capture_output=True, text=True,
                       check=False, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr


def role(env: Dict[str, Any], name: str, check: bool = False, **hostvars: Any):
    inv = write_inventory(env["work"] / ("%s.json" % name),
                          dict({"qemu_package_cache_dir": str(env["work"] / "cache")}, **hostvars))
    return run_playbook("qemu-package.yml", inv, check=check, diff=check)


# ----------------------------------------------------------- bad input --

def test_package_for_another_architecture_is_refused(pkg_env: Dict[str, Any]) -> None:
    other = repack(pkg_env["deb"], pkg_env["work"], Architecture="arm64")
    run = role(pkg_env, "arch", qemu_package_deb=str(other))
    assert run.rc != 0
    assert any("built for arm64, but this host is amd64" in f for f in run.failures()), run.failures()
    assert not installed_version()


def test_missing_dependency_is_refused(pkg_env: Dict[str, Any]) -> None:
    depends = subprocess.run(["dpkg-deb", "-f", str(pkg_env["deb"]), "Depends"], capture_output=True,
                             text=True, check=True).stdout.strip()
    broken = repack(pkg_env["deb"], pkg_env["work"], Depends=depends + ", qemu-ixgbe-no-such-dependency")
    run = role(pkg_env, "dep", qemu_package_deb=str(broken))
    assert run.rc != 0
    assert any("qemu-ixgbe-no-such-dependency" in f for f in run.failures()), run.failures()
    assert not installed_version()


def test_no_source_is_refused(pkg_env: Dict[str, Any]) -> None:
    run = role(pkg_env, "none")
    assert run.rc != 0
    assert any("set exactly one of qemu_package_deb" in f for f in run.failures()), run.failures()


# -------------------------------------------------------------- install --

def test_check_mode_installs_nothing(pkg_env: Dict[str, Any]) -> None:
    run = role(pkg_env, "check", check=True, qemu_package_deb=str(pkg_env["deb"]))
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] > 0, "check mode reported nothing to do on a host without the package"
    assert not installed_version() and not Path(BINARY).exists()
    assert not (pkg_env["work"] / "cache" / pkg_env["deb"].name).exists()


def test_install(pkg_env: Dict[str, Any]) -> None:
    run = role(pkg_env, "install", qemu_package_deb=str(pkg_env["deb"]))
    assert run.rc == 0, run.failures()
    version = subprocess.run(["dpkg-deb", "-f", str(pkg_env["deb"]), "Version"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert installed_version() == version
    verified = run.task_results("Fail when the installed binary lacks the device")
    assert verified and not verified[0].get("skipped"), verified
    out = subprocess.run([WRAPPER, "-nodefaults", "-machine", "none", "-device", "ixgbe,help"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert "romfile=" in out, out


def test_second_run_changes_nothing(pkg_env: Dict[str, Any]) -> None:
    run = role(pkg_env, "again", qemu_package_deb=str(pkg_env["deb"]))
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] == 0, run.changed_tasks()


# -------------------------------------------------------------- libvirt --

@pytest.mark.usefixtures("libvirt_up")
def test_domcapabilities(pkg_env: Dict[str, Any]) -> None:
    """libvirtd probes the installed binary (by the /usr/bin name)."""
    out = virsh("domcapabilities", "--emulatorbin", WRAPPER, "--virttype", "qemu", "--machine", "q35").stdout
    caps = ET.fromstring(out)
    assert caps.findtext("path") == WRAPPER, out
    assert caps.findtext("domain") == "qemu" and "q35" in caps.findtext("machine", ""), out
    assert caps.find("devices") is not None, out


def stock_domain_xml(image: Dict[str, Path], name: str = NAME, emulator: Path = Path(WRAPPER)) -> str:
    """A domain of the installed emulator: libvirt's default security
    labelling and the binary's own firmware search (domains.domain_xml)."""
    return domain_xml(name, emulator, image, WORK / "console.sock", stock=True, nic_model="ixgbe",
                      cmdline="guest.net=dhcp")


@pytest.mark.usefixtures("libvirt_up")
def test_domain_runs_under_the_stock_security_drivers(
        pkg_env: Dict[str, Any], guest_image: Dict[str, Path]) -> None:
    models = [m.text for m in ET.fromstring(virsh("capabilities").stdout).findall("host/secmodel/model")]
    assert "dac" in models, models
    apparmor = Path("/sys/module/apparmor/parameters/enabled")
    if apparmor.exists() and apparmor.read_text().strip() == "Y":
        assert "apparmor" in models, models
    IMAGES.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    image = {}
    for key, f in guest_image.items():
        image[key] = IMAGES / f.name
        shutil.copyfile(f, image[key])
        os.chmod(image[key], 0o644)
    xml = pkg_env["work"] / ("%s.xml" % NAME)
    xml.write_text(stock_domain_xml(image))
    remove_domain(NAME)
    virsh("define", str(xml))
    virsh("start", NAME)
    try:
        pid = int(Path("/run/libvirt/qemu/%s.pid" % NAME).read_text().strip())
        assert os.path.realpath("/proc/%d/exe" % pid) == BINARY
        uid = int(re.search(r"^Uid:\s+(\d+)", Path("/proc/%d/status" % pid).read_text(), re.M).group(1))
        assert uid == pwd.getpwnam("libvirt-qemu").pw_uid, "QEMU runs as uid %d, not libvirt-qemu" % uid
        label = ET.fromstring(virsh("dumpxml", NAME).stdout).find("seclabel[@model='dac']")
        assert label is not None and label.get("type") == "dynamic", virsh("dumpxml", NAME).stdout
        out = guest_run(WORK / "console.sock", [
            "cat /sys/class/net/eth0/operstate", "ethtool -i eth0", "ip -br addr show eth0",
            "cat /sys/bus/pci/devices/*/device"])
    finally:
        remove_domain(NAME)
    assert out[0].strip() == "up", out
    assert re.search(r"^driver: ixgbe$", out[1], re.M), out[1]
    assert "10.0.2.15/24" in out[2], out[2]
    assert "0x1517" in out[3].split(), out[3]


# ------------------------------------------------- the roles' defaults --

@pytest.mark.usefixtures("libvirt_up")
def test_vm_defaults_to_the_installed_emulator(pkg_env: Dict[str, Any], guest_image: Dict[str, Path]) -> None:
    """test_vm, asked for nothing about QEMU (check mode: the definition it would start)."""
    run = run_playbook("ci-vm.yml", check=True, diff=True, extra_vars={
        "test_vm_name": "qemu-ixgbe-test-pkg-vm", "test_vm_emulator_source": "package",
        "test_vm_workdir": str(pkg_env["work"] / "vm"), "test_vm_commands": ["true"]})
    assert run.rc == 0, run.failures()
    diff = str(run.task_results("Write the domain definition"))
    assert "<emulator>%s</emulator>" % BINARY in diff, diff


def tune_vars(env: Dict[str, Any]) -> Dict[str, Any]:
    work = env["work"]
    return {"kvm_host_vhost_net": "skip",
            "vhost_pinning_config_dir": str(work / "vhost-pinning"),
            "vhost_pinning_helper": str(work / "vhost-pin"),
            "vhost_pinning_hook_dir": str(work / "hooks"),
            "vhost_pinning_libvirtd_restart_command": "true",
            "kvm_domains": [{"name": TUNE_NAME, "vcpus": 1, "numa_node": 0, "cpu_mode": "custom",
                             "cpu_model": "Haswell-noTSX", "vhost_pinning": False,
                             "interfaces": [{"mac": "52:54:00:53:00:01", "model": "ixgbe",
                                             "type": "user"}]}]}


@pytest.mark.usefixtures("libvirt_up")
def test_libvirt_domain_defaults_to_the_installed_emulator(pkg_env: Dict[str, Any], qemu_binary: Path,
                                                           guest_image: Dict[str, Path]) -> None:
    """A domain defined with the checkout's build gets the package's binary
    for its ixgbe interface when the role is given no emulator."""
    xml = pkg_env["work"] / ("%s.xml" % TUNE_NAME)
    xml.write_text(stock_domain_xml(guest_image, TUNE_NAME, qemu_binary))
    remove_domain(TUNE_NAME)
    virsh("define", str(xml))
    inv = write_inventory(pkg_env["work"] / "tune.json", tune_vars(pkg_env))
    run = run_playbook("site.yml", inv)
    assert run.rc == 0, run.failures()
    assert ET.fromstring(virsh("dumpxml", "--inactive", TUNE_NAME).stdout).findtext("devices/emulator") == BINARY


# --------------------------------------------------------------- remove --

def test_remove(pkg_env: Dict[str, Any]) -> None:
    run = role(pkg_env, "remove", qemu_package_state="absent")
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] > 0
    assert not installed_version() and not Path(BINARY).exists() and not Path(WRAPPER).exists()
    run = role(pkg_env, "remove-again", qemu_package_state="absent")
    assert run.rc == 0 and run.host()["changed"] == 0, run.changed_tasks()
    assert dpkg_verify(DEBIAN_FIRMWARE) == pkg_env["firmware"]
    for local, existed in pkg_env["aa_local"].items():
        assert Path(local).exists() == existed, "%s: there %s the install, not after the purge" % (
            local, "before" if existed else "not before")
        if existed:
            assert "qemu-ixgbe" not in Path(local).read_text(), local


def test_install_from_a_repository(pkg_env: Dict[str, Any]) -> None:
    """The same package from an apt repository (a flat file: repository
    made with dpkg-scanpackages): installed, a second run changed=0, then
    purged with its source line."""
    # apt reads a file: repository as its unprivileged _apt user.
    repo = Path(tempfile.mkdtemp(prefix="qemu-ixgbe-repo-", dir="/tmp"))
    repo.chmod(0o755)
    shutil.copy(pkg_env["deb"], repo)
    with (repo / "Packages").open("w") as index:
        subprocess.run(["dpkg-scanpackages", "."], cwd=str(repo), stdout=index, check=True,
                       stderr=subprocess.DEVNULL)
    line = "deb [trusted=yes] file:%s ./" % repo
    version = subprocess.run(["dpkg-deb", "-f", str(pkg_env["deb"]), "Version"], capture_output=True,
                             text=True, check=True).stdout.strip()
    try:
        run = role(pkg_env, "repo", qemu_package_repo=line, qemu_package_version=version)
        assert run.rc == 0, run.failures()
        assert installed_version() == version
        assert Path("/etc/apt/sources.list.d/qemu_ixgbe.list").read_text() == line + "\n"
        run = role(pkg_env, "repo-again", qemu_package_repo=line, qemu_package_version=version)
        assert run.rc == 0 and run.host()["changed"] == 0, run.changed_tasks()
    finally:
        run = role(pkg_env, "repo-remove", qemu_package_state="absent")
        shutil.rmtree(repo, ignore_errors=True)
        # the removed source's index, which apt would drop at its next update
        for index in Path("/var/lib/apt/lists").glob("*%s*" % repo.name):
            index.unlink()
    assert run.rc == 0, run.failures()
    assert not installed_version() and not Path("/etc/apt/sources.list.d/qemu_ixgbe.list").exists()


@pytest.mark.usefixtures("libvirt_up")
def test_without_the_package_ixgbe_domains_need_an_emulator(pkg_env: Dict[str, Any]) -> None:
    """No package, no emulator named: a clear error before anything changes;
    the checkout's build only when asked."""
    before = virsh("dumpxml", "--inactive", TUNE_NAME).stdout
    inv = write_inventory(pkg_env["work"] / "tune-none.json", tune_vars(pkg_env))
    run = run_playbook("site.yml", inv)
    assert run.rc != 0
    assert any("need the qemu-ixgbe package installed" in f for f in run.failures()), run.failures()
    assert virsh("dumpxml", "--inactive", TUNE_NAME).stdout == before
    run = run_playbook("ci-vm.yml", check=True, extra_vars={
        "test_vm_name": "qemu-ixgbe-test-pkg-vm", "test_vm_emulator_source": "package",
        "test_vm_workdir": str(pkg_env["work"] / "vm"), "test_vm_commands": ["true"]})
    assert run.rc != 0
    assert any("install the qemu-ixgbe package" in f for f in run.failures()), run.failures()
