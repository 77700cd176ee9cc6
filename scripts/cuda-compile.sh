#!/usr/bin/env bash
# Compiles every CUDA kernel the planner emits for the reference models and
# every family's tiny preset (prefill and decode steps), for the GEMV and
# the tensor-core GEMM of every weight dtype and for random graphs to
# CUBIN for sm_80 and sm_90 with NVRTC, which runs ptxas inside (so a
# kernel or an inline mma.sync that does not assemble fails), and the
# prefills generated for sm_75 for sm_75; then runs the host harness on
# every family's tiny preset (F32, Q8_0, K-quant and MXFP4 matrices), the GEMV
# and GEMM of every weight dtype, and fused attention (split-K for long
# decode caches; F16 and Q8_0 caches read in place) against the oracle. No GPU is
# needed.
#
# NVRTC 11.8 and ptxas come from Debian 12's non-free section: the script
# adds the component to apt's sources, downloads only the packages below
# (no dependencies are installed) and unpacks them under $CUDA_ROOT.
#
# Usage: scripts/cuda-compile.sh   (as root on Debian 12; CUDA_ROOT
# defaults to /opt/poot-cuda118, kept between runs)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${CUDA_ROOT:-/opt/poot-cuda118}
pkgs="libnvrtc11.2 libnvrtc-builtins11.8"
if [ ! -e "$root/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2" ]; then
	src=/etc/apt/sources.list.d/poot-nonfree.sources
	if [ ! -e "$src" ]; then
		printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$src"
	fi
	apt-get update -qq
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -qq $pkgs)
	mkdir -p "$root"
	for f in "$tmp"/*.deb; do dpkg -x "$f" "$root"; done
	rm -rf "$tmp"
fi
lib="$root/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
POOT_NVRTC="$lib/libnvrtc.so.11.2" POOT_CUDA_FAMILIES=1 CGO_ENABLED=0 \
	go test -count=1 -run "TestNVRTCCompile|TestHostSynthesizedFamilies|TestHostWeightDTypes|TestHostGemm|TestHostFlashSplit|TestHostHalfKV" -v ./cuda/ | grep -v "^=== RUN"
