"""Food-11 data and the course's MobileNetV2 Lightning module, as every
mode of train.py trains it (the driver, Ray Train workers, Tune trials).
torch, torchvision and Lightning are imported inside the functions: a Ray
driver that only schedules need not load them."""

import os

from lab_events import emit, node_ip

NUM_CLASSES = 11


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
