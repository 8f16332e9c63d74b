"""Helpers of the GPU smoke run (bench/gpu-smoke/run.sh); python3 check.py -h.

  deps                  which of torch, torchvision, lightning, PIL import (exit 1 if any does not)
  cuda                  whether torch sees a CUDA GPU (exit 1 if not)
  gpus FILE --expect N  check `mltrain gpus --json` output: N NVIDIA GPUs from NVML, each with
                        a GPU-... UUID; prints the first GPU's UUID
  data DIR              write a small Food-11-shaped image folder (needs PIL)
  log FILE GPUS --uuid U  check train.py --mode plain's events and result line against the
                        GPU that was made visible (U) and what NVML reported (GPUS)
  ckpt FILE             the checkpoint path train.py's result line names
  restore CKPT --workspace DIR --data-dir DIR --epochs N
                        load CKPT with torch.load's default and weights_only=False, then resume
                        it through train.py's modules as its Ray mode does (hw.py); prints the
                        weights_only verdict line; exit 1 only if Lightning's resume fails
  devices --uuid U [--where W]
                        what torch sees with only GPU U visible; exit 1 unless it is one device, U

Only data, restore and devices need more than the standard library (PIL;
torch and Lightning, hw.py); the checks are tested by
test_check.py (make py-check).
"""

import argparse
import json
import os
import random
import sys

import hw
from hw import norm_uuid

EVENT = "MLTRAIN_EVENT"
RESULT = "MLTRAIN_RESULT"
SPLITS = {"training": 4, "validation": 2, "evaluation": 2}  # images per class
NUM_CLASSES = 11


def check_gpus(report, expect):
    """Problems with a `mltrain gpus --json` report on a host where
    nvidia-smi listed `expect` GPUs."""
    problems = []
    gpus = report.get("gpus")
    if not isinstance(gpus, list):
        return ["no \"gpus\" list in mltrain gpus --json"]
    nv = [g for g in gpus if g.get("vendor") == "nvidia"]
    if len(nv) != expect:
        problems.append("NVML (mltrain gpus) reports %d NVIDIA GPU(s), nvidia-smi lists %d; problems: %s" % (
            len(nv), expect, "; ".join("%s: %s" % (p.get("code"), p.get("message"))
                                       for p in report.get("problems") or []) or "none"))
    for g in nv:
        if not str(g.get("uuid", "")).startswith("GPU-"):
            problems.append("GPU %s (%s) has no NVML UUID (GPU-...): %r" % (g.get("index"), g.get("name"),
                                                                          g.get("uuid")))
        if g.get("source") != "nvml":
            problems.append("GPU %s was not found through NVML (source %r)" % (g.get("index"), g.get("source")))
    return problems


def pick_gpu(report):
    """The GPU to train on: the first NVIDIA one without MIG (a MIG GPU's
    UUID makes no CUDA device visible), else the first NVIDIA one."""
    nv = [g for g in report["gpus"] if g.get("vendor") == "nvidia"]
    return next((g for g in nv if not g.get("mig")), nv[0])


def parse_log(text):
    """The MLTRAIN_EVENT objects and the last MLTRAIN_RESULT object in text."""
    events, result = [], None
    for line in text.splitlines():
        for marker in (EVENT, RESULT):
            i = line.find(marker + " ")
            if i < 0:
                continue
            try:
                obj = json.JSONDecoder().raw_decode(line[i + len(marker) + 1:].lstrip())[0]
            except ValueError:
                continue
            if marker == EVENT:
                events.append(obj)
            else:
                result = obj
    return events, result


def gpu_problems(what, gpu, uuid, nvml_gpus):
    """Problems with the "gpu" object train.py printed in `what`."""
    if not isinstance(gpu, dict):
        return ["%s names no GPU" % what]
    out = []
    if gpu.get("accelerator") != "gpu":
        out.append("%s computed on %r, not the GPU" % (what, gpu.get("accelerator")))
    name = gpu.get("name")
    if not name:
        out.append("%s names no GPU (torch saw none: gpu=%s)" % (what, json.dumps(gpu)))
        return out
    want = [g for g in nvml_gpus if norm_uuid(g.get("uuid")) == norm_uuid(uuid)]
    if want and name != want[0].get("name"):
        out.append("%s names GPU %r, but the GPU made visible (%s) is %r" % (what, name, uuid, want[0].get("name")))
    if gpu.get("uuid") and norm_uuid(gpu["uuid"]) != norm_uuid(uuid):
        out.append("%s ran on GPU %s, not the one made visible (%s)" % (what, gpu["uuid"], uuid))
    return out


def check_log(text, nvml_gpus, uuid):
    """Problems with a `train.py --mode plain` log: the events start, worker
    (with the GPU), epoch, and the result line (mode plain, epochs >= 1, the GPU)."""
    events, res = parse_log(text)
    kinds = [e.get("event") for e in events]
    problems = []
    for k in ("start", "worker", "epoch"):
        if k not in kinds:
            problems.append("no %s event (saw: %s)" % (k, ", ".join(kinds) or "none"))
    start = next((e for e in events if e.get("event") == "start"), None)
    if start is not None and start.get("mode") != "plain":
        problems.append("start event has mode %r, not plain" % start.get("mode"))
    worker = next((e for e in events if e.get("event") == "worker"), None)
    if worker is not None:
        problems += gpu_problems("the worker event", worker.get("gpu"), uuid, nvml_gpus)
    if res is None:
        problems.append("no MLTRAIN_RESULT line")
        return problems
    if res.get("mode") != "plain":
        problems.append("result mode is %r, not plain" % res.get("mode"))
    if not isinstance(res.get("epochs"), int) or res["epochs"] < 1:
        problems.append("result says %r epochs, want at least 1" % res.get("epochs"))
    problems += gpu_problems("the result", res.get("gpu"), uuid, nvml_gpus)
    return problems


def make_data(root, seed=11):
    """training/validation/evaluation, each with class_00..class_10 holding a
    few small JPEGs named <class>_<n>.jpg, as `mltrain data food11` lays out
    Food-11. Each class has its own base colour so there is something to learn."""
    from PIL import Image

    rng = random.Random(seed)
    n = 0
    for split, per_class in SPLITS.items():
        for c in range(NUM_CLASSES):
            d = os.path.join(root, split, "class_%02d" % c)
            os.makedirs(d, exist_ok=True)
            base = ((c * 23) % 256, (c * 71) % 256, (c * 131) % 256)
            for i in range(per_class):
                w, h = rng.randint(48, 96), rng.randint(48, 96)
                img = Image.new("RGB", (w, h), base)
                px = img.load()
                for _ in range(w * h // 8):
                    x, y = rng.randrange(w), rng.randrange(h)
                    px[x, y] = tuple(min(255, max(0, v + rng.randint(-60, 60))) for v in base)
                img.save(os.path.join(d, "%d_%d.jpg" % (c, i)), "JPEG", quality=85)
                n += 1
    return n


def deps():
    ok = True
    for mod in ("torch", "torchvision", "lightning", "PIL"):
        try:
            m = __import__(mod)
            print("  %-12s %s" % (mod, getattr(m, "__version__", "?")))
        except Exception as e:  # ImportError, or a broken CUDA library under it
            ok = False
            print("  %-12s MISSING (%s: %s)" % (mod, type(e).__name__, e))
    return 0 if ok else 1


def cuda():
    import torch
    if not torch.cuda.is_available():
        print("  torch %s sees no CUDA GPU (a CPU-only build? torch.version.cuda=%s)" % (
            torch.__version__, torch.version.cuda))
        return 1
    for i in range(torch.cuda.device_count()):
        print("  cuda:%d %s" % (i, torch.cuda.get_device_name(i)))
    return 0


def result_checkpoint(text):
    """The checkpoint path of train.py's result line (its ModelCheckpoint's
    best_model_path), or "" when there is none."""
    _, res = parse_log(text)
    return str((res or {}).get("checkpoint") or "")


def restore(a):
    r = hw.restore(a.ckpt, a.workspace, a.data_dir, a.epochs)
    line, ok = hw.restore_verdict(r)
    for key in ("default", "unsafe", "resume"):
        if r.get(key):
            print("  %s load: %s" % (key, r[key]), file=sys.stderr)
    # Reported, not failed: which epoch Lightning goes on from is its own
    # business; the smoke fails only when the resume itself does.
    for note in hw.resume_notes(r):
        print("  note: " + note, file=sys.stderr)
    print(line)
    return 0 if ok else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("deps")
    sub.add_parser("cuda")
    g = sub.add_parser("gpus")
    g.add_argument("file")
    g.add_argument("--expect", type=int, required=True)
    d = sub.add_parser("data")
    d.add_argument("dir")
    lg = sub.add_parser("log")
    lg.add_argument("file")
    lg.add_argument("gpus")
    lg.add_argument("--uuid", required=True)
    ck = sub.add_parser("ckpt")
    ck.add_argument("file")
    rs = sub.add_parser("restore")
    rs.add_argument("ckpt")
    rs.add_argument("--workspace", required=True)
    rs.add_argument("--data-dir", required=True)
    rs.add_argument("--epochs", type=int, required=True, help="the epochs of the run that wrote CKPT")
    dv = sub.add_parser("devices")
    dv.add_argument("--uuid", required=True)
    dv.add_argument("--where", default="host process")
    a = p.parse_args(argv)
    if a.cmd == "deps":
        return deps()
    if a.cmd == "cuda":
        return cuda()
    if a.cmd == "restore":
        return restore(a)
    if a.cmd == "devices":
        d = hw.see_devices()
        print(hw.device_line(d, a.uuid, a.where))
        problems = hw.device_problems(d, a.uuid)
        for pr in problems:
            print("  " + pr, file=sys.stderr)
        return 1 if problems else 0
    if a.cmd == "ckpt":
        with open(a.file) as f:
            path = result_checkpoint(f.read())
        if not path:
            print("  train.py's result line names no checkpoint", file=sys.stderr)
            return 1
        print(path)
        return 0
    if a.cmd == "data":
        print("wrote %d images under %s" % (make_data(a.dir), a.dir), file=sys.stderr)
        return 0
    if a.cmd == "gpus":
        with open(a.file) as f:
            report = json.load(f)
        problems = check_gpus(report, a.expect)
        for pr in problems:
            print("  " + pr, file=sys.stderr)
        if problems:
            return 1
        for gpu in report["gpus"]:
            print("  NVML: GPU %s %s %s" % (gpu["index"], gpu["name"], gpu["uuid"]), file=sys.stderr)
        print(pick_gpu(report)["uuid"])
        return 0
    with open(a.file) as f:
        text = f.read()
    with open(a.gpus) as f:
        nvml_gpus = json.load(f)["gpus"]
    problems = check_log(text, nvml_gpus, a.uuid)
    for pr in problems:
        print("  " + pr, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
