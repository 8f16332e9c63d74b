"""Food-11 MobileNetV2 fine-tuning for the mltrain lab.

One script replaces the course's git branches; flags pick the exercise:

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
import socket
import sys
import time

# Ray folds log lines that differ only in numbers ("[repeated 2x across
# cluster]"); the per-worker event lines must all reach the job log.
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# pyarrow's S3 client (Ray Train storage) needs a region even for MinIO.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

EVENT = "MLTRAIN_EVENT"
RESULT = "MLTRAIN_RESULT"
NUM_CLASSES = 11
# Checkpoints kept in storage per run (ray) or per trial (tune): bounded so
# MinIO does not grow by epochs x trials x ~30 MB every run. Ray never
# deletes the newest, which is the one fault tolerance resumes from.
DEFAULT_KEEP = {"ray": 2, "tune": 1}
# Written beside the Lightning checkpoint so a resumed worker can say which
# epoch it got without loading the model.
META_FILE = "mltrain.json"
CHECKPOINT_PREFIX = "checkpoint_epoch_"

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


def emit(kind, **fields):
    """Print one event line for `mltrain lab` (and humans) to read."""
    rec = {"event": kind, "time": time.time()}
    rec.update(fields)
    print(EVENT + " " + json.dumps(rec, default=str), flush=True)


def result(summary):
    print(RESULT + " " + json.dumps(summary, default=str), flush=True)


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
        args.run_name = "food11-%s-%s" % (args.mode, time.strftime("%Y%m%d-%H%M%S"))
    return args


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


def node_ip():
    try:
        import ray.util
        return ray.util.get_node_ip_address()
    except Exception:  # not inside Ray, or an older Ray
        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return ""


def gpu_info(cfg):
    """What this process computes on, for the event log."""
    info = {"accelerator": "cpu" if cfg["cpu"] else "gpu",
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES") or
            os.environ.get("ROCR_VISIBLE_DEVICES"),
            "host": socket.gethostname()}
    try:
        import ray
        info["ray_gpu_ids"] = [str(g) for g in ray.get_gpu_ids()]
    except Exception:
        pass
    try:
        import torch
        if not cfg["cpu"] and torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            info["name"] = props.name
            uuid = getattr(props, "uuid", None)
            if uuid is not None:
                info["uuid"] = str(uuid)
    except Exception:
        pass
    return info


def check_data(cfg):
    if cfg["fake_data"]:
        return
    missing = [s for s in ("training", "validation", "evaluation")
               if not os.path.isdir(os.path.join(cfg["data_dir"], s))]
    if missing:
        raise RuntimeError(
            "Food-11 not found at %s (missing %s) on node %s: load the dataset with 'mltrain data food11', "
            "or pass --fake-data for a rehearsal without it" % (cfg["data_dir"], ", ".join(missing), node_ip()))


def make_loaders(cfg):
    """Train/val/test DataLoaders as the course builds them."""
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    check_data(cfg)
    norm = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_tf = transforms.Compose([
        transforms.Resize(224),
        transforms.CenterCrop(224),
        transforms.RandomHorizontalFlip(p=cfg["random_horizontal_flip"]),
        transforms.RandomRotation(cfg["random_rotation"]),
        transforms.ColorJitter(brightness=cfg["color_jitter_brightness"], contrast=cfg["color_jitter_contrast"],
                               saturation=cfg["color_jitter_saturation"], hue=cfg["color_jitter_hue"]),
        transforms.ToTensor(),
        norm,
    ])
    eval_tf = transforms.Compose([transforms.Resize(224), transforms.CenterCrop(224), transforms.ToTensor(), norm])
    if cfg["fake_data"]:
        n = 128 if cfg["quick"] else 1024
        train = datasets.FakeData(size=n, image_size=(3, 224, 224), num_classes=NUM_CLASSES, transform=train_tf)
        val = datasets.FakeData(size=n // 4, image_size=(3, 224, 224), num_classes=NUM_CLASSES, transform=eval_tf,
                                random_offset=n)
        test = datasets.FakeData(size=n // 4, image_size=(3, 224, 224), num_classes=NUM_CLASSES, transform=eval_tf,
                                 random_offset=2 * n)
    else:
        root = cfg["data_dir"]
        train = datasets.ImageFolder(os.path.join(root, "training"), transform=train_tf)
        val = datasets.ImageFolder(os.path.join(root, "validation"), transform=eval_tf)
        test = datasets.ImageFolder(os.path.join(root, "evaluation"), transform=eval_tf)
    nw = cfg["data_workers"]
    bs = int(cfg["batch_size"])
    return (DataLoader(train, batch_size=bs, shuffle=True, num_workers=nw),
            DataLoader(val, batch_size=bs, shuffle=False, num_workers=nw),
            DataLoader(test, batch_size=bs, shuffle=False))


def make_module(cfg):
    """The course's LightningFood11Model (defined here so the driver of the
    ray/tune modes does not need Lightning imported to start)."""
    import lightning as L
    import torch
    from torch import nn
    from torchvision.models import MobileNet_V2_Weights, mobilenet_v2

    class LightningFood11Model(L.LightningModule):
        def __init__(self, config):
            super().__init__()
            self.config = dict(config)
            pretrained = config.get("pretrained", not config["fake_data"])
            weights = MobileNet_V2_Weights.DEFAULT if pretrained else None
            model = mobilenet_v2(weights=weights)
            model.classifier = nn.Sequential(
                nn.Dropout(config["dropout_probability"]),
                nn.Linear(model.last_channel, NUM_CLASSES),
            )
            self.model = model
            self.criterion = nn.CrossEntropyLoss()

        @property
        def backbone(self):
            # BackboneFinetuning freezes, then gradually unfreezes, this part.
            return self.model.features

        def forward(self, x):
            return self.model(x)

        def _step(self, batch, stage):
            images, labels = batch
            outputs = self(images)
            loss = self.criterion(outputs, labels)
            acc = (outputs.argmax(dim=1) == labels).float().mean()
            self.log(stage + "_loss", loss, on_step=False, on_epoch=True, prog_bar=True, sync_dist=True)
            self.log(stage + "_accuracy", acc, on_step=False, on_epoch=True, prog_bar=True, sync_dist=True)
            return loss

        def training_step(self, batch, batch_idx):
            return self._step(batch, "train")

        def validation_step(self, batch, batch_idx):
            self._step(batch, "val")

        def test_step(self, batch, batch_idx):
            self._step(batch, "test")

        def configure_optimizers(self):
            # The head only: BackboneFinetuning adds the backbone later.
            return torch.optim.Adam(self.model.classifier.parameters(), lr=self.config["lr"])

    return LightningFood11Model(cfg)


def common_callbacks(cfg, early_stopping=True):
    """The course's callbacks plus the epoch events. early_stopping=False in
    tune mode: ASHA is the early stopper there, and a trial that
    EarlyStopping ended would look like one ASHA stopped."""
    from lightning.pytorch.callbacks import BackboneFinetuning, Callback, EarlyStopping

    class EpochEvents(Callback):
        """One event line per finished epoch, from rank 0 only."""

        def on_validation_epoch_end(self, trainer, pl_module):
            if trainer.sanity_checking or trainer.global_rank != 0:
                return
            m = {k: float(v) for k, v in trainer.callback_metrics.items() if hasattr(v, "item") or
                 isinstance(v, (int, float))}
            emit("epoch", epoch=trainer.current_epoch, run=cfg["run_name"], metrics=m)

    callbacks = [
        BackboneFinetuning(unfreeze_backbone_at_epoch=cfg["initial_epochs"],
                           backbone_initial_lr=cfg["fine_tune_lr"], should_align=True),
        EpochEvents(),
    ]
    if early_stopping:
        callbacks.insert(0, EarlyStopping(monitor="val_loss", patience=cfg["patience"], mode="min"))
    return callbacks


def trainer_limits(cfg):
    if not cfg["quick"]:
        return {}
    return {"limit_train_batches": 4, "limit_val_batches": 2, "limit_test_batches": 2, "num_sanity_val_steps": 0}


def metrics_of(d):
    out = {}
    for k, v in (d or {}).items():
        try:
            out[k] = float(v)
        except (TypeError, ValueError):
            out[k] = v if isinstance(v, (str, bool)) or v is None else str(v)
    return out


# ------------------------------------------ checkpoints and trial ends ----
# Plain functions (no Ray, Lightning or torch at import) so test_train.py can
# check them with the standard library alone.

def checkpoint_dir_name(epoch):
    """The storage folder of the checkpoint taken after `epoch`: names sort
    in epoch order and say which epoch they hold."""
    return "%s%06d" % (CHECKPOINT_PREFIX, int(epoch))


def epoch_from_name(name):
    """The epoch in a checkpoint_dir_name(), or None for any other name."""
    base = (name or "").rstrip("/").rsplit("/", 1)[-1]
    if not base.startswith(CHECKPOINT_PREFIX):
        return None
    digits = base[len(CHECKPOINT_PREFIX):]
    return int(digits) if digits.isdigit() else None


def basename(path):
    return (path or "").rstrip("/").rsplit("/", 1)[-1] or None


def write_meta(ckpt_dir, **fields):
    with open(os.path.join(ckpt_dir, META_FILE), "w") as f:
        json.dump(fields, f)


def meta_epoch(ckpt_dir):
    """The epoch recorded by write_meta, or None when there is no readable record."""
    try:
        with open(os.path.join(ckpt_dir, META_FILE)) as f:
            e = json.load(f).get("epoch")
        return int(e) if e is not None else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def checkpoint_epoch(ckpt_dir, name, lightning_file):
    """The last finished epoch a restored checkpoint holds: our record beside
    it, else its folder name, else Lightning's own "epoch" key."""
    for e in (meta_epoch(ckpt_dir), epoch_from_name(name)):
        if e is not None:
            return e
    try:
        import torch
        ckpt = torch.load(os.path.join(ckpt_dir, lightning_file), map_location="cpu", weights_only=False)
        return int(ckpt["epoch"])
    except Exception:
        return None


def accepts_kwarg(fn, name):
    """Whether fn takes keyword `name`; False when that cannot be told, so a
    caller only passes optional arguments it knows are there."""
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def resolve_reported(name, registered_paths, latest_path):
    """Which checkpoint a report produced, and whether Ray Train's controller
    has registered it. name: the folder we asked for (None when Ray chose);
    registered_paths: the paths ray.train.get_all_reported_checkpoints()
    returned (None when that API is missing); latest_path: the worker's
    ray.train.get_checkpoint() after the report."""
    registered = list(registered_paths or [])
    if name:
        for p in reversed(registered):
            if basename(p) == name:
                return p, True
        if latest_path and basename(latest_path) == name:
            return latest_path, False
        return None, False
    return latest_path, bool(latest_path) and latest_path in registered


# How a Tune trial ended, from Tune's own record (Ray 2.5x source,
# ray/tune/execution/tune_controller.py, _process_trial_result):
#  - When the scheduler (ASHA) decides STOP on a result, Tune sets
#    done=True on that result *before* handing it to callbacks and loggers
#    and storing it as the trial's last result.
#  - When a function trainable returns on its own, Tune receives a
#    RESULT_DUPLICATE marker, sets done=True on the stored last result in
#    place, and passes nothing more to callbacks.
# So Result.metrics["done"] is True either way and cannot tell the two
# apart; the stream callbacks receive can: its last result has done=True
# only when Tune stopped the trial. training_iteration counts reports (one
# per validation epoch here), which is ASHA's time attribute.
TRIAL_ENDS = ("max_t", "scheduler", "script", "error")


def trial_end(error, iterations, max_t, last_logged_done):
    """error (truthy when Tune recorded one), iterations (training_iteration),
    max_t (ASHA's), last_logged_done (done flag of the last result Tune passed
    to callbacks or wrote to progress.csv; None when neither is known)."""
    if error:
        return "error"
    if iterations >= max_t:
        return "max_t"
    if last_logged_done is None:
        # No result reached us: none was ever reported (the trainable
        # returned at once), or Tune ran elsewhere (Ray Client). In the
        # latter case the trainable here only returns on its own at max_t,
        # so a shorter trial was stopped; "end_from" says it was inferred.
        return "script" if iterations == 0 else "scheduler"
    return "scheduler" if last_logged_done else "script"


def tune_counts(trials):
    """The summary counts for trials carrying "end"."""
    n = {e: sum(1 for t in trials if t.get("end") == e) for e in TRIAL_ENDS}
    return {"completed": n["max_t"], "stopped_by_scheduler": n["scheduler"], "ended_by_script": n["script"],
            "errored": n["error"],
            # The older summary's name; readers written against it keep working.
            "stopped_early": n["scheduler"]}


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


# ------------------------------------------------------------ Ray Train ----

def report_callback(config):
    """Ray's RayTrainReportCallback, with checkpoints named by epoch and a
    "checkpoint" event from rank 0 once Ray Train holds the checkpoint. The
    lab's fault exercise stops a worker on that event: an object in MinIO
    alone can be an upload still in progress or a report not yet registered,
    and Ray would then resume from an older checkpoint (or none)."""
    import shutil
    import tempfile

    import ray.train
    from ray.train import Checkpoint
    from ray.train.lightning import RayTrainReportCallback

    # Ray >= 2.44 (Train V1 and V2) names the folder on request; an older
    # Ray picks its own name, which the event then reports.
    named = accepts_kwarg(ray.train.report, "checkpoint_dir_name")

    class ReportAndAnnounce(RayTrainReportCallback):
        def on_train_epoch_end(self, trainer, pl_module):
            # Ray's callback (ray/train/lightning/_lightning_utils.py, 2.54)
            # does the same at this hook: metrics + a Lightning checkpoint,
            # report, barrier. Only rank 0 writes the checkpoint file
            # (Trainer.save_checkpoint), so only rank 0 reports one; Ray
            # registers a checkpoint when any rank reports one.
            epoch = trainer.current_epoch
            name = checkpoint_dir_name(epoch) if named else None
            rank0 = trainer.global_rank == 0
            tmpdir = tempfile.mkdtemp(prefix="mltrain-ckpt-")
            try:
                metrics = {k: v.item() for k, v in trainer.callback_metrics.items()}
                metrics["epoch"] = epoch
                metrics["step"] = trainer.global_step
                trainer.save_checkpoint(os.path.join(tmpdir, self.CHECKPOINT_NAME), weights_only=False)
                checkpoint = None
                if rank0:
                    write_meta(tmpdir, epoch=epoch, run=config["run_name"], global_step=trainer.global_step)
                    checkpoint = Checkpoint.from_directory(tmpdir)
                kwargs = {"checkpoint_dir_name": name} if named else {}
                ray.train.report(metrics, checkpoint=checkpoint, **kwargs)
                if rank0:
                    announce_checkpoint(config, epoch, name)
                trainer.strategy.barrier()
            finally:
                shutil.rmtree(tmpdir, ignore_errors=True)

    return ReportAndAnnounce()


def announce_checkpoint(config, epoch, name):
    """Rank 0, after ray.train.report returned: wait until Ray Train's
    controller has processed the report (get_all_reported_checkpoints blocks
    until every in-flight report is registered) and print the event."""
    import ray.train

    paths = None
    get_all = getattr(ray.train, "get_all_reported_checkpoints", None)  # Train V2
    if get_all is not None:
        try:
            paths = [rc.checkpoint.path for rc in get_all() if rc.checkpoint is not None]
        except Exception as e:  # never fail training over an event line
            print("warning: could not confirm the checkpoint with Ray Train: %s" % e, file=sys.stderr, flush=True)
    latest = ray.train.get_checkpoint()
    path, registered = resolve_reported(name, paths, latest.path if latest is not None else None)
    emit("checkpoint", mode="ray", run=config["run_name"], rank=0, epoch=epoch, checkpoint=path,
         name=basename(path) or name, node_ip=node_ip(), registered=registered)


def train_func(config):
    """Runs on every Ray Train worker (the course's train_func)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import lightning as L
    import ray
    import ray.train
    import torch
    from ray.train.lightning import RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback, prepare_trainer

    torch.set_float32_matmul_precision("medium")
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    emit("worker", mode="ray", rank=rank, world_size=ctx.get_world_size(), node_ip=node_ip(),
         node_id=ray.get_runtime_context().get_node_id(), gpu=gpu_info(config), run=config["run_name"])

    train_loader, val_loader, _ = make_loaders(config)
    model = make_module(config)
    trainer = L.Trainer(
        max_epochs=config["total_epochs"],
        devices="auto",
        accelerator="cpu" if config["cpu"] else "auto",
        strategy=RayDDPStrategy(),
        plugins=[RayLightningEnvironment()],
        callbacks=common_callbacks(config) + [report_callback(config)],
        enable_checkpointing=False,
        enable_progress_bar=False,
        **trainer_limits(config))
    trainer = prepare_trainer(trainer)

    # Fault tolerance: after a failure Ray restarts the workers and hands
    # them the latest reported checkpoint.
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is None:
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
        return
    name = getattr(RayTrainReportCallback, "CHECKPOINT_NAME", "checkpoint.ckpt")
    with checkpoint.as_directory() as ckpt_dir:
        emit("resume", mode="ray", rank=rank, checkpoint=checkpoint.path, name=basename(checkpoint.path),
             epoch=checkpoint_epoch(ckpt_dir, checkpoint.path, name), node_ip=node_ip(),
             node_id=ray.get_runtime_context().get_node_id(), run=config["run_name"])
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader,
                    ckpt_path=os.path.join(ckpt_dir, name))


def attach_driver(args, cfg):
    """Connects this driver (Train and Tune would on their own) and says to
    which node's raylet Ray attached it."""
    import ray
    ray.init()  # the job's cluster and runtime env (RAY_ADDRESS, the job config)
    emit("driver", mode=args.mode, run=cfg["run_name"], node_id=ray.get_runtime_context().get_node_id(),
         node_ip=node_ip())


def run_ray(args, cfg):
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    resources = {"CPU": args.cpus_per_worker}
    if args.gpu_fraction > 0:
        resources["GPU"] = args.gpu_fraction
    scaling = ScalingConfig(num_workers=args.workers, use_gpu=args.gpu_fraction > 0,
                            resources_per_worker=resources)
    # Ray deletes all but the newest N after each registration, never the
    # newest itself: the one a restarted worker gets.
    run_config = RunConfig(name=cfg["run_name"], storage_path=args.storage_path,
                           failure_config=FailureConfig(max_failures=args.max_failures),
                           checkpoint_config=CheckpointConfig(num_to_keep=args.keep_checkpoints or None))
    trainer = TorchTrainer(
        train_func,
        train_loop_config=cfg,
        scaling_config=scaling,
        run_config=run_config,
        # No CUDA in the CPU rehearsal: NCCL would fail, gloo works anywhere.
        torch_config=TorchConfig(backend="gloo") if cfg["cpu"] else None,
    )
    summary = {"mode": "ray", "run": cfg["run_name"], "workers": args.workers, "resources_per_worker": resources,
               "max_failures": args.max_failures, "storage_path": args.storage_path,
               "keep_checkpoints": args.keep_checkpoints}
    started = time.time()
    try:
        res = trainer.fit()
    except Exception as e:  # Train V2 raises when training fails for good
        summary.update({"ok": False, "error": "%s: %s" % (type(e).__name__, e),
                        "fit_seconds": round(time.time() - started, 1)})
        result(summary)
        return 1
    err = getattr(res, "error", None)
    summary.update({
        "ok": err is None,
        "error": str(err) if err else None,
        "fit_seconds": round(time.time() - started, 1),
        "metrics": metrics_of(res.metrics),
        "checkpoint": res.checkpoint.path if res.checkpoint else None,
        "path": getattr(res, "path", None),
    })
    result(summary)
    return 0 if err is None else 1


# -------------------------------------------------------------- Ray Tune ----

def tune_func(config):
    """One Tune trial: the course's current `tune` (a function trainable that
    trains with Lightning on its GPU fraction; no Trainer inside a Tuner)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import lightning as L
    import ray
    import ray.tune
    import torch
    from ray.tune.integration.pytorch_lightning import TuneReportCheckpointCallback

    torch.set_float32_matmul_precision("medium")
    emit("worker", mode="tune", rank=0, world_size=1, node_ip=node_ip(),
         node_id=ray.get_runtime_context().get_node_id(), gpu=gpu_info(config), run=config["run_name"],
         batch_size=config["batch_size"], dropout_probability=config["dropout_probability"])
    train_loader, val_loader, _ = make_loaders(config)
    model = make_module(config)
    report = TuneReportCheckpointCallback(
        metrics={"val_accuracy": "val_accuracy", "val_loss": "val_loss"},
        filename="checkpoint", on="validation_end")
    trainer = L.Trainer(
        max_epochs=config["total_epochs"],
        devices=1,
        accelerator="cpu" if config["cpu"] else "auto",
        callbacks=common_callbacks(config, early_stopping=False) + [report],
        enable_checkpointing=False,
        enable_progress_bar=False,
        **trainer_limits(config))
    checkpoint = ray.tune.get_checkpoint()
    if checkpoint is None:
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
        return
    with checkpoint.as_directory() as ckpt_dir:
        emit("resume", mode="tune", checkpoint=checkpoint.path, name=basename(checkpoint.path),
             epoch=checkpoint_epoch(ckpt_dir, checkpoint.path, "checkpoint"), node_ip=node_ip(),
             run=config["run_name"])
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader,
                    ckpt_path=os.path.join(ckpt_dir, "checkpoint"))


# trial_id -> the done flag of the last result Tune handed to callbacks.
# Module-level so it survives Tune copying the callback object.
_LAST_DONE = {}


def done_recorder():
    """A Tune callback keeping, per trial, whether the last result Tune
    logged was marked done (see trial_end for why that tells ASHA's stop
    from the trainable's own return)."""
    from ray import tune

    class LastDone(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            record_done(trial.trial_id, result)

    return LastDone()


def record_done(trial_id, result):
    _LAST_DONE[trial_id] = bool(result.get("done"))


def progress_done(res):
    """The done flag of the last row of a trial's progress.csv (Tune's
    logger callbacks write what callbacks receive), or None."""
    try:
        df = res.metrics_dataframe
        if df is None or "done" not in df.columns or len(df) == 0:
            return None
        return bool(df["done"].iloc[-1])
    except Exception:
        return None


def run_tune(args, cfg):
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    space = dict(cfg)
    space["batch_size"] = tune.choice([32, 64])
    space["dropout_probability"] = tune.uniform(0.1, 0.8)
    resources = {"CPU": args.cpus_per_worker}
    if args.gpu_fraction > 0:
        resources["GPU"] = args.gpu_fraction
    epochs = cfg["total_epochs"]
    tuner = tune.Tuner(
        tune.with_resources(tune_func, resources),
        param_space=space,
        tune_config=tune.TuneConfig(
            metric="val_accuracy", mode="max", num_samples=args.num_samples,
            max_concurrent_trials=args.max_concurrent_trials,
            scheduler=ASHAScheduler(max_t=epochs, grace_period=1, reduction_factor=2)),
        run_config=tune.RunConfig(
            name=cfg["run_name"], storage_path=args.storage_path, callbacks=[done_recorder()],
            # Per trial: the best N by val_accuracy, plus the newest, which
            # Tune never deletes (trial restore uses it).
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=args.keep_checkpoints or None, checkpoint_score_attribute="val_accuracy",
                checkpoint_score_order="max")),
    )
    started = time.time()
    summary = {"mode": "tune", "run": cfg["run_name"], "num_samples": args.num_samples, "max_t": epochs,
               "resources_per_trial": resources, "storage_path": args.storage_path,
               "keep_checkpoints": args.keep_checkpoints}
    try:
        results = tuner.fit()
    except Exception as e:
        summary.update({"ok": False, "error": "%s: %s" % (type(e).__name__, e),
                        "fit_seconds": round(time.time() - started, 1)})
        result(summary)
        return 1
    trials = []
    for r in results:
        m = r.metrics or {}
        conf = r.config or {}
        iterations = int(m.get("training_iteration") or 0)
        done, end_from = _LAST_DONE.get(m.get("trial_id")), "callback"
        if done is None:
            done, end_from = progress_done(r), "progress_csv"
        if done is None:
            end_from = "inferred"
        trials.append({
            "trial_id": m.get("trial_id"),
            "batch_size": conf.get("batch_size"),
            "dropout_probability": conf.get("dropout_probability"),
            "iterations": iterations,
            "val_accuracy": m.get("val_accuracy"),
            "val_loss": m.get("val_loss"),
            "error": str(r.error) if r.error else None,
            "end": trial_end(r.error, iterations, epochs, done),
            "end_from": end_from,
        })
    counts = tune_counts(trials)
    best = None
    try:
        b = results.get_best_result(metric="val_accuracy", mode="max")
        best = {"batch_size": b.config.get("batch_size"),
                "dropout_probability": b.config.get("dropout_probability"),
                "val_accuracy": (b.metrics or {}).get("val_accuracy"),
                "iterations": (b.metrics or {}).get("training_iteration"),
                "checkpoint": b.checkpoint.path if b.checkpoint else None}
    except Exception as e:  # every trial failed
        summary["best_error"] = str(e)
    summary.update(counts)
    summary.update({"ok": counts["errored"] == 0 and bool(trials), "fit_seconds": round(time.time() - started, 1),
                    "trials": trials, "best": best})
    result(summary)
    return 0 if summary["ok"] else 1


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
    attach_driver(args, cfg)
    if args.mode == "ray":
        return run_ray(args, cfg)
    return run_tune(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
