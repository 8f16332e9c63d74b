"""The GPU smoke run's two hardware questions (check.py restore / devices):

  restore: does the checkpoint train.py wrote load under this torch, and does
           Lightning's resume (trainer.fit(ckpt_path=...), the call train.py's
           Ray mode makes when Ray Train restarts its workers) load it?
           torch >= 2.6 defaults torch.load to weights_only=True, and a
           Lightning checkpoint holds more than tensors.
  devices: what a process that sees one GPU (CUDA_VISIBLE_DEVICES=<UUID>, as
           a worker container with one GPU does) sees as device 0.

The verdict and problem functions are pure and tested by test_check.py; the
rest needs torch and Lightning (and a GPU) and runs only on a real node.
"""

import os
import re
import sys

PREFIX = "gpu-smoke:"


def norm_uuid(u):
    """NVML says GPU-<uuid>, torch's device properties say <uuid>."""
    u = str(u or "").strip().lower()
    return u[4:] if u.startswith("gpu-") else u


def err_of(e):
    """'Class: first line of the message', short enough for one line."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    msg = msg if len(msg) <= 160 else msg[:157] + "..."
    return "%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__


def default_weights_only(torch_version, environ=None):
    """torch.load's weights_only when the caller passes none: True from
    torch 2.6, unless TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD (False wins) or
    TORCH_FORCE_WEIGHTS_ONLY_LOAD is set to a true value; None when the
    version cannot be read."""
    env = os.environ if environ is None else environ
    truthy = ("1", "y", "yes", "true")
    if env.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "").lower() in truthy:
        return False
    if env.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "").lower() in truthy:
        return True
    m = re.match(r"(\d+)\.(\d+)", str(torch_version or ""))
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2))) >= (2, 6)


def _outcome(err):
    """'OK' or 'FAILS (Class)' for an err_of string (or None for success)."""
    return "OK" if err is None else "FAILS (%s)" % err.split(":", 1)[0]


def restore_verdict(r):
    """(line, ok) for a restore report r: torch, lightning (versions),
    default / unsafe / resume (None when that load worked, else err_of's
    string), resume_epoch (the first epoch trained after the resume, or
    None), saved_epoch (the checkpoint's "epoch", or None). ok is whether
    the path train.py and Ray really use (Lightning's resume) worked."""
    wo = default_weights_only(r.get("torch"), r.get("environ", {}))
    wo_s = "" if wo is None else " (default weights_only=%s)" % wo
    parts = [
        "torch %s%s, lightning %s" % (r.get("torch"), wo_s, r.get("lightning")),
        "torch.load default %s" % _outcome(r.get("default")),
        "weights_only=False %s" % _outcome(r.get("unsafe")),
    ]
    resume = "Lightning's resume (trainer.fit ckpt_path=, as train.py's Ray mode) %s" % _outcome(r.get("resume"))
    if r.get("resume") is None and r.get("resume_epoch") is not None:
        resume += ", trained on from epoch %s" % r["resume_epoch"]
        if r.get("saved_epoch") is not None:
            resume += " (checkpoint holds epoch %s)" % r["saved_epoch"]
    parts.append(resume)
    return "%s weights_only: %s" % (PREFIX, "; ".join(parts)), r.get("resume") is None


def resume_notes(r):
    """Oddities of a resume that ran: training the checkpoint's epoch again
    means the loops' state was not restored (the fault exercise would then
    repeat an epoch)."""
    if r.get("resume") is not None or r.get("resume_epoch") is None or r.get("saved_epoch") is None:
        return []
    if r["resume_epoch"] <= r["saved_epoch"]:
        return ["Lightning's resume trained epoch %s again, but the checkpoint holds epoch %s: it did not restore "
                "the loops' state" % (r["resume_epoch"], r["saved_epoch"])]
    return []


def device_problems(d, want):
    """Problems with what one process saw (d: count, name, uuid (None when
    this torch has no uuid property), visible) when only GPU `want` (a
    UUID) was made visible to it."""
    out = []
    if d.get("error"):
        return ["torch could not use the visible GPU: %s" % d["error"]]
    if d.get("count") != 1:
        out.append("torch sees %s CUDA device(s) with only %s made visible, want 1" % (d.get("count"), want))
    if d.get("uuid") and norm_uuid(d["uuid"]) != norm_uuid(want):
        out.append("cuda:0 is GPU-%s, not the GPU made visible (%s)" % (norm_uuid(d["uuid"]), want))
    return out


def device_line(d, want, where):
    """One line the note can quote: what device 0 is to a process that was
    given only GPU `want` (in a container through --gpus, so its own
    CUDA_VISIBLE_DEVICES, d["visible"], may be unset)."""
    head = "%s devices (%s; CUDA_VISIBLE_DEVICES=%s; chosen %s)" % (PREFIX, where, d.get("visible") or "unset", want)
    if d.get("error"):
        return "%s: torch sees no usable GPU (%s)" % (head, d["error"])
    if d.get("uuid"):
        same = "the chosen GPU" if norm_uuid(d["uuid"]) == norm_uuid(want) else "NOT the chosen GPU"
        who = "uuid GPU-%s = %s" % (norm_uuid(d["uuid"]), same)
    else:
        who = "no uuid property in torch %s, so the UUID is unchecked" % d.get("torch")
    return "%s: torch.cuda.device_count()=%s; cuda:0 %s, %s" % (head, d.get("count"), d.get("name"), who)


# ------------------------------------------------ needs torch (real node) ----

def see_devices():
    """What this process's torch sees (device_problems' d)."""
    import torch
    d = {"torch": torch.__version__, "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        d["count"] = torch.cuda.device_count()
        if d["count"] < 1:
            d["error"] = "torch.cuda.device_count() is 0 (torch.version.cuda=%s)" % torch.version.cuda
            return d
        props = torch.cuda.get_device_properties(0)
        d["name"] = props.name
        u = getattr(props, "uuid", None)  # torch >= 2.1 or so
        d["uuid"] = str(u) if u is not None else None
    except Exception as e:  # a driver/runtime mismatch shows up here
        d["error"] = err_of(e)
    return d


def try_load(path, **kw):
    """(checkpoint, None) or (None, err_of string)."""
    import torch
    try:
        return torch.load(path, map_location="cpu", **kw), None
    except Exception as e:
        return None, err_of(e)


def resume(ckpt, workspace, data_dir, epochs):
    """Resume ckpt through train.py's own modules the way ray_modes.train_func
    does after a restart: same module, callbacks and limits as the run that
    wrote it (train.py --mode plain --quick --epochs EPOCHS --no-pretrained),
    max_epochs one more, trainer.fit(..., ckpt_path=ckpt). Returns
    (first epoch trained, None) or (None, err_of string)."""
    sys.path.insert(0, workspace)
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Callback

    import train  # workspace/train.py: its parse_args/make_config, not a copy

    base = ["--mode", "plain", "--quick", "--no-pretrained", "--data-dir", data_dir, "--run-name", "gpu-smoke"]
    wrote = train.make_config(train.parse_args(base + ["--epochs", str(epochs)]))
    cfg = train.make_config(train.parse_args(base + ["--epochs", str(epochs + 1)]))
    # Ray restarts with the run's own config; only max_epochs differs here.
    cfg["initial_epochs"] = wrote["initial_epochs"]
    started = []

    class FirstEpoch(Callback):
        def on_train_epoch_start(self, trainer, pl_module):
            if not started:
                started.append(trainer.current_epoch)

    torch.set_float32_matmul_precision("medium")
    train_loader, val_loader, _ = train.make_loaders(cfg)
    model = train.make_module(cfg)
    trainer = L.Trainer(max_epochs=cfg["total_epochs"], accelerator="gpu", devices="auto",
                        callbacks=train.common_callbacks(cfg) + [FirstEpoch()], enable_checkpointing=False,
                        enable_progress_bar=False, **train.trainer_limits(cfg))
    try:
        trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader, ckpt_path=ckpt)
    except Exception as e:
        return None, err_of(e)
    return (started[0] if started else None), None


def restore(ckpt, workspace, data_dir, epochs):
    """The restore report (restore_verdict's r)."""
    import lightning
    import torch
    r = {"torch": torch.__version__, "lightning": lightning.__version__,
         "environ": {k: v for k, v in os.environ.items() if k.startswith("TORCH_FORCE_")}}
    _, r["default"] = try_load(ckpt)
    loaded, r["unsafe"] = try_load(ckpt, weights_only=False)
    r["saved_epoch"] = loaded.get("epoch") if isinstance(loaded, dict) else None
    if loaded is not None:
        print("  checkpoint %s: epoch %s, keys %s" % (ckpt, r["saved_epoch"], ", ".join(sorted(loaded))),
              file=sys.stderr)
    r["resume_epoch"], r["resume"] = resume(ckpt, workspace, data_dir, epochs)
    return r
