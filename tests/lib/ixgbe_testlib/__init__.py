"""The project's test library: the harness that boots guests under the
project's QEMU and the checks the suites share (tests/guest, tests/e2e,
tests/boot, tests/devloop, tests/bench, tests/tuner's recorder, the
collection's integration tests, scripts/devvm.py and scripts/demo.py).

It is imported by name, `from ixgbe_testlib.vm import VM`: pytest puts
tests/lib on sys.path (pytest.ini, `pythonpath`), and the programs run with
it on PYTHONPATH (scripts/lib.sh, PROJECT_PYTHON; scripts/python.sh).

| module | what |
|---|---|
| `host` | where things are (build dir, QEMU binary and its devices, guest images), the timeout scale, children that die with the harness |
| `errors` | `HarnessError` (cannot do what was asked), `GuestError` (the guest or QEMU misbehaved) |
| `vm` | `VM`: one QEMU process with the test guest, driven over QMP and the serial agent; the accelerator choice |
| `parsers` | what the guest prints: console stream, `dmesg -r`, ethtool, /proc/interrupts |
| `iperf3` | host-side iperf3 server and client, free ports, iperf3's JSON reports |
| `nicargs` | `-device`/`-netdev` arguments of the guest's NICs, MAC addresses |
| `netcheck` | a device's kernel-log problems, error counters, RSS flow placement |
| `frames` | raw Ethernet/IPv4/UDP/TCP frames and the host end of a `-netdev dgram` wire |
| `toeplitz` | reference Toeplitz hash and RETA lookup |
| `vmreport` | the logs of a failing test's VMs in its report |
| `sysguest` | the Debian systemd guest of scripts/build-rootfs.sh, its lab network, readings of what nettune tunes |
| `devloop` | the developer's one-line ixgbe change and its out-of-tree build |
| `timereport` | the time report scripts/test.sh ends with: build steps and tests against their budgets in docs/ci-time.md |
| `pytest_plugin` | the pytest options, fixtures and hooks the VM suites share (registered by tests/conftest.py) |
"""
