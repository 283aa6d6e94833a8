# -*- coding: utf-8 -*-
# Planning filters: pure functions of topology facts (see module_utils/topology.py).
from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import domxml
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import topology as t


def _wrap(func):
    def inner(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except t.PlanError as e:
            raise AnsibleFilterError(str(e))
    inner.__name__ = func.__name__
    inner.__doc__ = func.__doc__
    return inner


def plan_pinning(topology, vcpus, nic=None, node=None, iothreads=0, reserved_cpus=None):
    """topology | qemu_ixgbe.tuning.plan_pinning(vcpus, nic=..., node=...)"""
    return t.plan_pinning(topology, int(vcpus), nic=nic or None,
                          node=None if node in (None, "") else int(node),
                          iothreads=int(iothreads), reserved_cpus=reserved_cpus)


def plan_cpu(mode, model=None, host_cpu=None, features=None, signature=None,
             require_rep_good=True):
    """mode | qemu_ixgbe.tuning.plan_cpu(model, host_cpu, features, signature)"""
    return t.plan_cpu(mode, model or None, host_cpu, features, signature or None,
                      bool(require_rep_good))


def vhost_cpus(topology, node, vcpupin, reserved_cpus=None):
    """topology | qemu_ixgbe.tuning.vhost_cpus(node, vcpupin)"""
    return t.vhost_cpus(topology, node, vcpupin or {}, reserved_cpus)


def cpulist(value):
    """Normalise a CPU list (string, int or list) to Linux list syntax."""
    return t.format_cpulist(t.as_cpus(value))


def nic_node(topology, nic):
    """NUMA node of a host NIC in the topology."""
    return t.nic_node(topology, nic)


def cpus_within(cpus, allowed):
    """True when every CPU of `cpus` is in `allowed` (lists or CPU list strings)."""
    return set(t.as_cpus(cpus)) <= set(t.as_cpus(allowed))


def vhost_net_devices(interfaces):
    """How many of these interface specs use kernel vhost-net (each has a worker)."""
    return sum(1 for spec in interfaces or [] if domxml.normalize_interface(spec)["vhost"])


def rep_good(vendor, family, model, stepping=0):
    """Whether a Linux 6.1 guest sets rep_good on this CPU: {expected, reason}."""
    ok, why = t.rep_good_expected(vendor, family, model, stepping)
    return {"expected": ok, "reason": why}


class FilterModule(object):
    def filters(self):
        return {
            "plan_pinning": _wrap(plan_pinning),
            "plan_cpu": _wrap(plan_cpu),
            "vhost_cpus": _wrap(vhost_cpus),
            "cpulist": _wrap(cpulist),
            "rep_good": _wrap(rep_good),
            "nic_node": _wrap(nic_node),
            "cpus_within": _wrap(cpus_within),
            "vhost_net_devices": _wrap(vhost_net_devices),
        }
