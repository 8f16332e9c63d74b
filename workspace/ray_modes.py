"""train.py's Ray modes: Ray Train (--mode ray, fault tolerance) and Ray
Tune with ASHA (--mode tune). Ray imports this module on its workers by
name (the job's working_dir is on their path), so train_func and tune_func
run there with the same helpers as the driver."""

import os
import sys
import time

from food11_model import common_callbacks, make_loaders, make_module, trainer_limits
from lab_events import (accepts_kwarg, basename, checkpoint_dir_name, checkpoint_epoch, emit, gpu_info,
                        metrics_of, node_ip, resolve_reported, result, trial_end, tune_counts, write_meta)

# pyarrow's S3 client (Ray Train storage) needs a region even for MinIO.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")



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
