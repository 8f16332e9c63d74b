"""The lab's side of train.py's log contract (see train.py's docstring for
the events), checkpoint names and how a Tune trial ended.

Plain functions: nothing here imports Ray, Lightning or torch at import
time, so test_train.py checks them with the standard library alone, and a
Ray driver loads them before it connects.
"""

import json
import os
import socket
import time

EVENT = "MLTRAIN_EVENT"
RESULT = "MLTRAIN_RESULT"
# Written beside the Lightning checkpoint so a resumed worker can say which
# epoch it got without loading the model.
META_FILE = "mltrain.json"
CHECKPOINT_PREFIX = "checkpoint_epoch_"


def emit(kind, **fields):
    """Print one event line for `mltrain lab` (and humans) to read."""
    rec = {"event": kind, "time": time.time()}
    rec.update(fields)
    print(EVENT + " " + json.dumps(rec, default=str), flush=True)


def result(summary):
    print(RESULT + " " + json.dumps(summary, default=str), flush=True)

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

def metrics_of(d):
    out = {}
    for k, v in (d or {}).items():
        try:
            out[k] = float(v)
        except (TypeError, ValueError):
            out[k] = v if isinstance(v, (str, bool)) or v is None else str(v)
    return out

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
