#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (UNTESTED: no GPU was at hand
# when it was written). In one run:
#  1. runs --interp cuda against the oracle on every reference model
#     (prefill and decode logits within cuda's refTol, CUDA graphs on and off),
#     the tensor-core GEMM and fused attention (split-K decode over long
#     caches, F16 caches), and the same attention cases in the host harness;
#  2. benchmarks decode (batch 1) and prefill (512 tokens) on synthesized
#     Llama-3.2-1B-shaped models (F16, Q8_0) and, with BIG=1, 8B-shaped
#     ones (LLAMA8B_CONFIG names a Llama-3.1-8B config.json: there is no
#     8B preset), printing tokens/s and the bandwidth poot bench reports.
#
# Needs Go, the NVIDIA driver (libcuda.so.1) and NVRTC on the loader path.
# Where no NVRTC is installed, point CUDA_ROOT at a tree unpacked by
# scripts/cuda-compile.sh (NVRTC 11.8 compiles for sm_80 and sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CUDA_ROOT:-}" ]; then
	export LD_LIBRARY_PATH="$CUDA_ROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	[ -e "$CUDA_ROOT/usr/lib/x86_64-linux-gnu/libnvrtc.so" ] ||
		ln -sf libnvrtc.so.11.2 "$CUDA_ROOT/usr/lib/x86_64-linux-gnu/libnvrtc.so"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
export CGO_ENABLED=0
echo "== reference models: --interp cuda against the oracle"
go test -count=1 -run 'TestGPUReferenceModels|TestGPUGemm|TestGPUFlashSplit|TestHostFlashSplit|TestHostHalfKV' -v ./cuda/ 2>&1 | grep -E 'device|difference|FAIL|ok|SKIP|---' | tail -60
go build -o /tmp/poot-cuda-check ./cmd/poot
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shapes="--preset=llama3.2-1b"
[ -n "${LLAMA8B_CONFIG:-}" ] && shapes="$shapes --config=$LLAMA8B_CONFIG"
for shape in $shapes; do
	for type in f16 q8_0; do
		preset=$(basename "${shape#*=}" .json)
		m="$work/$preset-$type.gguf"
		if ! /tmp/poot-cuda-check synth --family llama "$shape" --type "$type" --out "$m" >/dev/null; then
			echo "synth $preset $type failed"; continue
		fi
		echo "== bench $preset $type (prefill 512, decode 32)"
		timeout 300 /tmp/poot-cuda-check bench -m "$m" --interp cuda --prompt 512 --gen 32 --reps 2 || echo "bench failed"
		rm -f "$m"
	done
done
