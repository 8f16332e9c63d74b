"""Food-11 MobileNetV2 fine-tuning for the mltrain lab.

One script replaces the course's git branches; flags pick the exercise (its
parts are the modules beside it: food11_model.py, ray_modes.py, lab_events.py):

  plain   Lightning on the GPU the job was given         (branch "lightning")
  ray     Ray Train TorchTrainer, N workers, GPU fraction (branches "ray", "fault_tolerance")
  tune    Ray Tune, ASHA over batch size and dropout      (branch "tune")

Examples (from Jupyter, in this directory):

  ray job submit --runtime-env runtime.json --working-dir . \
      --entrypoint-num-gpus 1 --entrypoint-num-cpus 8 -- python train.py --mode plain
  ray job submit --runtime-env runtime.json --working-dir . -- \
      python train.py --mode ray --workers 2
  ray job submit --runtime-env runtime.json --working-dir . -- \
      python train.py --mode ray --max-failures 2
  ray job submit --runtime-env runtime.json --working-dir . -- \
      python train.py --mode tune --num-samples 16

What `mltrain lab` reads from the job log (the contract; one JSON object per
line after the marker, always with "event" and "time" = Unix seconds):

  MLTRAIN_EVENT {"event": "start", "mode", "run", "argv", "node_ip", "cpu"}
  MLTRAIN_EVENT {"event": "driver", "mode", "run", "node_id", "node_ip"}   ray, tune
      the node whose raylet this driver is attached to: Ray finds it by
      address, so where nodes share one (the host network of a lab that
      accepts other hosts) it may be a worker's, and that worker's stop
      ends the job.
  MLTRAIN_EVENT {"event": "worker", "mode", "rank", "world_size", "node_ip",
                 "node_id" (ray, tune), "gpu": {...}, "run"}
  MLTRAIN_EVENT {"event": "epoch", "epoch", "run", "metrics": {...}}    rank 0, after validation
  MLTRAIN_EVENT {"event": "checkpoint", "mode": "ray", "run", "rank": 0, "epoch": E,
                 "checkpoint": PATH, "name": DIR, "node_ip", "registered": bool}
      ray mode, rank 0, printed only after ray.train.report(checkpoint=...) has
      returned; "registered": true once Ray Train's controller confirms it holds
      the checkpoint (ray.train.get_all_reported_checkpoints, Train V2, the
      default from Ray 2.51), so a worker stopped after this line resumes from
      this checkpoint or a later one. PATH is the checkpoint's path exactly as
      Ray reports it: on the storage filesystem, without the URI scheme, e.g.
      "ray/RUN/checkpoint_epoch_000003" for --storage-path s3://ray (bucket
      "ray", key prefix "RUN/checkpoint_epoch_000003/"). DIR is its last part:
      checkpoint_epoch_EEEEEE (zero-padded epoch) where ray.train.report takes
      checkpoint_dir_name (every Ray the lab supports), else Ray's own name.
  MLTRAIN_EVENT {"event": "resume", "mode", "rank", "checkpoint": PATH, "name": DIR,
                 "epoch": E, "node_ip", "node_id", "run"}
      a restarted worker got a checkpoint from Ray; PATH as above (as Ray hands
      it over), E the last finished epoch it holds (training goes on at E+1;
      null if it cannot be told).
  MLTRAIN_RESULT {...}   once, at the end. Tune mode: every trial carries
      "end": "max_t" (ran max_t iterations) | "scheduler" (ASHA stopped it) |
      "script" (the trainable returned on its own before max_t) | "error", and
      the summary counts them: "completed", "stopped_by_scheduler",
      "ended_by_script", "errored"; "stopped_early" is kept, equal to
      "stopped_by_scheduler", for readers of the older summary.
"""

import argparse
import json
import os
import sys
import time
import uuid

# Ray folds log lines that differ only in numbers ("[repeated 2x across
# cluster]"); the per-worker event lines must all reach the job log.
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# pyarrow's S3 client (Ray Train storage) needs a region even for MinIO.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

from food11_model import common_callbacks, make_loaders, make_module, trainer_limits  # noqa: E402
from lab_events import emit, gpu_info, metrics_of, node_ip, result  # noqa: E402

# Checkpoints kept in storage per run (ray) or per trial (tune): bounded so
# MinIO does not grow by epochs x trials x ~30 MB every run. Ray never
# deletes the newest, which is the one fault tolerance resumes from.
DEFAULT_KEEP = {"ray": 2, "tune": 1}

# The course's configuration (gourmetgram-train, Lightning branches).
BASE_CONFIG = {
    "initial_epochs": 5,
    "total_epochs": 20,
    "patience": 5,
    "batch_size": 32,
    "lr": 1e-4,
    "fine_tune_lr": 1e-6,
    "model_architecture": "MobileNetV2",
    "dropout_probability": 0.5,
    "random_horizontal_flip": 0.5,
    "random_rotation": 15,
    "color_jitter_brightness": 0.2,
    "color_jitter_contrast": 0.2,
    "color_jitter_saturation": 0.2,
    "color_jitter_hue": 0.1,
}


def env_flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def positive_int(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1, got %s" % s)
    return v


def fraction(s):
    v = float(s)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1, got %s" % s)
    return v

def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Food-11 MobileNetV2 fine-tuning (mltrain lab)")
    p.add_argument("--mode", choices=["plain", "ray", "tune"], default="plain",
                   help="plain Lightning, Ray Train, or Ray Tune")
    p.add_argument("--workers", type=positive_int, default=1, help="Ray Train workers (mode ray)")
    p.add_argument("--gpu-fraction", type=fraction, default=None,
                   help="GPU per Ray Train worker or Tune trial (default 1 for ray, 0.5 for tune)")
    p.add_argument("--cpus-per-worker", type=float, default=None,
                   help="CPUs per Ray Train worker or Tune trial (default 8 for ray, 4 for tune)")
    p.add_argument("--max-failures", type=int, default=0,
                   help="Ray Train restarts after a worker failure (fault tolerance)")
    p.add_argument("--epochs", type=positive_int, default=None,
                   help="total epochs (default 20; 2 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="a few batches per epoch: rehearsal and smoke runs")
    p.add_argument("--num-samples", type=positive_int, default=16, help="Tune trials (mode tune)")
    p.add_argument("--max-concurrent-trials", type=positive_int, default=4, help="Tune trials at once")
    p.add_argument("--run-name", default=None,
                   help="Ray Train/Tune run name: the folder in the storage bucket")
    p.add_argument("--storage-path", default=os.environ.get("MLTRAIN_STORAGE_PATH", "s3://ray"),
                   help="where Ray Train/Tune write checkpoints (default s3://ray, the lab's MinIO)")
    p.add_argument("--data-dir", default=os.environ.get("FOOD11_DATA_DIR", "Food-11"),
                   help="Food-11 root holding training/ validation/ evaluation/")
    p.add_argument("--fake-data", action="store_true",
                   help="random images instead of Food-11 and no pretrained weights (no download at all)")
    p.add_argument("--no-pretrained", action="store_true", default=env_flag("MLTRAIN_NO_PRETRAINED"),
                   help="start from random weights instead of downloading ImageNet's (hosts without network; "
                        "default from MLTRAIN_NO_PRETRAINED=1)")
    p.add_argument("--keep-checkpoints", type=int, default=None,
                   help="checkpoints kept in storage: ray mode keeps the N newest (default 2), tune mode the N "
                        "best by val_accuracy per trial (default 1); the newest always stays; 0 keeps all")
    p.add_argument("--batch-size", type=positive_int, default=None, help="override the batch size")
    p.add_argument("--data-workers", type=int, default=None, help="DataLoader worker processes")
    args = p.parse_args(argv)
    if args.epochs is None:
        args.epochs = 2 if args.quick else BASE_CONFIG["total_epochs"]
    if args.gpu_fraction is None:
        args.gpu_fraction = 0.5 if args.mode == "tune" else 1.0
    if args.cpus_per_worker is None:
        args.cpus_per_worker = 4.0 if args.mode == "tune" else 8.0
    if args.cpus_per_worker <= 0:
        p.error("--cpus-per-worker must be positive")
    if args.max_failures < 0:
        p.error("--max-failures must be 0 or more")
    if args.keep_checkpoints is None:
        args.keep_checkpoints = DEFAULT_KEEP.get(args.mode, 0)
    if args.keep_checkpoints < 0:
        p.error("--keep-checkpoints must be 0 (keep all) or more")
    if args.run_name is None:
        args.run_name = default_run_name(args.mode)
    return args


def default_run_name(mode, environ=None):
    """A run of its own for every job: Ray Train reloads an existing run's
    checkpoint state, so two jobs sharing a name (three pasted in the same
    second) would resume from each other. Under a Ray job the name is the
    job's submission id: Ray's JobSupervisor hands the driver its job config,
    metadata["job_submission_id"] included, in RAY_JOB_CONFIG_JSON_ENV_VAR
    (dashboard/modules/job/job_supervisor.py). Elsewhere: time plus a random
    suffix. Pass --run-name to continue a run."""
    environ = os.environ if environ is None else environ
    try:
        meta = json.loads(environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}").get("metadata") or {}
        sid = meta.get("job_submission_id")
    except (ValueError, AttributeError):
        sid = None
    if sid:
        return "food11-%s-%s" % (mode, sid)
    return "food11-%s-%s-%s" % (mode, time.strftime("%Y%m%d-%H%M%S"), uuid.uuid4().hex[:6])

def make_config(args):
    """The training config every process gets (driver, Train workers, trials)."""
    cfg = dict(BASE_CONFIG)
    cfg["total_epochs"] = args.epochs
    cfg["initial_epochs"] = min(BASE_CONFIG["initial_epochs"], max(args.epochs - 1, 0))
    if args.batch_size:
        cfg["batch_size"] = args.batch_size
    cfg["quick"] = args.quick
    cfg["fake_data"] = args.fake_data
    cfg["pretrained"] = not (args.fake_data or args.no_pretrained)
    cfg["data_dir"] = args.data_dir
    # Decided once in the driver: in the lab's CPU rehearsal the workers
    # advertise logical GPUs so scheduling matches the lesson, but compute
    # must stay on the CPU.
    cfg["cpu"] = os.environ.get("MLTRAIN_ACCELERATOR", "").lower() == "cpu"
    default_workers = 2 if args.quick else 16
    cfg["data_workers"] = args.data_workers if args.data_workers is not None else \
        max(1, min(default_workers, int(args.cpus_per_worker)))
    cfg["run_name"] = args.run_name
    cfg["mode"] = args.mode
    return cfg

# ---------------------------------------------------------------- plain ----

def run_plain(args, cfg):
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import ModelCheckpoint

    torch.set_float32_matmul_precision("medium")
    emit("worker", mode="plain", rank=0, world_size=1, node_ip=node_ip(), gpu=gpu_info(cfg), run=cfg["run_name"])
    train_loader, val_loader, test_loader = make_loaders(cfg)
    model = make_module(cfg)
    ckpt = ModelCheckpoint(dirpath="checkpoints/", filename="food11", monitor="val_loss", mode="min", save_top_k=1)
    trainer = L.Trainer(
        max_epochs=cfg["total_epochs"],
        accelerator="cpu" if cfg["cpu"] else "gpu",
        devices="auto",
        callbacks=[ckpt] + common_callbacks(cfg),
        enable_progress_bar=sys.stdout.isatty(),
        **trainer_limits(cfg))
    started = time.time()
    trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
    fit_seconds = time.time() - started
    tested = trainer.test(model, dataloaders=test_loader)
    result({"mode": "plain", "run": cfg["run_name"], "epochs": trainer.current_epoch,
            "fit_seconds": round(fit_seconds, 1), "metrics": metrics_of(trainer.callback_metrics),
            "test": metrics_of(tested[0] if tested else {}), "checkpoint": ckpt.best_model_path,
            "node_ip": node_ip(), "gpu": gpu_info(cfg)})
    return 0

def main(argv=None):
    args = parse_args(argv)
    cfg = make_config(args)
    if args.mode != "plain" and args.storage_path.startswith("s3://") and not (
            os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")):
        print("warning: AWS_ENDPOINT_URL is not set here, so s3:// storage goes to AWS, not the lab's MinIO; "
              "the lab sets it in the Ray nodes' environment and in runtime.json", file=sys.stderr, flush=True)
    emit("start", mode=args.mode, run=cfg["run_name"], argv=sys.argv[1:], node_ip=node_ip(), cpu=cfg["cpu"])
    if args.mode == "plain":
        return run_plain(args, cfg)
    from ray_modes import attach_driver, run_ray, run_tune  # Ray only where it runs
    attach_driver(args, cfg)
    if args.mode == "ray":
        return run_ray(args, cfg)
    return run_tune(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
