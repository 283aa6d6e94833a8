#!/usr/bin/env bash
# Install nettune onto a guest (or into a staging directory with --destdir).
#
#   guest/install.sh [--destdir DIR] [--prefix /usr/local] [--profile NAME] [--no-enable]
#
# Installs the package to PREFIX/lib/nettune, the command to PREFIX/sbin/nettune,
# nettune.service and nettune-reapply@.service to /etc/systemd/system, the udev
# rule to /etc/udev/rules.d, and /etc/nettune.conf (kept when it exists; --profile
# sets its profile). Without --destdir and with systemd running, it enables the
# boot unit and reloads udev rules.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
destdir=""
prefix=/usr/local
profile=""
enable=1

die() { echo "install.sh: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --destdir) [ $# -ge 2 ] || die "--destdir needs a directory"; destdir=$2; shift 2 ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a path"; prefix=$2; shift 2 ;;
    --profile) [ $# -ge 2 ] || die "--profile needs a name"; profile=$2; shift 2 ;;
    --no-enable) enable=0; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done

case "$prefix" in /*) ;; *) die "--prefix must be an absolute path, not '$prefix'" ;; esac
case "$profile" in ""|throughput|latency|forwarding) ;;
  *) die "--profile must be throughput, latency or forwarding, not '$profile'" ;; esac
if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
  die "installing onto this system needs root (or use --destdir DIR)"
fi
if [ -z "$destdir" ]; then
  command -v python3 >/dev/null || die "python3 is not installed (nettune needs Python 3.9 or newer)"
  python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
    || die "python3 is older than 3.9"
  command -v ethtool >/dev/null || [ -x /usr/sbin/ethtool ] || [ -x /sbin/ethtool ] \
    || echo "install.sh: warning: ethtool is not installed; ethtool settings will be skipped" >&2
fi

lib="$destdir$prefix/lib/nettune"
sbin="$destdir$prefix/sbin"
etc="$destdir/etc"

install -d -m 0755 "$lib/nettune" "$sbin" "$etc/systemd/system" "$etc/udev/rules.d"
install -m 0644 "$here"/nettune/*.py "$lib/nettune/"
cat > "$sbin/nettune.tmp" <<WRAPPER
#!/usr/bin/env python3
import sys
sys.path.insert(0, "$prefix/lib/nettune")
from nettune.cli import main
sys.exit(main())
WRAPPER
chmod 0755 "$sbin/nettune.tmp"
mv "$sbin/nettune.tmp" "$sbin/nettune"

for unit in nettune.service nettune-reapply@.service; do
  sed "s#/usr/local/sbin/nettune#$prefix/sbin/nettune#g" "$here/systemd/$unit" > "$etc/systemd/system/$unit"
  chmod 0644 "$etc/systemd/system/$unit"
done
install -m 0644 "$here/udev/90-nettune.rules" "$etc/udev/rules.d/90-nettune.rules"

if [ ! -e "$etc/nettune.conf" ]; then
  install -m 0644 "$here/etc/nettune.conf" "$etc/nettune.conf"
  echo "installed $etc/nettune.conf"
fi
if [ -n "$profile" ]; then
  sed -i "s/^profile = .*/profile = $profile/" "$etc/nettune.conf"
  grep -q "^profile = $profile\$" "$etc/nettune.conf" \
    || die "could not set the profile in $etc/nettune.conf (no 'profile =' line under [nettune])"
fi

echo "installed nettune to $sbin/nettune"
if [ -z "$destdir" ] && [ "$enable" -eq 1 ]; then
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable nettune.service
    echo "enabled nettune.service (applies /etc/nettune.conf at boot)"
  else
    echo "install.sh: systemd is not running: run '$prefix/sbin/nettune apply' from your init system" >&2
  fi
  if command -v udevadm >/dev/null; then
    udevadm control --reload || echo "install.sh: warning: udevadm control --reload failed" >&2
  fi
fi
