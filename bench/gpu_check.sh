#!/usr/bin/env bash
# On a machine with a CUDA GPU (python3 with torch and clirlib's requirements): the GPU path
# of the paper's ranker (tests/test_device.py), make test's verify draw with the GPU present,
# and the tests that train the ranker pinned to the CPU (conftest.py) and on the GPU.
# Logs go to $OUT (default bench/gpu_check/); a run's results: docs/timings.md, "The test
# suite and make verify on a GPU machine".   bash bench/gpu_check.sh
set -u
export PYTHONUNBUFFERED=1 CLIRLIB_PROGRESS=0 PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
T0=$(date +%s); t() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
if [ -d .whl ]; then  # packages the machine lacks, carried as wheels (the H200 image: bm25s, for verify's BM25 record)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=$PWD:/tmp/site OUT=${OUT:-bench/gpu_check}
mkdir -p "$OUT"
nvidia-smi -L; nproc
python3 -c "import torch,numpy,pandas,numba,scipy;print('torch',torch.__version__,'numpy',numpy.__version__,'pandas',pandas.__version__,'numba',numba.__version__,'scipy',scipy.__version__,torch.cuda.get_device_name(0))"
python3 -m clirlib generate --profile ci >/dev/null 2>&1; python3 -m clirlib generate --profile default >/dev/null 2>&1; t generated
# 0. what a user sees: train's summary line names the GPU
python3 -m clirlib train --data ci --lang fr --epochs 1 --quiet 2>&1 | head -1 | tee $OUT/0_train.txt; t step0
# 1. the GPU path's own tests (GPU determinism, closeness to the CPU, ci records verify on a GPU machine)
timeout 170 python3 -m pytest -q -p no:cacheprovider -rs --durations=8 tests/test_device.py > $OUT/1_device_tests.txt 2>&1; echo "rc=$?" >> $OUT/1_device_tests.txt
tail -25 $OUT/1_device_tests.txt; t step1
# 2. make test's verify draw (N=3 SEED=2) with the GPU present: CPU records retrained on the CPU
timeout 200 python3 -m clirlib records verify -n 3 --seed 2 > $OUT/2_verify.txt 2>&1; echo "rc=$?" >> $OUT/2_verify.txt
tail -12 $OUT/2_verify.txt; t step2
# 3. the training-number tests: pinned to the CPU (conftest) vs on the GPU (as before the pin)
FILES="tests/test_train.py tests/test_fast.py tests/test_losses.py tests/test_theory.py tests/test_convergence.py tests/test_ablations.py tests/test_experiments.py"
timeout 100 python3 -m pytest -q -p no:cacheprovider -n 12 $FILES > $OUT/3_suite_cpu.txt 2>&1; echo "rc=$?" >> $OUT/3_suite_cpu.txt
grep -E "^(FAILED|ERROR)|passed|failed|rc=" $OUT/3_suite_cpu.txt | tail -30; t step3a
CLIRLIB_DEVICE=cuda timeout 100 python3 -m pytest -q -p no:cacheprovider -n 12 $FILES > $OUT/3_suite_cuda.txt 2>&1; echo "rc=$?" >> $OUT/3_suite_cuda.txt
grep -E "^(FAILED|ERROR)|passed|failed|rc=" $OUT/3_suite_cuda.txt | tail -40; t step3b
