#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine, in one run of a few minutes:
#  1. --interp cuda against the oracle on every reference model (prefill and
#     decode logits within cuda's refTol, CUDA graphs on and off), the
#     tensor-core GEMM of every weight dtype, fused attention (split-K
#     decode over long caches, F16 caches) and the device's copy bandwidth;
#  2. poot bench --interp cuda on synthesized Llama-3.2-1B-shaped models
#     (TYPES, default F16, Q8_0, Q4_K; with BIG=1 also Llama-3.1-8B-shaped
#     ones of BIG_TYPES, default F16): prefill of 512 tokens, 32 decode
#     steps, tokens/s and decode's fraction of the device's copy
#     bandwidth; with PROFILE=1, the 1B-shaped models' per-kernel times
#     too (POOT_CUDA_PROFILE);
#  3. where python3 has torch and transformers, the same shapes with random
#     F16 weights in transformers (scripts/hf-bench.py, static cache), and
#     the ratio;
# then prints a table. Logs go to $LOGS (default: a temporary folder).
#
# Needs the NVIDIA driver (libcuda.so.1) and NVRTC (libnvrtc.so.*: found on
# the loader path, under /usr/local/cuda* or in python's nvidia packages;
# CUDA_ROOT may name a tree unpacked by scripts/cuda-compile.sh). With Go
# it builds poot and the cuda tests; without, POOT_BIN names a folder
# holding them prebuilt (CGO_ENABLED=0 go build -o $POOT_BIN/poot
# ./cmd/poot; go test -c -o $POOT_BIN/cuda.test ./cuda). The reference
# models are read from ../shared/refmodels, or REFMODELS.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
logs=${LOGS:-$(mktemp -d)}
mkdir -p "$logs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# NVRTC: the loader's, else the first found in the usual places.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
	for d in ${CUDA_ROOT:+$CUDA_ROOT/usr/lib/x86_64-linux-gnu} /usr/local/cuda/lib64 /usr/local/cuda*/lib64 \
		/usr/local/cuda*/targets/x86_64-linux/lib $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' 2>/dev/null); do
		if ls "$d"/libnvrtc.so* >/dev/null 2>&1; then
			export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
			[ -e "$d/libnvrtc.so" ] || { ln -sf "$(ls "$d"/libnvrtc.so.* | head -1)" "$work/libnvrtc.so" && export LD_LIBRARY_PATH="$work:$LD_LIBRARY_PATH"; }
			break
		fi
	done
fi
echo "NVRTC from ${LD_LIBRARY_PATH:-the loader cache}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader

if [ -n "${REFMODELS:-}" ] && [ ! -e ../shared/refmodels ]; then
	mkdir -p ../shared && ln -s "$REFMODELS" ../shared/refmodels
fi
bin=${POOT_BIN:-}
if [ -z "$bin" ]; then
	bin=$work/bin
	CGO_ENABLED=0 go build -o "$bin/poot" ./cmd/poot || exit 1
	CGO_ENABLED=0 go test -c -o "$bin/cuda.test" ./cuda || exit 1
fi
bin=$(cd "$bin" && pwd)

echo "== the cuda interpreter against the oracle on the GPU"
(cd cuda && timeout "${TEST_TIMEOUT:-240}" "$bin/cuda.test" -test.count=1 -test.v -test.timeout=300s \
	-test.run 'TestGPU') >"$logs/gpu-tests.log" 2>&1
echo "gpu tests: exit $?"
grep -E '^(=== RUN|--- |    .*(device|difference|error|bound|bandwidth|FAIL))|^(ok|FAIL|PASS|panic)' "$logs/gpu-tests.log" |
	grep -v '^=== RUN' | head -150

hf=no
python3 -c 'import torch, transformers; assert torch.cuda.is_available()' 2>/dev/null && hf=yes
shapes="llama3.2-1b"
[ "${BIG:-0}" = 1 ] && shapes="$shapes llama3.1-8b"
rows=()
for shape in $shapes; do
	peer="-"
	if [ $hf = yes ]; then
		if timeout 180 python3 scripts/hf-bench.py --preset "$shape" >"$logs/hf-$shape.json" 2>"$logs/hf-$shape.err"; then
			cat "$logs/hf-$shape.json"
		else
			echo "transformers $shape failed:"; tail -5 "$logs/hf-$shape.err"
		fi
	fi
	types=${TYPES:-f16 q8_0 q4_k}
	[ "$shape" = llama3.1-8b ] && types=${BIG_TYPES:-f16}
	for type in $types; do
		m="$work/$shape-$type.gguf"
		if ! "$bin/poot" synth --family llama --preset "$shape" --type "$type" --out "$m" >/dev/null; then
			echo "synth $shape $type failed"; continue
		fi
		echo "== poot bench $shape $type --interp cuda (prefill 512, decode 32)"
		timeout 240 "$bin/poot" bench -m "$m" --interp cuda --load mmap --prompt 512 --gen 32 --reps 3 --json \
			>"$logs/bench-$shape-$type.json" 2>"$logs/bench-$shape-$type.err" || { echo "bench failed:"; tail -20 "$logs/bench-$shape-$type.err"; }
		cat "$logs/bench-$shape-$type.json"
		if [ "${PROFILE:-0}" = 1 ] && [ "$shape" = llama3.2-1b ]; then
			POOT_CUDA_PROFILE=1 timeout 120 "$bin/poot" bench -m "$m" --interp cuda --load mmap --prompt 512 --gen 32 --reps 1 2>&1 |
				grep -A12 '^cuda profile'
		fi
		rm -f "$m"
		rows+=("$shape $type")
	done
done

echo
echo "| shape | weights | poot pp512 t/s | poot tg32 t/s | GB/s | of copy bw | transformers f16 pp512 | tg32 | poot/transformers pp, tg |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for r in "${rows[@]}"; do
	set -- $r
	python3 - "$logs/bench-$1-$2.json" "$logs/hf-$1.json" "$1" "$2" <<'EOF'
import json, sys
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
b, h, shape, typ = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3], sys.argv[4]
if b is None:
    print(f"| {shape} | {typ} | failed | | | | | | |"); sys.exit()
pp, tg = b["prompt_tokens_per_s"], b["gen_tokens_per_s"]
row = f"| {shape} | {typ} | {pp:.0f} | {tg:.1f} | {b['gen_bandwidth_gb_per_s']:.0f} | {100*b['bandwidth_fraction']:.0f}% of {b['peak_bandwidth_gb_per_s']:.0f} |"
if h:
    row += f" {h['prompt_tokens_per_s']:.0f} | {h['gen_tokens_per_s']:.1f} | {pp/h['prompt_tokens_per_s']:.2f}×, {tg/h['gen_tokens_per_s']:.2f}× |"
else:
    row += " - | - | - |"
print(row)
EOF
done
echo "logs in $logs"
