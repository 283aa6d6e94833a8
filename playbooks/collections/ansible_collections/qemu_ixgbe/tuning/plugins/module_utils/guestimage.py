# -*- coding: utf-8 -*-
# Bring your own kernel or module to the project's test guest image.
#
# The guest image (scripts/build-guest.sh) is a Debian kernel plus a gzip'd
# newc initramfs holding busybox, a few tools, the init and command agent, and
# the NIC driver modules of that kernel under lib/modules/<release>/. A
# developer's build goes on top of it as a second archive appended to the
# first: Linux unpacks concatenated initramfs archives in order, a later file
# replacing an earlier one. So
#
#   - a rebuilt module (ixgbe.ko, ixgbevf.ko, ...) for the image's kernel
#     replaces the stock one at the same path (or is added under extra/);
#   - a kernel of one's own (a bzImage) comes with the modules its
#     `make modules_install INSTALL_MOD_PATH=DIR` put under DIR/lib/modules/<release>/:
#     the NIC drivers and their dependencies are taken from there.
#
# Everything is checked before a VM starts: a bzImage's boot header and
# release, each module's vermagic against the kernel it will be loaded into.
# Pure stdlib; shared by the test_vm role (module guest_initrd) and
# scripts/devvm.py.
from __future__ import annotations

import gzip
import io
import lzma
import os
import re
import shutil
import stat
import struct
import subprocess
import zlib
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

# Drivers taken from a kernel's module tree: the NICs the VM can have plus
# what the guest tests load.
NIC_MODULES = ("ixgbe", "ixgbevf", "igb", "e1000e", "virtio_net", "virtio_pci", "veth")

_INDEX_FILES = ("modules.builtin", "modules.builtin.modinfo", "modules.order", "modules.softdep")


class ImageError(ValueError):
    """The kernel, module or image given cannot work; the message says why."""


def modname(path: str) -> str:
    """Module name of a module file: ixgbe for .../ixgbe.ko(.xz), '-' read as '_'."""
    base = os.path.basename(path)
    base = re.sub(r"\.ko(\.(xz|gz|zst))?$", "", base)
    return base.replace("-", "_")


# ------------------------------------------------------------------- kernel
def bzimage_release(path: str) -> str:
    """The release (uname -r) of an x86 bzImage, read from its boot header."""
    try:
        with open(path, "rb") as f:
            head = f.read(0x10000)
    except OSError as e:
        raise ImageError("cannot read kernel image %s: %s" % (path, e.strerror))
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        hint = ""
        if head[:4] == b"\x7fELF":
            hint = " (it is an ELF file: pass arch/x86/boot/bzImage, not vmlinux)"
        raise ImageError("%s is not an x86 bzImage: no 'HdrS' boot header%s" % (path, hint))
    off = struct.unpack_from("<H", head, 0x20E)[0] + 0x200
    if off <= 0x200 or off >= len(head):
        raise ImageError("%s: the boot header has no kernel version string" % path)
    text = head[off:head.index(b"\0", off)] if b"\0" in head[off:] else head[off:off + 256]
    release = text.decode("ascii", "replace").split(" ", 1)[0]
    if not release:
        raise ImageError("%s: empty kernel version string in the boot header" % path)
    return release


# ------------------------------------------------------------------ modules
def _decompress(path: str) -> bytes:
    if path.endswith(".ko"):
        with open(path, "rb") as f:
            return f.read()
    if path.endswith(".ko.xz"):
        with lzma.open(path) as f:
            return f.read()
    if path.endswith(".ko.gz"):
        with gzip.open(path) as f:
            return f.read()
    if path.endswith(".ko.zst"):
        zstd = shutil.which("zstd")
        if not zstd:
            raise ImageError("%s is zstd-compressed and the zstd program is missing" % path)
        return subprocess.run([zstd, "-q", "-dc", path], check=True, capture_output=True).stdout
    raise ImageError("%s: not a kernel module file (.ko, .ko.xz, .ko.gz, .ko.zst)" % path)


def modinfo(data: bytes, name: str = "module") -> Dict[str, List[str]]:
    """The .modinfo section of an ELF64 kernel module: key -> values."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ImageError("%s is not a 64-bit little-endian ELF file (not a kernel module)" % name)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise ImageError("%s: damaged ELF section table" % name)

    def section(i: int) -> Tuple[int, int, int]:
        base = shoff + i * shentsize
        sh_name, = struct.unpack_from("<I", data, base)
        sh_offset, sh_size = struct.unpack_from("<QQ", data, base + 0x18)
        return sh_name, sh_offset, sh_size

    _n, stroff, strsize = section(shstrndx)
    names = data[stroff:stroff + strsize]
    for i in range(shnum):
        sh_name, off, size = section(i)
        end = names.find(b"\0", sh_name)
        if names[sh_name:end] == b".modinfo":
            info: Dict[str, List[str]] = {}
            for item in data[off:off + size].split(b"\0"):
                if b"=" in item:
                    k, v = item.decode("utf-8", "replace").split("=", 1)
                    info.setdefault(k, []).append(v)
            return info
    raise ImageError("%s has no .modinfo section: not a kernel module" % name)


def vermagic_release(info: Dict[str, List[str]]) -> str:
    magic = (info.get("vermagic") or [""])[0]
    return magic.split(" ", 1)[0]


# -------------------------------------------------------------------- cpio
def _cpio_entries(data: bytes) -> Iterable[Tuple[str, int, bytes]]:
    """(name, mode, data) of every entry of concatenated newc archives,
    each optionally gzip-compressed."""
    pos = 0
    while pos < len(data):
        if data[pos] == 0:
            pos += 1
            continue
        if data[pos:pos + 2] == b"\x1f\x8b":
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            raw = d.decompress(data[pos:])
            consumed = len(data) - pos - len(d.unused_data)
            yield from _cpio_entries(raw)
            pos += consumed
            continue
        if data[pos:pos + 6] != b"070701":
            raise ImageError("initramfs: unknown archive format at byte %d" % pos)
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        npos = pos + 110
        name = data[npos:npos + namesize - 1].decode("utf-8", "replace")
        dpos = (npos + namesize + 3) & ~3
        body = data[dpos:dpos + filesize]
        pos = (dpos + filesize + 3) & ~3
        if name == "TRAILER!!!":
            continue
        yield name, mode, body


def read_initramfs(path: str) -> Dict[str, Tuple[int, bytes]]:
    """name -> (mode, data); later entries replace earlier ones, as in the kernel."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ImageError("cannot read initramfs %s: %s" % (path, e.strerror))
    out: Dict[str, Tuple[int, bytes]] = {}
    for name, mode, body in _cpio_entries(data):
        out[name[2:] if name.startswith("./") else name] = (mode, body)
    return out


class _Writer(object):
    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1
        self.dirs: Set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes) -> None:
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join("%08X" % v for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        self.ino += 1
        self.buf.write(hdr.encode() + nb)
        self.buf.write(b"\0" * (-(110 + len(nb)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def mkdirs(self, path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, stat.S_IFDIR | 0o755, b"")

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self.mkdirs(os.path.dirname(name))
        self._entry(name, stat.S_IFREG | mode, data)

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0, b"")
        self.buf.write(b"\0" * (-self.buf.tell() % 512))
        return gzip.compress(self.buf.getvalue(), 6, mtime=0)


# ------------------------------------------------------------ module trees
def _parse_dep(text: str) -> Dict[str, List[str]]:
    """modules.dep: module path -> dependency paths."""
    deps: Dict[str, List[str]] = {}
    for line in text.splitlines():
        if ":" in line:
            mod, rest = line.split(":", 1)
            deps[mod.strip()] = rest.split()
    return deps


def _closure(deps: Dict[str, List[str]], wanted: Sequence[str]) -> List[str]:
    by_name = {modname(p): p for p in deps}
    todo = [by_name[w] for w in wanted if w in by_name]
    seen: List[str] = []
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(deps.get(p, []))
    return seen


def _plain(path: str) -> str:
    return re.sub(r"\.ko\.(xz|gz|zst)$", ".ko", path)


def _module_tree(modules_dir: str, release: str) -> str:
    """lib/modules/<release> of an INSTALL_MOD_PATH, checked to hold a modules.dep."""
    root = os.path.join(modules_dir, "lib", "modules")
    if not os.path.isdir(root):
        raise ImageError("%s has no lib/modules: pass the INSTALL_MOD_PATH of "
                         "'make modules_install'" % modules_dir)
    tree = os.path.join(root, release)
    if not os.path.isdir(tree):
        have = sorted(os.listdir(root))
        raise ImageError("%s has no modules for kernel %s (the bzImage's release); it has: %s"
                         % (root, release, ", ".join(have) or "none"))
    depfile = os.path.join(tree, "modules.dep")
    if not os.path.isfile(depfile):
        raise ImageError("%s missing: 'make modules_install' runs depmod; run it again"
                         % depfile)
    return tree


def _aliases_of(alias_file: str, names: Set[str]) -> str:
    """The lines of a modules.alias that name one of these modules."""
    lines = []
    if os.path.isfile(alias_file):
        with open(alias_file) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "alias" and parts[2] in names:
                    lines.append(line.rstrip("\n"))
    return "\n".join(lines) + "\n"


class Overlay(object):
    """What goes on top of the base image, and the checks made on the way."""

    def __init__(self, base_initrd: str) -> None:
        self.base_initrd = base_initrd
        self.base = read_initramfs(base_initrd)
        rels = sorted({n.split("/")[2] for n in self.base
                       if n.startswith("lib/modules/") and n.count("/") >= 3})
        if len(rels) != 1:
            raise ImageError("%s: expected the modules of one kernel, found %s"
                             % (base_initrd, rels or "none"))
        self.base_release = rels[0]
        self.release = self.base_release
        self.writer = _Writer()
        self.replaced: List[str] = []
        self.added: List[str] = []
        self.modules_from: Optional[str] = None
        # The module tree the guest will see: path -> deps, and aliases.
        self.dep = _parse_dep(self._base_text("modules.dep"))
        self.alias = self._base_text("modules.alias")
        self.dirty = False

    def _base_text(self, name: str) -> str:
        entry = self.base.get("lib/modules/%s/%s" % (self.base_release, name))
        return entry[1].decode("utf-8", "replace") if entry else ""

    def _mdir(self) -> str:
        return "lib/modules/%s" % self.release

    def use_kernel(self, bzimage: str, modules_dir: Optional[str],
                   extra: Sequence[str] = ()) -> None:
        """Boot `bzimage`; take its NIC drivers (and `extra` modules) with
        their dependencies from `modules_dir` (an INSTALL_MOD_PATH)."""
        self.release = bzimage_release(bzimage)
        self.dep, self.alias = {}, ""
        self.dirty = True
        if modules_dir is None:
            return
        tree = _module_tree(modules_dir, self.release)
        self.modules_from = tree
        with open(os.path.join(tree, "modules.dep")) as f:
            full = _parse_dep(f.read())
        want = list(NIC_MODULES) + [m.replace("-", "_") for m in extra]
        chosen = _closure(full, want)
        missing = [m for m in extra if m.replace("-", "_") not in {modname(p) for p in full}]
        if missing:
            raise ImageError("module(s) %s not found in %s" % (", ".join(missing), tree))
        for p in chosen:
            data = _decompress(os.path.join(tree, p))
            self._check(data, p)
            self.writer.file("%s/%s" % (self._mdir(), _plain(p)), data)
            self.added.append(_plain(p))
        self.dep = {_plain(p): [_plain(d) for d in full[p]] for p in chosen}
        self.alias = _aliases_of(os.path.join(tree, "modules.alias"), {modname(p) for p in chosen})
        for name in _INDEX_FILES:
            src = os.path.join(tree, name)
            if os.path.isfile(src):
                with open(src, "rb") as f:
                    text = re.sub(rb"\.ko\.(xz|gz|zst)\b", b".ko", f.read())
                self.writer.file("%s/%s" % (self._mdir(), name), text)

    def _check(self, data: bytes, name: str) -> Dict[str, List[str]]:
        info = modinfo(data, name)
        built_for = vermagic_release(info)
        if built_for != self.release:
            raise ImageError(
                "%s was built for kernel %s (vermagic '%s') but the guest kernel is %s: "
                "build it against that kernel (its headers or its build tree)"
                % (name, built_for or "unknown", (info.get("vermagic") or [""])[0], self.release))
        return info

    def add_module(self, path: str) -> str:
        """A rebuilt module for the guest's kernel: replaces the module of
        the same name, or is added under extra/. Returns its path in the image."""
        data = _decompress(path)
        info = self._check(data, path)
        name = modname(path)
        current = [p for p in self.dep if modname(p) == name]
        by_name = {modname(p): p for p in self.dep}
        deps = [d for d in (info.get("depends") or [""])[0].split(",") if d]
        unknown = [d for d in deps if d.replace("-", "_") not in by_name]
        if unknown:
            raise ImageError("%s depends on %s, which the guest image does not have"
                             % (path, ", ".join(unknown)))
        rel = current[0] if current else "extra/%s.ko" % name
        self.dep[rel] = self._load_order([by_name[d.replace("-", "_")] for d in deps])
        if not current:
            self.alias += "".join("alias %s %s\n" % (a, name) for a in info.get("alias", []))
        self.writer.file("%s/%s" % (self._mdir(), rel), data)
        (self.replaced if current else self.added).append(rel)
        self.dirty = True
        return rel

    def _load_order(self, direct: Sequence[str]) -> List[str]:
        """All dependencies of a module with these direct ones, as modules.dep
        lists them: each before what it needs (modprobe loads from the end)."""
        order: List[str] = []

        def visit(p: str) -> None:
            if p in order:
                return
            for q in self.dep.get(p, []):
                visit(q)
            order.append(p)

        for d in direct:
            visit(d)
        return order[::-1]

    def write(self, out: str) -> None:
        """The base initramfs followed by the overlay archive."""
        if self.dirty:
            dep = "".join("%s: %s\n" % (p, " ".join(d)) if d else "%s:\n" % p
                          for p, d in self.dep.items())
            self.writer.file("%s/modules.dep" % self._mdir(), dep.encode())
            self.writer.file("%s/modules.alias" % self._mdir(), self.alias.encode())
        tmp = out + ".tmp"
        with open(self.base_initrd, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
            dst.write(b"\0" * (-dst.tell() % 4))
            dst.write(self.writer.finish())
        os.replace(tmp, out)

    def summary(self) -> "Summary":
        return Summary(self.release, self.base_release, list(self.replaced), list(self.added),
                       self.modules_from)


class Summary(NamedTuple):
    release: str  # the kernel the modules were checked against (uname -r in the VM)
    base_release: str  # the image's own kernel
    replaced: List[str]  # image paths under lib/modules/<release>/ of replaced modules
    added: List[str]  # and of added ones
    modules_from: Optional[str]  # the module tree taken from, with a kernel of one's own


def build_overlay(base_initrd: str, out: str, bzimage: Optional[str] = None,
                  modules_dir: Optional[str] = None, module_files: Sequence[str] = (),
                  extra_modules: Sequence[str] = ()) -> Summary:
    """Write `out` = the base image plus a developer's kernel modules; see the top."""
    ov = Overlay(base_initrd)
    if bzimage is not None:
        ov.use_kernel(bzimage, modules_dir, extra_modules)
    elif modules_dir is not None:
        raise ImageError("a modules directory needs the kernel it belongs to (a bzImage)")
    for m in module_files:
        ov.add_module(m)
    ov.write(out)
    return ov.summary()
