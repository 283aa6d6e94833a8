# -*- coding: utf-8 -*-
# Pure transformations of libvirt domain XML towards a tuning plan.
#
# apply_plan() takes the current domain XML and a plan, changes only the
# parts the plan names, and returns the new XML with a list of what changed.
# A value that already matches (CPU lists compared as sets, not as text) is
# left untouched, so running it on libvirt's own normalised output of an
# already-tuned domain reports no change: that is what makes the module
# idempotent.
#
# Plan keys (all optional; a missing key leaves that part alone):
#   vcpus: int                      <vcpu>N</vcpu>
#   vcpupin: {"0": "2", ...}        <cputune><vcpupin/>  (pins of vCPUs >= vcpus dropped)
#   emulatorpin: "6"                <cputune><emulatorpin/>
#   iothreads: int                  <iothreads>N</iothreads>
#   iothreadpin: {"1": "7"}         <cputune><iothreadpin/>
#   numatune: {"mode": "strict", "nodeset": "1"}
#   cpu: {"mode": "custom", "model": "Haswell-noTSX", "features": ["erms"]}
#   memory_backing: "hugepages" | "memfd" | "default"
#   emulator: "path/to/qemu-system-x86_64"
#   interfaces: [{"mac": ..., "model": "virtio"|"ixgbe", "type": "network"|"bridge"|
#                 "user"|"vhostuser", "source": {...}, "queues": N, "vhost": bool}]
#   interfaces_exclusive: bool      drop interfaces whose MAC is not in the list
from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

try:
    from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.topology import (
        PlanError, as_cpus)
except ImportError:  # pragma: no cover - used standalone
    from topology import PlanError, as_cpus  # type: ignore

Changes = List[str]

LIVE_SECTIONS = ("vcpupin", "emulatorpin", "iothreadpin", "numatune")
ALL_SECTIONS = ("vcpus", "vcpupin", "emulatorpin", "iothreads", "iothreadpin", "numatune",
                "cpu", "memory_backing", "emulator", "interfaces")

INTERFACE_MODELS = ("virtio", "ixgbe", "e1000e", "igb")
INTERFACE_TYPES = ("network", "bridge", "user", "direct", "vhostuser")


def _same_cpus(a: Optional[str], b: Optional[str]) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return as_cpus(a) == as_cpus(b)
    except PlanError:
        return a == b


def _child(parent: ET.Element, tag: str) -> ET.Element:
    """The first child named tag, created when there is none."""
    found = parent.find(tag)
    if found is None:
        found = ET.SubElement(parent, tag)
    return found


def _set_text(root: ET.Element, tag: str, value: str, changes: Changes, what: str) -> None:
    el = _child(root, tag)
    if (el.text or "").strip() != value:
        changes.append("%s: %s -> %s" % (what, (el.text or "").strip() or "unset", value))
        el.text = value


# ------------------------------------------------------------------ cputune --

def _vcpus(root: ET.Element, n: int, changes: Changes) -> None:
    el = _child(root, "vcpu")
    current = (el.text or "").strip()
    if current != str(n):
        changes.append("vcpu count: %s -> %d" % (current or "unset", n))
        el.text = str(n)
        if el.get("current") is not None:
            del el.attrib["current"]
    if el.get("placement") is None:
        el.set("placement", "static")


def _pins(root: ET.Element, tag: str, key: str, wanted: Mapping[Any, Any], changes: Changes,
          limit: Optional[int] = None) -> None:
    cputune = _child(root, "cputune")
    wanted_s = {str(k): str(v) for k, v in wanted.items()}
    for el in list(cputune.findall(tag)):
        ident = el.get(key)
        if ident is None:
            continue
        if ident not in wanted_s:
            if limit is not None and int(ident) < limit:
                continue  # an existing pin the plan does not mention: keep
            changes.append("%s %s=%s: removed (was %s)" % (tag, key, ident, el.get("cpuset")))
            cputune.remove(el)
    for ident, cpus in sorted(wanted_s.items(), key=lambda kv: int(kv[0])):
        el = None
        for cand in cputune.findall(tag):
            if cand.get(key) == ident:
                el = cand
                break
        if el is None:
            el = ET.SubElement(cputune, tag, {key: ident, "cpuset": cpus})
            changes.append("%s %s=%s: unset -> %s" % (tag, key, ident, cpus))
        elif not _same_cpus(el.get("cpuset"), cpus):
            changes.append("%s %s=%s: %s -> %s" % (tag, key, ident, el.get("cpuset"), cpus))
            el.set("cpuset", cpus)


def _emulatorpin(root: ET.Element, cpus: str, changes: Changes) -> None:
    cputune = _child(root, "cputune")
    el = cputune.find("emulatorpin")
    if el is None:
        ET.SubElement(cputune, "emulatorpin", {"cpuset": cpus})
        changes.append("emulatorpin: unset -> %s" % cpus)
    elif not _same_cpus(el.get("cpuset"), cpus):
        changes.append("emulatorpin: %s -> %s" % (el.get("cpuset"), cpus))
        el.set("cpuset", cpus)


def _iothreads(root: ET.Element, n: int, changes: Changes) -> None:
    el = root.find("iothreads")
    current = int((el.text or "0").strip()) if el is not None else 0
    if current == n:
        return
    changes.append("iothreads: %d -> %d" % (current, n))
    if n == 0:
        if el is not None:
            root.remove(el)
        return
    if el is None:
        el = ET.SubElement(root, "iothreads")
    el.text = str(n)


def _numatune(root: ET.Element, spec: Mapping[str, Any], changes: Changes) -> None:
    mode = str(spec.get("mode", "strict"))
    nodeset = str(spec["nodeset"])
    nt = _child(root, "numatune")
    mem = nt.find("memory")
    if mem is None:
        ET.SubElement(nt, "memory", {"mode": mode, "nodeset": nodeset})
        changes.append("numatune: unset -> mode=%s nodeset=%s" % (mode, nodeset))
        return
    if mem.get("mode", "strict") != mode or not _same_cpus(mem.get("nodeset"), nodeset) \
            or mem.get("placement") not in (None, "static"):
        changes.append("numatune: mode=%s nodeset=%s -> mode=%s nodeset=%s" % (
            mem.get("mode", "strict"), mem.get("nodeset") or mem.get("placement"),
            mode, nodeset))
        mem.attrib.clear()
        mem.set("mode", mode)
        mem.set("nodeset", nodeset)


# ---------------------------------------------------------------------- cpu --

def _cpu(root: ET.Element, spec: Mapping[str, Any], changes: Changes) -> None:
    mode = str(spec["mode"])
    cpu = root.find("cpu")
    if cpu is None:
        cpu = ET.SubElement(root, "cpu")
        changes.append("cpu: default model -> %s" % (spec.get("model") or mode))
    _cpu_mode(cpu, mode, changes)
    if mode == "custom":
        _cpu_model(cpu, str(spec["model"]), changes)
    for name in spec.get("features") or []:
        _cpu_feature(cpu, name, changes)


def _cpu_mode(cpu: ET.Element, mode: str, changes: Changes) -> None:
    old_mode = cpu.get("mode", "custom")
    if old_mode != mode:
        changes.append("cpu mode: %s -> %s" % (old_mode, mode))
        # Drop what only made sense for the old mode; keep topology and numa.
        for child in list(cpu):
            if child.tag in ("model", "vendor", "feature"):
                cpu.remove(child)
        for attr in ("match", "check", "migratable"):
            cpu.attrib.pop(attr, None)
        cpu.set("mode", mode)
    elif cpu.get("mode") is None:
        cpu.set("mode", mode)


def _cpu_model(cpu: ET.Element, model: str, changes: Changes) -> None:
    m = cpu.find("model")
    if m is None:
        m = ET.Element("model", {"fallback": "forbid"})
        cpu.insert(0, m)
    if (m.text or "").strip() != model:
        changes.append("cpu model: %s -> %s" % ((m.text or "").strip() or "unset", model))
        m.text = model
    if cpu.get("match") is None:
        cpu.set("match", "exact")


def _cpu_feature(cpu: ET.Element, name: str, changes: Changes) -> None:
    """Require a CPU feature."""
    feat = next((cand for cand in cpu.findall("feature") if cand.get("name") == name), None)
    if feat is None:
        ET.SubElement(cpu, "feature", {"policy": "require", "name": name})
        changes.append("cpu feature %s: unset -> require" % name)
    elif feat.get("policy") != "require":
        changes.append("cpu feature %s: %s -> require" % (name, feat.get("policy")))
        feat.set("policy", "require")


# ----------------------------------------------------------- memory backing --

def _memory_backing_now(mb: Optional[ET.Element]) -> Tuple[bool, bool, bool]:
    """Whether a <memoryBacking> has huge pages, a memfd source and shared access."""
    if mb is None:
        return False, False, False
    src, acc = mb.find("source"), mb.find("access")
    return (mb.find("hugepages") is not None,
            src is not None and src.get("type") == "memfd",
            acc is not None and acc.get("mode") == "shared")


def _memory_backing(root: ET.Element, kind: str, changes: Changes) -> None:
    if kind not in ("hugepages", "memfd", "default"):
        raise PlanError("memory backing must be hugepages, memfd or default, got %r" % kind)
    mb = root.find("memoryBacking")
    have_huge, have_memfd, shared = _memory_backing_now(mb)
    want = {"hugepages": (True, False, True), "memfd": (False, True, True),
            "default": (False, False, False)}[kind]
    if (have_huge, have_memfd, shared) == want:
        return
    changes.append("memoryBacking: %s -> %s" % (
        "hugepages" if have_huge else "memfd" if have_memfd else "default", kind))
    if mb is None:
        mb = ET.SubElement(root, "memoryBacking")
    for child in list(mb):
        if child.tag in ("hugepages", "source", "access"):
            mb.remove(child)
    if kind == "hugepages":
        ET.SubElement(mb, "hugepages")
    if kind == "memfd":
        ET.SubElement(mb, "source", {"type": "memfd"})
    if kind in ("hugepages", "memfd"):
        ET.SubElement(mb, "access", {"mode": "shared"})
    if len(mb) == 0:
        root.remove(mb)


# --------------------------------------------------------------- interfaces --

def normalize_interface(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """Validate one interface spec and fill in defaults."""
    mac = _interface_mac(spec.get("mac"))
    model = _one_of("interface model", str(spec.get("model", "virtio")), INTERFACE_MODELS)
    itype = _one_of("interface type", str(spec.get("type", "user")), INTERFACE_TYPES)
    source = _interface_source(dict(spec.get("source") or {}), itype, model, mac)
    queues = _interface_queues(spec.get("queues"), itype, model, mac)
    tap = itype in ("network", "bridge", "direct")
    vhost = bool(spec.get("vhost", model == "virtio" and tap))
    if vhost and (model != "virtio" or not tap):
        raise PlanError("interface %s: kernel vhost needs a virtio model on a tap backend "
                        "(network, bridge, direct)" % mac)
    return {"mac": mac, "model": model, "type": itype, "source": source,
            "queues": queues if queues and queues > 1 else None, "vhost": vhost,
            "rom": bool(spec.get("rom", False))}


def _interface_mac(value: Any) -> str:
    mac = str(value or "").lower()
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(p) == 2 and all(c in "0123456789abcdef" for c in p)
                                  for p in parts):
        raise PlanError("interface needs a MAC address like 52:54:00:12:34:56, got %r" % value)
    return mac


def _one_of(what: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise PlanError("%s must be one of %s, got %r" % (what, ", ".join(choices), value))
    return value


def _interface_source(source: Dict[str, Any], itype: str, model: str, mac: str) -> Dict[str, Any]:
    """The <source> attributes of an interface type, checked, with defaults."""
    if itype == "network":
        source.setdefault("network", "default")
    if itype == "bridge" and not source.get("bridge"):
        raise PlanError("bridge interface %s needs source.bridge" % mac)
    if itype == "direct" and not source.get("dev"):
        raise PlanError("direct interface %s needs source.dev" % mac)
    if itype == "vhostuser":
        if model != "virtio":
            raise PlanError("vhost-user interface %s must use the virtio model" % mac)
        if not source.get("path"):
            raise PlanError("vhost-user interface %s needs source.path (the socket)" % mac)
        source.setdefault("type", "unix")
        source.setdefault("mode", "client")
        if source["mode"] not in ("client", "server"):
            raise PlanError("vhost-user socket mode must be client or server")
    return source


def _interface_queues(value: Any, itype: str, model: str, mac: str) -> Optional[int]:
    if value is None:
        return None
    queues = int(value)
    if queues < 1:
        raise PlanError("interface %s: queues must be >= 1" % mac)
    if model not in ("virtio",):
        raise PlanError("interface %s: queues apply to virtio interfaces only "
                        "(the %s model chooses its own queue count in the guest)"
                        % (mac, model))
    if queues > 1 and itype not in ("network", "bridge", "direct", "vhostuser"):
        raise PlanError("interface %s: multiqueue needs a tap backend (network, bridge, "
                        "direct) or vhost-user, not type %s" % (mac, itype))
    return queues


def _interface_element(spec: Mapping[str, Any], old: Optional[ET.Element]) -> ET.Element:
    el = ET.Element("interface", {"type": spec["type"]})
    ET.SubElement(el, "mac", {"address": spec["mac"]})
    if spec["source"]:
        ET.SubElement(el, "source", {k: str(v) for k, v in sorted(spec["source"].items())})
    ET.SubElement(el, "model", {"type": spec["model"]})
    driver: Dict[str, str] = {}
    if spec["model"] == "virtio" and spec["type"] != "vhostuser":
        driver["name"] = "vhost" if spec["vhost"] else "qemu"
    if spec["queues"]:
        driver["queues"] = str(spec["queues"])
    if driver:
        ET.SubElement(el, "driver", driver)
    if not spec["rom"]:
        ET.SubElement(el, "rom", {"enabled": "no"})
    if old is not None:
        for tag in ("target", "alias", "address"):
            kept = old.find(tag)
            if kept is not None and (tag != "target" or spec["type"] != "vhostuser"):
                el.append(copy.deepcopy(kept))
    return el


def _interface_matches(el: ET.Element, spec: Mapping[str, Any]) -> List[str]:
    diffs = []
    if el.get("type") != spec["type"]:
        diffs.append("type %s -> %s" % (el.get("type"), spec["type"]))
    src = el.find("source")
    for key, value in spec["source"].items():
        have = src.get(key) if src is not None else None
        if have != str(value):
            diffs.append("source %s %s -> %s" % (key, have, value))
    model = el.find("model")
    have_model = model.get("type") if model is not None else None
    if have_model != spec["model"]:
        diffs.append("model %s -> %s" % (have_model, spec["model"]))
    diffs += _driver_diffs(el.find("driver"), spec)
    rom = el.find("rom")
    rom_off = rom is not None and rom.get("enabled") == "no"
    if rom_off == spec["rom"]:
        diffs.append("option ROM %s -> %s" % ("off" if rom_off else "on",
                                              "on" if spec["rom"] else "off"))
    return diffs


def _driver_diffs(drv: Optional[ET.Element], spec: Mapping[str, Any]) -> List[str]:
    """How an interface's <driver> (backend name, queues) differs from the spec."""
    diffs = []
    have_name = drv.get("name") if drv is not None else None
    if spec["model"] == "virtio" and spec["type"] != "vhostuser":
        want_name = "vhost" if spec["vhost"] else "qemu"
        if (have_name or "vhost") != want_name:
            diffs.append("driver %s -> %s" % (have_name or "default", want_name))
    have_q = drv.get("queues") if drv is not None else None
    want_q = str(spec["queues"]) if spec["queues"] else None
    if (have_q if have_q != "1" else None) != want_q:
        diffs.append("queues %s -> %s" % (have_q or 1, want_q or 1))
    return diffs


def _interfaces(root: ET.Element, specs: Sequence[Mapping[str, Any]], exclusive: bool,
                changes: Changes) -> None:
    devices = _child(root, "devices")
    norm = [normalize_interface(s) for s in specs]
    macs = [s["mac"] for s in norm]
    if len(set(macs)) != len(macs):
        raise PlanError("interface MAC addresses must be unique: %s" % ", ".join(macs))
    existing: Dict[str, ET.Element] = {}
    for el in devices.findall("interface"):
        mac = el.find("mac")
        if mac is not None and mac.get("address"):
            existing[mac.get("address", "").lower()] = el
    if exclusive:
        for mac, el in list(existing.items()):
            if mac not in macs:
                devices.remove(el)
                changes.append("interface %s: removed" % mac)
                del existing[mac]
    for spec in norm:
        old = existing.get(spec["mac"])
        if old is None:
            devices.append(_interface_element(spec, None))
            changes.append("interface %s: added (%s, %s)" % (spec["mac"], spec["model"],
                                                             spec["type"]))
            continue
        diffs = _interface_matches(old, spec)
        if diffs:
            new = _interface_element(spec, old)
            idx = list(devices).index(old)
            devices.remove(old)
            devices.insert(idx, new)
            changes.append("interface %s: %s" % (spec["mac"], "; ".join(diffs)))


# --------------------------------------------------------------------- main --

def domain_name(xml_text: str) -> str:
    root = ET.fromstring(xml_text)
    return (root.findtext("name") or "").strip()


def _vcpu_count(root: ET.Element) -> int:
    vcpu_el = root.find("vcpu")
    return int((vcpu_el.text or "1").strip()) if vcpu_el is not None else 1


def _plan_vcpupin(root: ET.Element, plan: Mapping[str, Any], changes: Changes) -> None:
    vcpus = int(plan["vcpus"]) if plan.get("vcpus") is not None else _vcpu_count(root)
    pins = {str(k): v for k, v in plan["vcpupin"].items()}
    for k in pins:
        if int(k) >= vcpus:
            raise PlanError("vcpupin for vCPU %s but the domain has %d vCPUs" % (k, vcpus))
    # pins for vCPUs that no longer exist are dropped; others the plan
    # does not name are dropped too, so every vCPU follows the plan.
    _pins(root, "vcpupin", "vcpu", pins, changes)


def _plan_emulator(root: ET.Element, plan: Mapping[str, Any], changes: Changes) -> None:
    _set_text(_child(root, "devices"), "emulator", str(plan["emulator"]), changes, "emulator")


# How each section of a plan changes the domain, in the order of ALL_SECTIONS.
_SECTION_WRITERS: Dict[str, Callable[[ET.Element, Mapping[str, Any], Changes], None]] = {
    "vcpus": lambda root, plan, changes: _vcpus(root, int(plan["vcpus"]), changes),
    "vcpupin": _plan_vcpupin,
    "emulatorpin": lambda root, plan, changes: _emulatorpin(root, str(plan["emulatorpin"]), changes),
    "iothreads": lambda root, plan, changes: _iothreads(root, int(plan["iothreads"]), changes),
    "iothreadpin": lambda root, plan, changes: _pins(root, "iothreadpin", "iothread", plan["iothreadpin"],
                                                     changes),
    "numatune": lambda root, plan, changes: _numatune(root, plan["numatune"], changes),
    "cpu": lambda root, plan, changes: _cpu(root, plan["cpu"], changes),
    "memory_backing": lambda root, plan, changes: _memory_backing(root, str(plan["memory_backing"]), changes),
    "emulator": _plan_emulator,
    "interfaces": lambda root, plan, changes: _interfaces(root, plan["interfaces"],
                                                          bool(plan.get("interfaces_exclusive")), changes),
}


def apply_plan(xml_text: str, plan: Mapping[str, Any],
               sections: Sequence[str] = ALL_SECTIONS) -> Tuple[str, Changes]:
    """Return (new XML, changes) for the plan's keys among `sections`."""
    root = ET.fromstring(xml_text)
    if root.tag != "domain":
        raise PlanError("not a libvirt domain XML document")
    changes: Changes = []
    for key in ALL_SECTIONS:
        if key in sections and plan.get(key) is not None:
            _SECTION_WRITERS[key](root, plan, changes)
    cputune = root.find("cputune")
    if cputune is not None and len(cputune) == 0 and not cputune.attrib:
        root.remove(cputune)
    numatune = root.find("numatune")
    if numatune is not None and len(numatune) == 0:
        root.remove(numatune)
    if not changes:
        return xml_text, changes
    return ET.tostring(root, encoding="unicode"), changes


def read_pins(xml_text: str) -> Dict[str, Any]:
    """The pinning facts of a domain XML (live or persistent)."""
    root = ET.fromstring(xml_text)
    cputune = root.find("cputune")
    out: Dict[str, Any] = {"vcpupin": {}, "emulatorpin": None, "iothreadpin": {},
                           "numatune": None}
    out["vcpus"] = _vcpu_count(root)
    if cputune is not None:
        for el in cputune.findall("vcpupin"):
            out["vcpupin"][el.get("vcpu")] = el.get("cpuset")
        em = cputune.find("emulatorpin")
        out["emulatorpin"] = em.get("cpuset") if em is not None else None
        for el in cputune.findall("iothreadpin"):
            out["iothreadpin"][el.get("iothread")] = el.get("cpuset")
    mem = root.find("numatune/memory")
    if mem is not None:
        out["numatune"] = {"mode": mem.get("mode", "strict"), "nodeset": mem.get("nodeset")}
    return out
