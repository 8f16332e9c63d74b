#!/usr/bin/env bash
# GPU smoke run (`make gpu-smoke`; by hand, never in CI or `make test`): on a
# machine with an NVIDIA GPU, no Docker and no Ray, check the two things the
# stand-in CI cannot:
#   1. mltrain built with cgo finds the GPUs through NVML, each with its UUID;
#   2. workspace/train.py --mode plain trains one quick epoch on that GPU
#      (real JPEGs in a small Food-11-shaped folder, random initial weights:
#      the machine may reach no network) and prints the events and the result
#      line mltrain lab reads;
#   3. the checkpoint that epoch wrote loads under this torch: torch.load's
#      default (weights_only=True from torch 2.6) and weights_only=False are
#      reported, and Lightning's resume, trainer.fit(ckpt_path=...) as
#      train.py's Ray mode calls it after a restart, trains one more epoch
#      through train.py's own modules; the "gpu-smoke: weights_only:" line
#      is the one to quote (only a failed Lightning resume fails the run);
#   4. the device ids a process with one GPU visible (CUDA_VISIBLE_DEVICES=
#      <UUID>, as a worker container gets) sees: "gpu-smoke: devices" lines,
#      on the host and, when Docker can run a GPU container of the local
#      image GPU_SMOKE_IMAGE (never pulled), inside it; otherwise it says why
#      that part was skipped.
# Without an NVIDIA GPU it says why and exits 0. With one, anything missing
# (torch, torchvision, lightning, Go, a C compiler) is a failure.
# Env: PYTHON (default python3), KEEP=1 keeps the work directory,
# GPU_SMOKE_IMAGE a local worker image (with torch) for the container check.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PY=${PYTHON:-python3}
CHECK="bench/gpu-smoke/check.py"

say() { echo "gpu-smoke: $*"; }
skip() { say "SKIP: $*"; exit 0; }
fail() { say "FAIL: $*" >&2; exit 1; }

if [ "${CI:-}" = "true" ]; then
  skip "CI=true; this needs a real NVIDIA GPU and is never part of CI"
fi

# The Python side first, so a machine without a GPU still learns what a GPU
# run would lack.
deps_ok=yes
if ! command -v "$PY" >/dev/null; then
  deps_ok="no $PY"
else
  say "Python packages train.py needs ($("$PY" --version 2>&1)):"
  "$PY" "$CHECK" deps || deps_ok="torch, torchvision, lightning and Pillow must all import (see MISSING above; pip install -r workspace/requirements.txt)"
fi

no_gpu() {
  [ "$deps_ok" = yes ] || say "note: a GPU run here would also fail: $deps_ok"
  skip "$1"
}
command -v nvidia-smi >/dev/null || no_gpu "no NVIDIA GPU here (nvidia-smi not found)"
# nvidia-smi exits non-zero when it finds no device as well as when it
# cannot reach the driver; either way there is no GPU to smoke-test.
LIST=$(nvidia-smi -L 2>&1) || no_gpu "no usable NVIDIA GPU here: nvidia-smi -L: $LIST"
COUNT=$(printf '%s\n' "$LIST" | grep -c '^GPU ' || true)
[ "$COUNT" -gt 0 ] || no_gpu "no NVIDIA GPU here (nvidia-smi lists none)"
say "nvidia-smi lists $COUNT GPU(s):"
printf '%s\n' "$LIST" | sed 's/^/  /'

[ "$deps_ok" = yes ] || fail "$deps_ok"
"$PY" "$CHECK" cuda || fail "torch cannot use the GPU nvidia-smi lists (install a CUDA build of torch)"
command -v go >/dev/null || fail "go not found: install Go to build mltrain"
command -v "${CC:-cc}" >/dev/null || command -v gcc >/dev/null ||
  fail "no C compiler: mltrain needs cgo for NVML (apt-get install gcc)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-smoke.XXXXXX")
if [ "${KEEP:-}" = 1 ]; then say "work directory: $WORK (kept)"; else trap 'rm -rf "$WORK"' EXIT; fi

say "building mltrain with cgo (NVML)"
CGO_ENABLED=1 go build -o "$WORK/mltrain" ./cmd/mltrain
"$WORK/mltrain" gpus --json >"$WORK/gpus.json" || fail "mltrain gpus --json failed: $(cat "$WORK/gpus.json")"
UUID=$("$PY" "$CHECK" gpus "$WORK/gpus.json" --expect "$COUNT") ||
  fail "mltrain gpus disagrees with nvidia-smi (above); full report: $(cat "$WORK/gpus.json")"
say "NVML ok: $COUNT GPU(s) with UUIDs; training on $UUID"

"$PY" "$CHECK" data "$WORK/Food-11"
mkdir "$WORK/run"
say "train.py --mode plain, one quick epoch, no pretrained weights"
# Run where checkpoints/ and lightning_logs/ may land; only the chosen GPU is
# visible, so the result must name that one.
if ! (cd "$WORK/run" && env -u MLTRAIN_ACCELERATOR CUDA_VISIBLE_DEVICES="$UUID" \
      timeout 900 "$PY" "$REPO/workspace/train.py" --mode plain --quick --epochs 1 --no-pretrained \
      --data-dir "$WORK/Food-11" --run-name gpu-smoke) >"$WORK/train.log" 2>&1; then
  tail -40 "$WORK/train.log" >&2
  fail "train.py exited non-zero (last lines above)"
fi
grep -E '^(MLTRAIN_EVENT|MLTRAIN_RESULT) ' "$WORK/train.log" | sed 's/^/  /'
"$PY" "$CHECK" log "$WORK/train.log" "$WORK/gpus.json" --uuid "$UUID" ||
  fail "train.py's events or result are not what mltrain lab expects (above)"

# train.py's result names its ModelCheckpoint's file (checkpoints/food11.ckpt
# under the run directory); the folder is the fallback.
CKPT=$("$PY" "$CHECK" ckpt "$WORK/train.log") || CKPT=$(ls "$WORK"/run/checkpoints/*.ckpt 2>/dev/null | head -1 || true)
case $CKPT in /*|"") ;; *) CKPT="$WORK/run/$CKPT" ;; esac
[ -n "$CKPT" ] && [ -f "$CKPT" ] || fail "train.py wrote no checkpoint (result line or $WORK/run/checkpoints/*.ckpt)"
say "restoring $CKPT under this torch (Lightning's resume: one more quick epoch)"
mkdir "$WORK/resume"
if ! (cd "$WORK/resume" && env -u MLTRAIN_ACCELERATOR CUDA_VISIBLE_DEVICES="$UUID" \
      timeout 900 "$PY" "$REPO/$CHECK" restore "$CKPT" --workspace "$REPO/workspace" \
      --data-dir "$WORK/Food-11" --epochs 1) >"$WORK/restore.log" 2>&1; then
  tail -40 "$WORK/restore.log" >&2
  fail "Lightning could not resume train.py's checkpoint (the path Ray Train's restart takes; above)"
fi
grep -E '^(gpu-smoke:|  (checkpoint|default|unsafe|resume|note)[ :])' "$WORK/restore.log" || true

DEV_OUT=$(CUDA_VISIBLE_DEVICES="$UUID" "$PY" "$CHECK" devices --uuid "$UUID" 2>&1) ||
  fail "a process with only $UUID visible does not see it as its one device: $DEV_OUT"
printf '%s\n' "$DEV_OUT"

# The same inside a worker-like container, only with a local image: no
# registry may be reachable, and a pull would test the wrong torch anyway.
container_devices() {
  command -v docker >/dev/null || { say "devices (container): skipped: docker not on PATH"; return 0; }
  docker info >/dev/null 2>&1 || { say "devices (container): skipped: docker cannot reach its daemon"; return 0; }
  if [ -z "${GPU_SMOKE_IMAGE:-}" ]; then
    say "devices (container): skipped: GPU_SMOKE_IMAGE is not set (a local image with torch; local mltrain images: $(docker images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -i mltrain | tr '\n' ' ' || true))"
    return 0
  fi
  docker image inspect "$GPU_SMOKE_IMAGE" >/dev/null 2>&1 ||
    { say "devices (container): skipped: no local image $GPU_SMOKE_IMAGE (not pulled)"; return 0; }
  local out rc=0
  out=$(docker run --rm --pull=never --gpus "device=$UUID" -v "$REPO/bench/gpu-smoke:/gpu-smoke:ro" \
    --entrypoint python3 "$GPU_SMOKE_IMAGE" /gpu-smoke/check.py devices --uuid "$UUID" \
    --where "container $GPU_SMOKE_IMAGE, --gpus device=$UUID" 2>&1) || rc=$?
  # 125: docker itself (no GPU runtime, bad flag); 126/127: no python3 in the image.
  case $rc in
    0) printf '%s\n' "$out" ;;
    125|126|127) say "devices (container): skipped: docker run exited $rc: $(printf '%s' "$out" | tail -3)" ;;
    *) printf '%s\n' "$out" >&2; fail "inside $GPU_SMOKE_IMAGE the GPU made visible is not its one device (above)" ;;
  esac
}
container_devices

say "PASS: NVML sees $COUNT GPU(s); train.py trained an epoch on $UUID and reported it; its checkpoint resumed"
