# -*- coding: utf-8 -*-
# Host topology planning for KVM guests: pure functions of topology facts.
#
# Nothing here reads the machine. The input is a topology dictionary as
# returned by the host_topology module (or written by hand in a test
# fixture), so the same code plans for a 2-node host while running on a
# 1-node one.
#
# Topology dictionary:
#   {"nodes": {"0": {"cpus": [0, 1, ...]}, "1": {...}},
#    "cpus": {"0": {"node": 0, "core": "0:0", "siblings": [0, 8]}, ...},
#    "nics": {"eth0": {"numa_node": 1, "driver": "ixgbe"}},
#    "cpu": {"vendor": "GenuineIntel", "family": 6, "model": 85,
#            "stepping": 4, "flags": ["erms", ...]}}
# Keys of "nodes" and "cpus" may be strings (as after a JSON round trip) or
# integers.
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

try:
    from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.cpulist import (
        CpuListError, format_cpulist, parse_cpulist as _parse_cpulist)
except ImportError:  # pragma: no cover - used standalone
    from cpulist import CpuListError, format_cpulist, parse_cpulist as _parse_cpulist  # type: ignore


class PlanError(ValueError):
    """The request cannot be satisfied by the given topology."""


# --------------------------------------------------------------- cpu lists --

def parse_cpulist(text: str) -> List[int]:
    """Parse a Linux CPU list ("0-3,8,10-11") into a sorted list of ints."""
    try:
        return _parse_cpulist(text)
    except CpuListError as e:
        raise PlanError(str(e)) from None


def as_cpus(value: Any) -> List[int]:
    """Accept a CPU list string, an int or a sequence of ints."""
    if value is None:
        return []
    if isinstance(value, bool):
        raise PlanError("CPU list must not be a boolean: %r" % (value,))
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        return parse_cpulist(value)
    return sorted(set(int(v) for v in value))


# ---------------------------------------------------------------- topology --

def _nodes(topology: Mapping[str, Any]) -> Dict[int, List[int]]:
    nodes = topology.get("nodes") or {}
    if not nodes:
        raise PlanError("topology has no NUMA nodes")
    return {int(k): sorted(int(c) for c in v.get("cpus", [])) for k, v in nodes.items()}


def _cpu_info(topology: Mapping[str, Any], cpu: int) -> Mapping[str, Any]:
    cpus = topology.get("cpus") or {}
    return cpus.get(str(cpu)) or cpus.get(cpu) or {}


def nic_node(topology: Mapping[str, Any], nic: str) -> int:
    """NUMA node of a host NIC; a NIC without a node on a 1-node host is on node 0."""
    nics = topology.get("nics") or {}
    if nic not in nics:
        known = ", ".join(sorted(nics)) or "none"
        raise PlanError("unknown host NIC %r (known: %s)" % (nic, known))
    node = nics[nic].get("numa_node")
    nodes = _nodes(topology)
    if node is None or int(node) < 0:
        if len(nodes) == 1:
            return next(iter(nodes))
        raise PlanError(
            "host NIC %r reports no NUMA node on a %d-node host; pass a node explicitly"
            % (nic, len(nodes)))
    node = int(node)
    if node not in nodes:
        raise PlanError("host NIC %r is on node %d, which has no CPUs" % (nic, node))
    return node


def cores_of_node(topology: Mapping[str, Any], node: int) -> List[List[int]]:
    """Physical cores of a node, each a sorted list of its online CPUs (threads).

    Cores are ordered by their lowest CPU number. CPUs without core
    information count as cores of their own.
    """
    nodes = _nodes(topology)
    if node not in nodes:
        raise PlanError("NUMA node %d does not exist (nodes: %s)"
                        % (node, format_cpulist(nodes)))
    node_cpus = set(nodes[node])
    groups: Dict[str, List[int]] = {}
    for cpu in sorted(node_cpus):
        info = _cpu_info(topology, cpu)
        siblings = [int(s) for s in info.get("siblings") or [cpu]]
        key = str(info.get("core")) if info.get("core") is not None else \
            format_cpulist(siblings)
        groups.setdefault(key, [])
        groups[key].append(cpu)
    return sorted((sorted(v) for v in groups.values()), key=lambda c: c[0])


def _plan_node(topology: Mapping[str, Any], nic: Optional[str], node: Optional[int]) -> int:
    """The node to plan for: the given one, else the NIC's (both: they must agree)."""
    if node is not None:
        chosen = int(node)
        if nic is not None and nic_node(topology, nic) != chosen:
            raise PlanError("host NIC %r is on node %d, not on the requested node %d"
                            % (nic, nic_node(topology, nic), chosen))
        return chosen
    if nic is not None:
        return nic_node(topology, nic)
    raise PlanError("give a host NIC or a NUMA node to plan for")


def _free_cores(topology: Mapping[str, Any], node: int, reserved: Set[int], vcpus: int) -> List[List[int]]:
    """The node's cores without the reserved CPUs; at least one per vCPU."""
    cores = [[c for c in core if c not in reserved] for core in cores_of_node(topology, node)]
    cores = [c for c in cores if c]
    if vcpus > len(cores):
        raise PlanError(
            "%d vCPUs requested but NUMA node %d has only %d physical cores%s "
            "(one vCPU per core)" % (vcpus, node, len(cores),
                                     " outside the reserved CPUs" if reserved else ""))
    return cores


def _emulator_and_iothreads(cores: List[List[int]], vcpus: int, iothreads: int,
                            node: int) -> Tuple[int, Dict[str, str]]:
    """The emulator's CPU and the iothreads' pins, from the CPUs the vCPUs leave."""
    # CPUs left over: whole free cores first, then sibling threads of vCPU cores.
    spare = [cpu for core in cores[vcpus:] for cpu in core]
    spare += [cpu for core in cores[:vcpus] for cpu in core[1:]]
    if not spare:
        raise PlanError(
            "NUMA node %d has no CPU left for the emulator thread after %d vCPUs; "
            "ask for at most %d vCPUs" % (node, vcpus, len(cores) - 1))
    emulator = spare[0]
    rest = spare[1:]
    iothread_pins: Dict[str, str] = {}
    for i in range(iothreads):
        cpu = rest[i] if i < len(rest) else emulator
        iothread_pins[str(i + 1)] = str(cpu)
    return emulator, iothread_pins


def plan_pinning(topology: Mapping[str, Any], vcpus: int, nic: Optional[str] = None,
                 node: Optional[int] = None, iothreads: int = 0,
                 reserved_cpus: Any = None) -> Dict[str, Any]:
    """Plan vCPU, emulator, iothread and vhost worker placement.

    Rules:
    * the node is the NIC's node, or the given node (both: they must agree);
    * reserved (host housekeeping) CPUs are never used;
    * vCPU i goes to the first thread of the i-th physical core of the node:
      one vCPU per physical core, so no two vCPUs share a core;
    * the emulator thread gets a CPU of the node that no vCPU uses: the
      first thread of the next free core, else a sibling thread of a vCPU core;
    * each iothread gets its own such CPU while there are any left after the
      emulator, else they share the emulator's CPU;
    * vhost workers may use every node CPU that no vCPU uses.
    """
    if isinstance(vcpus, bool) or not isinstance(vcpus, int) or vcpus < 1:
        raise PlanError("vCPU count must be a positive integer, got %r" % (vcpus,))
    if isinstance(iothreads, bool) or not isinstance(iothreads, int) or iothreads < 0:
        raise PlanError("iothread count must be a non-negative integer, got %r" % (iothreads,))
    chosen = _plan_node(topology, nic, node)
    reserved = set(as_cpus(reserved_cpus))
    cores = _free_cores(topology, chosen, reserved, vcpus)
    vcpu_cpus = [core[0] for core in cores[:vcpus]]
    emulator, iothread_pins = _emulator_and_iothreads(cores, vcpus, iothreads, chosen)
    node_cpus = [c for c in _nodes(topology)[chosen] if c not in reserved]
    vhost = [c for c in node_cpus if c not in set(vcpu_cpus)]
    return {
        "node": chosen,
        "vcpus": vcpus,
        "vcpupin": {str(i): str(cpu) for i, cpu in enumerate(vcpu_cpus)},
        "emulatorpin": str(emulator),
        "iothreads": iothreads,
        "iothreadpin": iothread_pins,
        "vhost_cpus": format_cpulist(vhost),
        "node_cpus": format_cpulist(node_cpus),
        "numatune": {"mode": "strict", "nodeset": str(chosen)},
    }


def vhost_cpus(topology: Mapping[str, Any], node: int, vcpupin: Mapping[Any, Any],
               reserved_cpus: Any = None) -> str:
    """CPUs of a node that no vCPU is pinned to (where vhost workers belong)."""
    nodes = _nodes(topology)
    node = int(node)
    if node not in nodes:
        raise PlanError("NUMA node %d does not exist" % node)
    used = set()
    for cpus in vcpupin.values():
        used.update(as_cpus(cpus))
    reserved = set(as_cpus(reserved_cpus))
    free = [c for c in nodes[node] if c not in used and c not in reserved]
    if not free:
        raise PlanError("every CPU of node %d runs a vCPU; no CPU left for vhost workers"
                        % node)
    return format_cpulist(free)


# ------------------------------------------------- rep_good / string ops ----
#
# When the guest kernel (Linux 6.1, x86_64) sets X86_FEATURE_REP_GOOD, read
# from arch/x86/kernel/cpu/{intel,amd,hygon,centaur,zhaoxin}.c:
#   GenuineIntel: family 6 only (init_intel). early_init_intel clears it
#       again for family > 6 or family 6 model >= 0xd when
#       IA32_MISC_ENABLE.FAST_STRING (bit 0) is clear. QEMU resets that MSR
#       with fast strings enabled, so every family 6 model qualifies; family
#       15 (Pentium 4, QEMU's kvm64, and qemu64 once KVM gives it the Intel
#       host vendor) never does.
#   AuthenticAMD: family >= 0x10 (init_amd). Family 0xf (K8, init_amd_k8):
#       only when the CPUID(1).EAX signature is in [0x0f48, 0x0f50) or is
#       >= 0x0f58. QEMU's qemu64 under TCG is AMD family 15 model 107
#       (signature 0x60fb1), which passes that test.
#   HygonGenuine: always. CentaurHauls: family 6 model >= 0xf, or family >= 7.
#   "  Shanghai  " (Zhaoxin): family >= 6.
# ERMS and FSRM are plain CPUID bits (leaf 7 EBX bit 9, EDX bit 4): the
# guest sees them only when the CPU model exposes them.

VENDORS = {
    "intel": "GenuineIntel", "genuineintel": "GenuineIntel",
    "amd": "AuthenticAMD", "authenticamd": "AuthenticAMD",
    "hygon": "HygonGenuine", "hygongenuine": "HygonGenuine",
    "centaur": "CentaurHauls", "centaurhauls": "CentaurHauls",
    "zhaoxin": "  Shanghai  ", "shanghai": "  Shanghai  ",
}


def normalize_vendor(vendor: str) -> str:
    key = (vendor or "").strip().lower()
    if key not in VENDORS:
        raise PlanError("unknown CPU vendor %r" % (vendor,))
    return VENDORS[key]


def cpuid_signature(family: int, model: int, stepping: int = 0) -> int:
    """CPUID(1).EAX for a display family/model/stepping."""
    if family > 0xf:
        base_family, ext_family = 0xf, family - 0xf
    else:
        base_family, ext_family = family, 0
    base_model, ext_model = model & 0xf, (model >> 4) & 0xf
    return (ext_family << 20) | (ext_model << 16) | (base_family << 8) | \
        (base_model << 4) | (stepping & 0xf)


def rep_good_expected(vendor: str, family: int, model: int, stepping: int = 0,
                      fast_strings: bool = True) -> Tuple[bool, str]:
    """Whether a Linux 6.1 x86_64 guest sets rep_good on this CPU, and why."""
    v = normalize_vendor(vendor)
    family, model, stepping = int(family), int(model), int(stepping)
    if v == "GenuineIntel":
        if family != 6:
            return False, "Intel family %d: the kernel sets rep_good on family 6 only" % family
        if model >= 0xd and not fast_strings:
            return False, ("Intel family 6 model %#x with IA32_MISC_ENABLE fast strings "
                           "off: the kernel clears rep_good" % model)
        return True, "Intel family 6 (fast strings enabled)"
    if v == "AuthenticAMD":
        if family >= 0x10:
            return True, "AMD family %#x >= 0x10" % family
        if family == 0xf:
            sig = cpuid_signature(family, model, stepping)
            ok = (0x0f48 <= sig < 0x0f50) or sig >= 0x0f58
            return ok, "AMD K8 (family 0xf), CPUID signature %#x %s the C+ stepping rule" % (
                sig, "passes" if ok else "fails")
        return False, "AMD family %#x < 0xf" % family
    if v == "HygonGenuine":
        return True, "Hygon: always"
    if v == "CentaurHauls":
        ok = (family == 6 and model >= 0xf) or family >= 7
        return ok, "Centaur family %d model %#x" % (family, model)
    ok = family >= 6
    return ok, "Zhaoxin family %d" % family


# QEMU's named x86 CPU models: vendor, family, model (QEMU's CPU model table).
# Used to predict rep_good for a named model; models not listed need an
# explicit signature from the user.
QEMU_CPU_MODELS: Dict[str, Tuple[str, int, int, int]] = {
    "qemu64": ("AuthenticAMD", 15, 107, 1),
    "kvm64": ("GenuineIntel", 15, 6, 1),
    "Conroe": ("GenuineIntel", 6, 15, 3),
    "Penryn": ("GenuineIntel", 6, 23, 3),
    "Nehalem": ("GenuineIntel", 6, 26, 3),
    "Westmere": ("GenuineIntel", 6, 44, 1),
    "SandyBridge": ("GenuineIntel", 6, 42, 1),
    "IvyBridge": ("GenuineIntel", 6, 58, 9),
    "Haswell": ("GenuineIntel", 6, 60, 4),
    "Haswell-noTSX": ("GenuineIntel", 6, 60, 4),
    "Broadwell": ("GenuineIntel", 6, 61, 2),
    "Broadwell-noTSX": ("GenuineIntel", 6, 61, 2),
    "Skylake-Client": ("GenuineIntel", 6, 94, 3),
    "Skylake-Server": ("GenuineIntel", 6, 85, 4),
    "Cascadelake-Server": ("GenuineIntel", 6, 85, 6),
    "Cooperlake": ("GenuineIntel", 6, 85, 10),
    "Icelake-Server": ("GenuineIntel", 6, 134, 0),
    "SapphireRapids": ("GenuineIntel", 6, 143, 4),
    "GraniteRapids": ("GenuineIntel", 6, 173, 0),
    "Opteron_G1": ("AuthenticAMD", 15, 6, 1),
    "Opteron_G2": ("AuthenticAMD", 15, 6, 1),
    "Opteron_G3": ("AuthenticAMD", 16, 2, 3),
    "Opteron_G4": ("AuthenticAMD", 21, 1, 2),
    "Opteron_G5": ("AuthenticAMD", 21, 2, 0),
    "EPYC": ("AuthenticAMD", 23, 1, 2),
    "EPYC-Rome": ("AuthenticAMD", 23, 49, 0),
    "EPYC-Milan": ("AuthenticAMD", 25, 1, 1),
    "EPYC-Genoa": ("AuthenticAMD", 25, 17, 0),
    "Dhyana": ("HygonGenuine", 24, 0, 1),
}

STRING_OP_FLAGS = ("erms", "fsrm")
CPU_MODES = ("host-passthrough", "host-model", "custom")


def model_signature(model: str) -> Optional[Tuple[str, int, int, int]]:
    """Vendor, family, model, stepping of a QEMU model, versioned names too."""
    if model in QEMU_CPU_MODELS:
        return QEMU_CPU_MODELS[model]
    base = model
    # "Skylake-Server-v4" -> "Skylake-Server", "Haswell-noTSX-IBRS" -> "Haswell-noTSX"
    for suffix in ("-IBRS", "-v1", "-v2", "-v3", "-v4", "-v5", "-v6", "-v7"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return QEMU_CPU_MODELS.get(base)


def _custom_features(features: Optional[Sequence[str]], host_flags: Set[str]) -> List[str]:
    """The features a custom model requires: as given, or each string-op flag the host
    has (all of them when no host flags are known)."""
    if features is None:
        return [f for f in STRING_OP_FLAGS if not host_flags or f in host_flags]
    bad = [f for f in features if not isinstance(f, str) or not f]
    if bad:
        raise PlanError("bad CPU feature names: %r" % (bad,))
    return list(features)


def _custom_signature(model: str, signature: Optional[Mapping[str, Any]]) -> Tuple[str, int, int, int]:
    """Vendor, family, model, stepping of a custom model: as given, else from the model table."""
    if signature:
        return (normalize_vendor(str(signature["vendor"])), int(signature["family"]),
                int(signature["model"]), int(signature.get("stepping", 0)))
    found = model_signature(model)
    if found is None:
        raise PlanError(
            "CPU model %r is not in the known model table; give its vendor, family "
            "and model (cpu_signature) so rep_good can be predicted" % model)
    return found


def plan_cpu(mode: str, model: Optional[str] = None, host_cpu: Optional[Mapping[str, Any]] = None,
             features: Optional[Sequence[str]] = None,
             signature: Optional[Mapping[str, Any]] = None,
             require_rep_good: bool = True) -> Dict[str, Any]:
    """Choose the guest CPU definition and predict rep_good/erms/fsrm.

    mode host-passthrough: the guest sees the host CPU; string-op flags are
    the host's. host-model: libvirt's closest named model plus the host's
    features (erms/fsrm included when the host has them); family/model are
    the named model's, so the prediction uses the host signature only as an
    estimate. custom: the named model, plus erms and fsrm added as required
    features ("auto": each one the host has, or both when no host flags are
    known, as under TCG where QEMU emulates them).
    """
    if mode not in CPU_MODES:
        raise PlanError("CPU mode must be one of %s, got %r" % (", ".join(CPU_MODES), mode))
    host_cpu = host_cpu or {}
    host_flags = set(host_cpu.get("flags") or [])
    result: Dict[str, Any] = {"mode": mode, "model": None, "features": []}
    if mode == "custom":
        if not model:
            raise PlanError("CPU mode 'custom' needs a model name")
        wanted = _custom_features(features, host_flags)
        sig = _custom_signature(model, signature)
        ok, why = rep_good_expected(*sig)
        result.update({
            "model": model, "features": wanted,
            "guest_signature": {"vendor": sig[0], "family": sig[1], "model": sig[2], "stepping": sig[3]},
            "expect": {"rep_good": ok, "erms": "erms" in wanted, "fsrm": "fsrm" in wanted},
            "reason": why,
        })
    else:
        if host_cpu.get("vendor") is not None and host_cpu.get("family") is not None:
            ok, why = rep_good_expected(str(host_cpu["vendor"]), int(host_cpu["family"]),
                                        int(host_cpu.get("model", 0)),
                                        int(host_cpu.get("stepping", 0)))
        else:
            ok, why = True, "host CPU unknown; assuming the host's own rep_good"
        result["expect"] = {"rep_good": ok, "erms": "erms" in host_flags,
                            "fsrm": "fsrm" in host_flags}
        result["reason"] = ("%s: %s" % (mode, why))
    if require_rep_good and not result["expect"]["rep_good"]:
        raise PlanError(
            "with CPU %s the guest kernel will not set rep_good (%s); choose a model of "
            "Intel family 6 or AMD family >= 0x10, or host-passthrough on such a host"
            % (result["model"] or mode, result["reason"]))
    return result
