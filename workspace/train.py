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

The script prints machine-readable lines that `mltrain lab` reads from the job
logs:  MLTRAIN_EVENT {json}  (a worker started, resumed from a checkpoint, an
epoch ended) and one  MLTRAIN_RESULT {json}  at the end.
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
            weights = None if config["fake_data"] else MobileNet_V2_Weights.DEFAULT
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


def common_callbacks(cfg):
    from lightning.pytorch.callbacks import BackboneFinetuning, Callback, EarlyStopping

    class EpochEvents(Callback):
        """One event line per finished epoch, from rank 0 only."""

        def on_validation_epoch_end(self, trainer, pl_module):
            if trainer.sanity_checking or trainer.global_rank != 0:
                return
            m = {k: float(v) for k, v in trainer.callback_metrics.items() if hasattr(v, "item") or
                 isinstance(v, (int, float))}
            emit("epoch", epoch=trainer.current_epoch, run=cfg["run_name"], metrics=m)

    return [
        EarlyStopping(monitor="val_loss", patience=cfg["patience"], mode="min"),
        BackboneFinetuning(unfreeze_backbone_at_epoch=cfg["initial_epochs"],
                           backbone_initial_lr=cfg["fine_tune_lr"], should_align=True),
        EpochEvents(),
    ]


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

def train_func(config):
    """Runs on every Ray Train worker (the course's train_func)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import lightning as L
    import ray
    import ray.train
    import torch
    from ray.train.lightning import (RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback,
                                     prepare_trainer)

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
        callbacks=common_callbacks(config) + [RayTrainReportCallback()],
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
        emit("resume", mode="ray", rank=rank, checkpoint=checkpoint.path, node_ip=node_ip(),
             node_id=ray.get_runtime_context().get_node_id(), run=config["run_name"])
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader,
                    ckpt_path=os.path.join(ckpt_dir, name))


def run_ray(args, cfg):
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    resources = {"CPU": args.cpus_per_worker}
    if args.gpu_fraction > 0:
        resources["GPU"] = args.gpu_fraction
    scaling = ScalingConfig(num_workers=args.workers, use_gpu=args.gpu_fraction > 0,
                            resources_per_worker=resources)
    run_config = RunConfig(name=cfg["run_name"], storage_path=args.storage_path,
                           failure_config=FailureConfig(max_failures=args.max_failures),
                           checkpoint_config=CheckpointConfig())
    trainer = TorchTrainer(
        train_func,
        train_loop_config=cfg,
        scaling_config=scaling,
        run_config=run_config,
        # No CUDA in the CPU rehearsal: NCCL would fail, gloo works anywhere.
        torch_config=TorchConfig(backend="gloo") if cfg["cpu"] else None,
    )
    summary = {"mode": "ray", "run": cfg["run_name"], "workers": args.workers, "resources_per_worker": resources,
               "max_failures": args.max_failures, "storage_path": args.storage_path}
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
        callbacks=common_callbacks(config) + [report],
        enable_checkpointing=False,
        enable_progress_bar=False,
        **trainer_limits(config))
    checkpoint = ray.tune.get_checkpoint()
    if checkpoint is None:
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
        return
    with checkpoint.as_directory() as ckpt_dir:
        emit("resume", mode="tune", checkpoint=checkpoint.path, node_ip=node_ip(), run=config["run_name"])
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader,
                    ckpt_path=os.path.join(ckpt_dir, "checkpoint"))


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
        run_config=tune.RunConfig(name=cfg["run_name"], storage_path=args.storage_path),
    )
    started = time.time()
    summary = {"mode": "tune", "run": cfg["run_name"], "num_samples": args.num_samples, "max_t": epochs,
               "resources_per_trial": resources, "storage_path": args.storage_path}
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
        trials.append({
            "trial_id": m.get("trial_id"),
            "batch_size": conf.get("batch_size"),
            "dropout_probability": conf.get("dropout_probability"),
            "iterations": int(m.get("training_iteration") or 0),
            "val_accuracy": m.get("val_accuracy"),
            "val_loss": m.get("val_loss"),
            "error": str(r.error) if r.error else None,
        })
    errored = [t for t in trials if t["error"]]
    finished = [t for t in trials if not t["error"] and t["iterations"] >= epochs]
    # Trials ended before max_t without an error: ASHA stopped them (or,
    # rarely, EarlyStopping on val_loss did).
    early = [t for t in trials if not t["error"] and t["iterations"] < epochs]
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
    summary.update({"ok": not errored and bool(trials), "fit_seconds": round(time.time() - started, 1),
                    "trials": trials, "stopped_early": len(early), "completed": len(finished),
                    "errored": len(errored), "best": best})
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
    if args.mode == "ray":
        return run_ray(args, cfg)
    return run_tune(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
