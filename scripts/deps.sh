#!/usr/bin/env bash
# Install every Debian package the project needs (idempotent).
#
# Usage: scripts/deps.sh [--check]
#   --check   only report what is missing; install nothing (exit 1 if any)
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

case "${1:-}" in
-h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--check) check_only=1 ;;
'') check_only=0 ;;
*) die "unknown option '$1' (try --help)" ;;
esac

# Kernel the VMs boot and the modules are built for; its sources.
pkgs_kernel="linux-image-$SQCQ_KVER linux-headers-$SQCQ_KVER $SQCQ_KSRC_PKG"
# Host VM (L1) and what runs inside it: QEMU for L1 (TCG) and virtiofsd,
# LIO configuration, D-Bus for targetcli-fb.
pkgs_vm="qemu-system-x86 qemu-utils targetcli-fb python3-rtslib-fb dbus kmod procps util-linux"
# Nested guest (L2) initramfs and the workload.
pkgs_guest="busybox-static fio libaio-dev cpio xz-utils zstd"
# Building our modules and QEMU 7.2 (minimal x86_64-softmmu).
pkgs_build="build-essential dpkg-dev bc ninja-build meson pkg-config python3 python3-venv libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev flex bison"
# A full kernel (make kernel: objtool needs libelf, module signing libssl).
pkgs_kbuild="libelf-dev libssl-dev"
# Tests and report.
pkgs_test="spin python3-matplotlib"

all="$pkgs_kernel $pkgs_vm $pkgs_guest $pkgs_build $pkgs_kbuild $pkgs_test"

# Reads apt's status lines (dlstatus:N:PERCENT:TEXT, pmstatus:PKG:PERCENT:TEXT)
# and logs each phase at every 10%.
apt_progress() {
	local kind _f pct text last_kind='' last=-1 tenth
	while IFS=: read -r kind _f pct text; do
		case $kind in dlstatus|pmstatus) ;; *) continue ;; esac
		tenth=${pct%%.*}
		tenth=$((${tenth:-0} / 10))
		if [ "$kind" != "$last_kind" ] || [ "$tenth" -gt "$last" ]; then
			log "deps: $([ "$kind" = dlstatus ] && echo downloading || echo installing) ${pct%%.*}%: $text"
			last_kind=$kind last=$tenth
		fi
	done
}

missing=()
for p in $all; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# The sources must carry the image's upstream version, which the archive
# may already have moved past (linux-source-6.12 is one package for every
# 6.12 release): a newer one installed counts as missing.
ksrc_ok() {
	case "$(dpkg-query -W -f='${Version}' "$SQCQ_KSRC_PKG" 2>/dev/null)" in
	"$SQCQ_KSRC_UPSTREAM"-*) return 0 ;;
	*) return 1 ;;
	esac
}
if ! ksrc_ok && [[ " ${missing[*]} " != *" $SQCQ_KSRC_PKG "* ]]; then
	missing+=("$SQCQ_KSRC_PKG")
fi

if [ ${#missing[@]} -eq 0 ]; then
	log "deps: all $(echo $all | wc -w) packages present"
else
	[ "$check_only" = 1 ] && die "missing packages: ${missing[*]} (run 'make deps')"
	need_root "installing packages"
	export DEBIAN_FRONTEND=noninteractive
	log "deps: missing ${missing[*]}"
	log "deps: apt-get update"
	apt-get update -qq >/dev/null || die "apt-get update failed; check the Debian mirror in /etc/apt/sources.list*"
	for i in "${!missing[@]}"; do
		p=${missing[$i]}
		if [ "$p" = "$SQCQ_KSRC_PKG" ]; then
			v=$(apt-cache madison "$p" 2>/dev/null | awk -v u="$SQCQ_KSRC_UPSTREAM-" 'index($3, u) == 1 {print $3; exit}')
			[ -n "$v" ] || die "$p $SQCQ_KSRC_UPSTREAM-* (the sources of linux-image-$SQCQ_KVER) is not in the configured Debian archive (apt-cache madison $p); change scripts/versions.env to a kernel the archive has"
			missing[$i]="$p=$v"
			continue
		fi
		cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
		[ -n "$cand" ] && [ "$cand" != "(none)" ] ||
			die "package '$p' is not available from the configured Debian archive (apt-cache policy $p); the project needs it"
	done
	log "deps: apt-get install of ${#missing[@]} packages and their dependencies (a few minutes on a fresh machine; log: ${TMPDIR:-/tmp}/sqcq-apt.log)"
	# apt's machine-readable status (fd 3) becomes a line per tenth of
	# each phase, so a long install is not silent.
	apt-get install -y -qq --no-install-recommends --allow-downgrades \
		-o APT::Status-Fd=3 "${missing[@]}" 3>&1 >"${TMPDIR:-/tmp}/sqcq-apt.log" 2>&1 | apt_progress ||
		die "apt-get install failed for: ${missing[*]} (log: ${TMPDIR:-/tmp}/sqcq-apt.log)"
fi

# 'apt-get source qemu' needs a deb-src entry for bookworm.
if [ "$check_only" = 0 ] && ! grep -rqs '^deb-src .*bookworm\|^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	need_root "adding the deb-src entry"
	cat >/etc/apt/sources.list.d/sqcq-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	log "deps: added deb-src entries (/etc/apt/sources.list.d/sqcq-deb-src.sources)"
	apt-get update -qq >/dev/null || die "apt-get update failed after adding deb-src"
fi

# The modules must be built from the same upstream version as the headers.
ksrc_ok || die "$SQCQ_KSRC_PKG is version '$(dpkg-query -W -f='${Version}' "$SQCQ_KSRC_PKG" 2>/dev/null)' but linux-image-$SQCQ_KVER is $SQCQ_KSRC_UPSTREAM: install matching versions (apt-get install $SQCQ_KSRC_PKG=$SQCQ_KSRC_UPSTREAM-*) or change scripts/versions.env"
log "deps: ok"
